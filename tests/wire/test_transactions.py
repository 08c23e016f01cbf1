"""The transaction coordinator on the wire: InitProducerId with a transactional id,
AddPartitionsToTxn (v3 and the v5 batched/verify-only form), AddOffsetsToTxn, EndTxn,
DescribeTransactions, ListTransactions, FindCoordinator key type 1, and the state
surviving a SIGKILL (replayed from `__transaction_state`)."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from running(tmp_path_factory.mktemp("txn") / "data")


def init(tid: str, *, timeout_ms: int = 60_000, version: int = 4) -> Any:
    request = request_schema(22, version).make(
        "InitProducerIdRequest",
        transactional_id=tid,
        transaction_timeout=datetime.timedelta(milliseconds=timeout_ms),
        producer_id=-1,
        producer_epoch=-1,
    )
    return request


def add_v3(tid: str, pid: int, epoch: int, topic: str, *partitions: int) -> Any:
    schema = request_schema(24, 3)
    return schema.make(
        "AddPartitionsToTxnRequest",
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(
            schema.make("AddPartitionsToTxnTopic", name=topic, partitions=partitions),
        ),
    )


def end_txn(tid: str, pid: int, epoch: int, *, commit: bool) -> Any:
    return request_schema(26, 3).make(
        "EndTxnRequest",
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )


def errors_v3(response: Any) -> dict[tuple[str, int], ErrorCode]:
    return {
        (t.name, r.partition_index): r.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for r in t.results_by_partition
    }


def describe(bootstrap: str, *tids: str) -> Any:
    request = request_schema(65, 0).make("DescribeTransactionsRequest", transactional_ids=tids)
    return call1(bootstrap, request).transaction_states


def list_txns(
    bootstrap: str,
    *,
    states: tuple[str, ...] = (),
    pattern: str | None = None,
    duration_ms: int = -1,
) -> Any:
    request = request_schema(66, 2).make(
        "ListTransactionsRequest",
        state_filters=states,
        producer_id_filters=(),
        duration_filter=duration_ms,
        transactional_id_pattern=pattern,
    )
    return call1(bootstrap, request)


def test_fencing_timeout_bound_and_describe(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = topic_name("txn")
    create_topic(bootstrap, topic, partitions=2)
    bad = call1(bootstrap, init("t1", timeout_ms=900_001))
    assert bad.error_code == ErrorCode.invalid_transaction_timeout
    first = call1(bootstrap, init("t1"))
    assert (first.error_code, first.producer_epoch) == (ErrorCode.none, 0)
    pid = first.producer_id
    added = errors_v3(call1(bootstrap, add_v3("t1", pid, 0, topic, 0, 1)))
    assert added == {(topic, 0): ErrorCode.none, (topic, 1): ErrorCode.none}
    unknown = errors_v3(call1(bootstrap, add_v3("t1", pid, 0, "no-such-topic", 0)))
    assert unknown == {("no-such-topic", 0): ErrorCode.unknown_topic_or_partition}
    (state,) = describe(bootstrap, "t1")
    assert (state.error_code, state.transaction_state) == (ErrorCode.none, "Ongoing")
    assert state.producer_id == pid and state.transaction_timeout.total_seconds() == 60
    assert [(t.topic, t.partitions) for t in state.topics] == [(topic, (0, 1))]
    (missing,) = describe(bootstrap, "nope")
    assert missing.error_code == ErrorCode.transactional_id_not_found
    listed = list_txns(bootstrap, states=("Ongoing", "Bogus"))
    assert listed.unknown_state_filters == ("Bogus",)
    assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [
        ("t1", "Ongoing")
    ]
    assert list_txns(bootstrap, pattern="t[0-9]+").transaction_states[0].transactional_id == "t1"
    assert list_txns(bootstrap, pattern="x.*").transaction_states == ()


def test_duration_filter_keeps_every_state(txn_broker: BrokerProcess) -> None:
    """DurationFilter keeps the transactions whose last start is older than it, in any
    state (Kafka's listTransactionStates, as the reference broker answers): a completed
    one by its start time, an Empty one (never begun: start -1) under every filter."""
    bootstrap = txn_broker.bootstrap
    topic = topic_name("duration")
    create_topic(bootstrap, topic)
    empty, done = topic_name("dur-empty"), topic_name("dur-done")
    assert call1(bootstrap, init(empty)).error_code == ErrorCode.none
    pid = call1(bootstrap, init(done)).producer_id
    call1(bootstrap, add_v3(done, pid, 0, topic, 0))
    ended = call1(bootstrap, end_txn(done, pid, 0, commit=True))
    assert ended.error_code == ErrorCode.none
    time.sleep(0.2)

    def listed(duration_ms: int) -> dict[str, str]:
        states = list_txns(bootstrap, pattern="dur-.*", duration_ms=duration_ms).transaction_states
        return {s.transactional_id: s.transaction_state for s in states}

    assert listed(-1) == {empty: "Empty", done: "CompleteCommit"}
    assert listed(0) == {empty: "Empty", done: "CompleteCommit"}
    assert listed(100) == {empty: "Empty", done: "CompleteCommit"}
    assert listed(3_600_000) == {empty: "Empty"}


def test_verify_only_batched_form(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = topic_name("verify")
    create_topic(bootstrap, topic, partitions=2)
    pid = call1(bootstrap, init("v1")).producer_id
    call1(bootstrap, add_v3("v1", pid, 0, topic, 0))
    schema = request_schema(24, 5)
    request = schema.make(
        "AddPartitionsToTxnRequest",
        transactions=(
            schema.make(
                "AddPartitionsToTxnTransaction",
                transactional_id="v1",
                producer_id=pid,
                producer_epoch=0,
                verify_only=True,
                topics=(schema.make("AddPartitionsToTxnTopic", name=topic, partitions=(0, 1)),),
            ),
        ),
    )
    response = call1(bootstrap, request)
    assert response.error_code == ErrorCode.none
    (result,) = response.results_by_transaction
    errors = {
        r.partition_index: r.partition_error_code
        for t in result.topic_results
        for r in t.results_by_partition
    }
    assert errors == {0: ErrorCode.none, 1: ErrorCode.transaction_abortable}  # as Kafka 4.2


def test_reinit_during_a_transaction_aborts_it_and_fences(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = topic_name("reinit")
    create_topic(bootstrap, topic)
    pid = call1(bootstrap, init("r1")).producer_id
    call1(bootstrap, add_v3("r1", pid, 0, topic, 0))
    busy = call1(bootstrap, init("r1"))
    assert busy.error_code == ErrorCode.concurrent_transactions
    again = call1(bootstrap, init("r1"))
    assert (again.error_code, again.producer_epoch) == (ErrorCode.none, 2)
    fenced = errors_v3(call1(bootstrap, add_v3("r1", pid, 0, topic, 0)))
    assert fenced == {(topic, 0): ErrorCode.producer_fenced}


def test_state_survives_a_kill(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Also: the state topic is created on first use, not by a broker never asked."""
    for broker in running(tmp_path_factory.mktemp("txn-kill") / "data"):
        topic = topic_name("kill")
        create_topic(broker.bootstrap, topic)
        state_partition = broker.data_dir / "__transaction_state-0"
        assert not state_partition.exists()
        pid = call1(broker.bootstrap, init("k1")).producer_id
        assert state_partition.exists()
        call1(broker.bootstrap, add_v3("k1", pid, 0, topic, 0))
        broker.restart()
        (state,) = describe(broker.bootstrap, "k1")
        assert (state.transaction_state, state.producer_id) == ("Ongoing", pid)
        bumped = call1(broker.bootstrap, init("k1", version=3))
        assert bumped.error_code == ErrorCode.concurrent_transactions
        offsets = request_schema(25, 3).make(
            "AddOffsetsToTxnRequest",
            transactional_id="k1",
            producer_id=pid + 999,
            producer_epoch=0,
            group_id="g",
        )
        assert call1(broker.bootstrap, offsets).error_code == (
            ErrorCode.invalid_producer_id_mapping
        )


def test_find_coordinator_for_a_transactional_id(txn_broker: BrokerProcess) -> None:
    request = request_schema(10, 4).make(
        "FindCoordinatorRequest", key_type=1, coordinator_keys=("t1",)
    )
    (coordinator,) = call1(txn_broker.bootstrap, request).coordinators
    assert coordinator.error_code == ErrorCode.none and coordinator.port == txn_broker.port


def test_write_txn_markers_to_an_unknown_partition(txn_broker: BrokerProcess) -> None:
    schema = request_schema(27, 1)
    request = schema.make(
        "WriteTxnMarkersRequest",
        markers=(
            schema.make(
                "WritableTxnMarker",
                producer_id=5,
                producer_epoch=0,
                transaction_result=True,
                topics=(
                    schema.make("WritableTxnMarkerTopic", name="absent", partition_indexes=(0, 1)),
                ),
                coordinator_epoch=0,
            ),
        ),
    )
    (result,) = call1(txn_broker.bootstrap, request).markers
    assert result.producer_id == 5
    (topic,) = result.topics
    assert {(p.partition_index, p.error_code) for p in topic.partitions} == {
        (0, ErrorCode.unknown_topic_or_partition),
        (1, ErrorCode.unknown_topic_or_partition),
    }


def test_list_transactions_v0_filters_by_producer(txn_broker: BrokerProcess) -> None:
    pid = call1(txn_broker.bootstrap, init("by-producer")).producer_id
    request = request_schema(66, 0).make(
        "ListTransactionsRequest", state_filters=(), producer_id_filters=(pid,)
    )
    states = call1(txn_broker.bootstrap, request).transaction_states
    assert [(s.transactional_id, s.transaction_state) for s in states] == [("by-producer", "Empty")]


def test_coordinator_aborts_a_timed_out_transaction(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Aborted (PrepareAbort at epoch + 1, then the markers, then CompleteAbort)."""
    done = "CompleteAbort"
    data = tmp_path_factory.mktemp("txn-timeout") / "data"
    for broker in running(data, "transaction.abort.timed.out.transaction.cleanup.interval.ms=100"):
        topic = topic_name("timeout")
        create_topic(broker.bootstrap, topic)
        pid = call1(broker.bootstrap, init("late", timeout_ms=500)).producer_id
        call1(broker.bootstrap, add_v3("late", pid, 0, topic, 0))
        deadline = time.monotonic() + 30
        while describe(broker.bootstrap, "late")[0].transaction_state != done:
            assert time.monotonic() < deadline, describe(broker.bootstrap, "late")
            time.sleep(0.1)
        assert describe(broker.bootstrap, "late")[0].producer_epoch == 1
        fenced = errors_v3(call1(broker.bootstrap, add_v3("late", pid, 0, topic, 0)))
        assert fenced == {(topic, 0): ErrorCode.producer_fenced}
