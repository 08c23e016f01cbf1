"""Transactions, Kafka 4.2 and Shoal side by side: the error codes a producer sees at each
request version (protocol/errors.py's table), fencing seen through confluent-kafka,
what read_committed and read_uncommitted consumers see of committed and aborted
transactions, a transaction timed out by the coordinator, InitProducerId's timeout
bound, EndTxn without a transaction, and CONCURRENT_TRANSACTIONS.

Raw requests are kio objects at the version under test (tests/support/wire.py).
Producer ids and times are normalised away; transactional ids, groups and topics are
fresh per scenario (`unique`). Kafka writes a transaction's markers after it answers
EndTxn, and InitProducerId answers CONCURRENT_TRANSACTIONS until the abort it started
is complete: the scenarios wait for a transaction to be complete before the next step
(Shoal answers EndTxn once its markers are written, so it never makes a client wait).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from shoal.protocol.errors import error_name
from shoal.protocol.schema import request_schema
from shoal.txn.state import PRODUCER_EPOCH_MAX
from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess, running
from tests.support.clients import consumer, producer
from tests.support.topics import create_led_topic
from tests.support.wire import call1, send, with_connection

ABORT_INTERVAL_MS = 300
OVERRIDES = (
    # both brokers look for timed-out transactions this often (Kafka's default is 10 s)
    f"transaction.abort.timed.out.transaction.cleanup.interval.ms={ABORT_INTERVAL_MS}",
)
WAIT_S = 30.0
_CONCURRENT_TRANSACTIONS = 51
_RETRIED = {14, 15, 16, _CONCURRENT_TRANSACTIONS}
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and
CONCURRENT_TRANSACTIONS: InitProducerId answers a client retries."""


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_reference.KafkaBroker]:
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        pytest.skip(f"no Kafka reference broker: {exc}")
    with kafka_reference.running(tmp_path_factory.mktemp("kafka") / "data", *OVERRIDES) as broker:
        yield broker


@pytest.fixture(scope="module")
def shoal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("shoal") / "data", *OVERRIDES)


@pytest.fixture(scope="module", autouse=True)
def warm(pair: Pair) -> None:
    """Kafka creates `__transaction_state` and `__consumer_offsets` on first use and
    may answer from a partition still loading: one transaction through each first."""
    pair.run(_warm_up)


# ---- requests at a version


def _init(
    tid: str, version: int = 4, *, timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1
) -> Any:
    return request_schema(22, version).make(
        "InitProducerIdRequest",
        transactional_id=tid,
        transaction_timeout=datetime.timedelta(milliseconds=timeout_ms),
        producer_id=pid,
        producer_epoch=epoch,
    )


def _add_partitions(tid: str, pid: int, epoch: int, topic: str, version: int = 3) -> Any:
    schema = request_schema(24, version)
    return schema.make(
        "AddPartitionsToTxnRequest",
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(schema.make("AddPartitionsToTxnTopic", name=topic, partitions=(0,)),),
    )


def _verify_partitions(tid: str, pid: int, epoch: int, topic: str, version: int) -> Any:
    schema = request_schema(24, version)
    return schema.make(
        "AddPartitionsToTxnRequest",
        transactions=(
            schema.make(
                "AddPartitionsToTxnTransaction",
                transactional_id=tid,
                producer_id=pid,
                producer_epoch=epoch,
                verify_only=True,
                topics=(schema.make("AddPartitionsToTxnTopic", name=topic, partitions=(0, 1)),),
            ),
        ),
    )


def _add_offsets(tid: str, pid: int, epoch: int, group: str, version: int = 3) -> Any:
    return request_schema(25, version).make(
        "AddOffsetsToTxnRequest",
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        group_id=group,
    )


def _end(tid: str, pid: int, epoch: int, *, commit: bool, version: int = 3) -> Any:
    return request_schema(26, version).make(
        "EndTxnRequest",
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )


def _txn_offset_commit(tid: str, group: str, pid: int, epoch: int, topic: str, version: int) -> Any:
    schema = request_schema(28, version)
    partition = schema.make(
        "TxnOffsetCommitRequestPartition",
        partition_index=0,
        committed_offset=1,
        committed_leader_epoch=-1,
        committed_metadata="",
    )
    return schema.make(
        "TxnOffsetCommitRequest",
        transactional_id=tid,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=(schema.make("TxnOffsetCommitRequestTopic", name=topic, partitions=(partition,)),),
    )


def _produce(
    tid: str,
    pid: int,
    epoch: int,
    topic: str,
    version: int,
    *,
    sequence: int,
    topic_id: uuid.UUID | None = None,
) -> Any:
    """A transactional Produce of one record to partition 0 of `topic` (by `topic_id`
    from v13)."""
    schema = request_schema(0, version)
    records = values_batch(
        1, producer_id=pid, producer_epoch=epoch, base_sequence=sequence, transactional=True
    )
    return schema.make(
        "ProduceRequest",
        transactional_id=tid,
        acks=-1,
        timeout=datetime.timedelta(seconds=10),
        topic_data=(
            schema.make(
                "TopicProduceData",
                name=topic,
                topic_id=topic_id,
                partition_data=(schema.make("PartitionProduceData", index=0, records=records),),
            ),
        ),
    )


# ---- readers and steps


def _name(code: int) -> str:
    return error_name(code)


def _partition_codes(response: Any) -> list[str]:
    return [
        _name(p.partition_error_code)
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    ]


def _offset_codes(response: Any) -> list[str]:
    return [_name(p.error_code) for t in response.topics for p in t.partitions]


def _produced(response: Any) -> tuple[str, str | None]:
    (partition,) = response.responses[0].partition_responses
    return _name(partition.error_code), getattr(partition, "error_message", None)


def _state(bootstrap: str, tid: str) -> str:
    request = request_schema(66, 1).make(
        "ListTransactionsRequest", state_filters=(), producer_id_filters=(), duration_filter=-1
    )
    listed = call1(bootstrap, request).transaction_states
    states = {s.transactional_id: s.transaction_state for s in listed}
    return states.get(tid, "unknown")


def _until_state(bootstrap: str, tid: str, *states: str) -> str:
    deadline = time.monotonic() + WAIT_S
    while (state := _state(bootstrap, tid)) not in states:
        assert time.monotonic() < deadline, f"{tid} stayed {state}, not {states}"
        time.sleep(0.05)
    return state


def _find_coordinator(bootstrap: str, key: str, key_type: int) -> None:
    request = request_schema(10, 3).make("FindCoordinatorRequest", key=key, key_type=key_type)
    deadline = time.monotonic() + WAIT_S
    while (response := call1(bootstrap, request)).error_code != 0:
        assert time.monotonic() < deadline, response
        time.sleep(0.1)


def _initialized(bootstrap: str, tid: str, **kwargs: Any) -> tuple[int, int, list[str]]:
    """InitProducerId retried as clients do: the producer id, its epoch and the
    CONCURRENT_TRANSACTIONS answered before it (a coordinator still loading its
    partition, as Kafka's may be, is retried without a note)."""
    _find_coordinator(bootstrap, tid, 1)
    answered = []
    deadline = time.monotonic() + WAIT_S
    while True:
        response = call1(bootstrap, _init(tid, **kwargs))
        if response.error_code == 0:
            return int(response.producer_id), int(response.producer_epoch), answered
        assert response.error_code in _RETRIED and time.monotonic() < deadline, response
        if response.error_code == _CONCURRENT_TRANSACTIONS:
            answered.append(_name(response.error_code))
        time.sleep(0.05)


def _ongoing(bootstrap: str, topic: str) -> tuple[str, int, int]:
    """A fresh transactional id with a transaction holding partition 0 of `topic`."""
    tid = unique("txn")
    pid, epoch, _ = _initialized(bootstrap, tid)
    assert _partition_codes(call1(bootstrap, _add_partitions(tid, pid, epoch, topic))) == ["NONE"]
    return tid, pid, epoch


def _warm_up(bootstrap: str) -> None:
    topic = unique("warm")
    create_led_topic(bootstrap, topic)
    _find_coordinator(bootstrap, "warm-group", 0)
    deadline = time.monotonic() + WAIT_S
    while True:
        tid = unique("warm")
        pid, epoch, _ = _initialized(bootstrap, tid)
        added = _partition_codes(call1(bootstrap, _add_partitions(tid, pid, epoch, topic)))
        if added == ["NONE"]:
            break
        assert time.monotonic() < deadline, added
        time.sleep(0.2)
    assert _name(call1(bootstrap, _end(tid, pid, epoch, commit=True)).error_code) == "NONE"


# ---- scenarios


def _fenced_by_version(bootstrap: str) -> dict[str, Any]:
    """A producer with an ongoing transaction is fenced by a second InitProducerId of
    its transactional id; what each API answers the fenced one, at each version."""
    topic = unique("fence")
    group = unique("fence-group")
    create_led_topic(bootstrap, topic)
    _find_coordinator(bootstrap, group, 0)
    tid, pid, epoch = _ongoing(bootstrap, topic)
    first = _produced(call1(bootstrap, _produce(tid, pid, epoch, topic, 9, sequence=0)))
    _, new_epoch, busy = _initialized(bootstrap, tid)
    seen: dict[str, Any] = {"first produce": first, "re-init": busy, "epochs": new_epoch - epoch}
    for v in range(4):
        response = call1(bootstrap, _add_partitions(tid, pid, epoch, topic, v))
        seen[f"AddPartitionsToTxn v{v}"] = _partition_codes(response)
    for v in range(5):
        response = call1(bootstrap, _add_offsets(tid, pid, epoch, group, v))
        seen[f"AddOffsetsToTxn v{v}"] = _name(response.error_code)
    for v in range(6):
        response = call1(bootstrap, _end(tid, pid, epoch, commit=True, version=v))
        seen[f"EndTxn v{v}"] = _name(response.error_code)
    for v in range(6):
        response = call1(bootstrap, _txn_offset_commit(tid, group, pid, epoch, topic, v))
        seen[f"TxnOffsetCommit v{v}"] = _offset_codes(response)
    for v in range(3, 6):
        response = call1(bootstrap, _init(tid, v, pid=pid, epoch=epoch))
        seen[f"InitProducerId v{v}"] = _name(response.error_code)
    for v in range(3, 11):
        response = call1(bootstrap, _produce(tid, pid, epoch, topic, v, sequence=1))
        seen[f"Produce v{v}"] = _produced(response)
    return seen


def test_a_fenced_producer_gets_each_versions_code(pair: Pair) -> None:
    kafka, shoal = pair.run(_fenced_by_version)
    assert shoal == kafka
    # the table's point: clients of the old versions never see PRODUCER_FENCED
    assert kafka["EndTxn v1"] == kafka["AddOffsetsToTxn v0"] == "INVALID_PRODUCER_EPOCH"
    assert kafka["Produce v7"] == ("INVALID_PRODUCER_EPOCH", None)


def _not_in_the_transaction(bootstrap: str) -> dict[str, Any]:
    """Writes to partitions the producer's transaction does not hold: Produce and
    TxnOffsetCommit at each version, the brokers' verify-only AddPartitionsToTxn."""
    topic = unique("unadded")
    group = unique("unadded-group")
    create_led_topic(bootstrap, topic, partitions=2)
    _find_coordinator(bootstrap, group, 0)
    seen: dict[str, Any] = {}
    for v in range(3, 11):
        tid = unique("txn")
        pid, epoch, _ = _initialized(bootstrap, tid)
        response = call1(bootstrap, _produce(tid, pid, epoch, topic, v, sequence=0))
        seen[f"Produce v{v}"] = _produced(response)
    for ongoing in (False, True):
        for v in range(6):
            if ongoing:
                tid, pid, epoch = _ongoing(bootstrap, topic)
            else:
                tid = unique("txn")
                pid, epoch, _ = _initialized(bootstrap, tid)
            response = call1(bootstrap, _txn_offset_commit(tid, group, pid, epoch, topic, v))
            # v5 adds the group's partition itself: the transaction is then ongoing
            seen[f"TxnOffsetCommit v{v} ongoing={ongoing}"] = (
                _offset_codes(response),
                _state(bootstrap, tid),
            )
    tid, pid, epoch = _ongoing(bootstrap, topic)
    for v in (4, 5):
        for label, (p, e) in {
            "member": (pid, epoch),
            "fenced": (pid, epoch + 1),
            "other producer": (pid + 99, epoch),
        }.items():
            response = call1(bootstrap, _verify_partitions(tid, p, e, topic, v))
            (result,) = response.results_by_transaction
            seen[f"verify-only v{v} {label}"] = (
                _name(response.error_code),
                sorted(  # Kafka's order is its hash map's
                    (r.partition_index, _name(r.partition_error_code))
                    for t in result.topic_results
                    for r in t.results_by_partition
                ),
            )
    return seen


def _newer_produce_versions(bootstrap: str) -> dict[str, Any]:
    """Produce v11-v13: v11 answers TRANSACTION_ABORTABLE as it is; from v12
    (transaction version 2 clients) a partition not in the transaction is added to it;
    v13 names the topic by id. Then an EndTxn v5 and the next transaction's produce."""
    topic = unique("newer")
    topic_id = create_led_topic(bootstrap, topic)
    seen: dict[str, Any] = {}
    for v in (11, 12, 13):
        by = {"topic_id": topic_id} if v >= 13 else {}
        tid = unique("txn")
        pid, epoch, _ = _initialized(bootstrap, tid)
        produced = call1(bootstrap, _produce(tid, pid, epoch, topic, v, sequence=0, **by))
        seen[f"v{v} not added"] = (_produced(produced), _state(bootstrap, tid))
        others = {"fenced": (pid, epoch + 1), "other producer": (pid + 99, epoch)}
        for label, (p, e) in others.items():
            response = call1(bootstrap, _produce(tid, p, e, topic, v, sequence=0, **by))
            seen[f"v{v} {label}"] = _produced(response)
        if v < 12:
            continue
        ended = call1(bootstrap, _end(tid, pid, epoch, commit=True, version=5))
        seen[f"v{v} commit"] = (_name(ended.error_code), ended.producer_epoch - epoch)
        # the next transaction starts with its first produce (Kafka's markers may still
        # be on their way: it retries CONCURRENT_TRANSACTIONS itself)
        response = call1(
            bootstrap, _produce(tid, pid, ended.producer_epoch, topic, v, sequence=0, **by)
        )
        seen[f"v{v} next transaction"] = (_produced(response), _state(bootstrap, tid))
    return seen


def test_newer_produce_versions(pair: Pair) -> None:
    kafka, shoal = pair.run(_newer_produce_versions)
    assert shoal == kafka
    assert kafka["v11 not added"] == (("TRANSACTION_ABORTABLE", None), "Empty")
    assert kafka["v12 not added"] == (("NONE", None), "Ongoing")


def test_writes_outside_the_transaction(pair: Pair) -> None:
    kafka, shoal = pair.run(_not_in_the_transaction)
    assert shoal == kafka
    not_added = "Partition was not added to the transaction"
    assert kafka["Produce v8"] == ("INVALID_TXN_STATE", not_added)
    assert kafka["TxnOffsetCommit v4 ongoing=True"] == (["TRANSACTION_ABORTABLE"], "Ongoing")


def _bad_timeouts(bootstrap: str) -> dict[str, str]:
    tid = unique("timeout")
    _find_coordinator(bootstrap, tid, 1)
    return {
        f"v{v} {ms}": _name(call1(bootstrap, _init(tid, v, timeout_ms=ms)).error_code)
        for v in range(6)
        for ms in (0, -1, 900_001, 2**31 - 1)
    }


def test_init_producer_id_with_a_bad_timeout(pair: Pair) -> None:
    kafka, shoal = pair.run(_bad_timeouts)
    assert shoal == kafka
    assert set(kafka.values()) == {"INVALID_TRANSACTION_TIMEOUT"}


def _end_without_a_transaction(bootstrap: str) -> dict[str, Any]:
    """EndTxn of an Empty transactional id at each version; v5 (transaction version 2)
    aborts one anyway, bumping the epoch; then its retry, a commit, an unknown id."""
    tid = unique("empty")
    pid, epoch, _ = _initialized(bootstrap, tid)
    seen: dict[str, Any] = {}
    for v in range(6):
        for commit in (True, False):
            if v == 5 and not commit:
                continue
            response = call1(bootstrap, _end(tid, pid, epoch, commit=commit, version=v))
            seen[f"v{v} commit={commit}"] = _name(response.error_code)
    aborted = call1(bootstrap, _end(tid, pid, epoch, commit=False, version=5))
    seen["v5 abort"] = (_name(aborted.error_code), aborted.producer_epoch - epoch)
    seen["v5 abort state"] = _until_state(bootstrap, tid, "CompleteAbort")
    retried = call1(bootstrap, _end(tid, pid, epoch, commit=False, version=5))
    seen["v5 abort retried"] = (_name(retried.error_code), retried.producer_epoch - epoch)
    commit = call1(bootstrap, _end(tid, pid, epoch + 1, commit=True, version=5))
    seen["v5 commit after"] = _name(commit.error_code)
    for v in range(5):
        response = call1(bootstrap, _end(tid, pid, epoch + 1, commit=False, version=v))
        seen[f"v{v} abort after"] = _name(response.error_code)
    for v in (0, 5):
        response = call1(bootstrap, _end(unique("nobody"), pid, epoch, commit=True, version=v))
        seen[f"v{v} unknown id"] = _name(response.error_code)
    return seen


def test_end_txn_without_a_transaction(pair: Pair) -> None:
    kafka, shoal = pair.run(_end_without_a_transaction)
    assert shoal == kafka
    assert kafka["v5 abort"] == ("NONE", 1)


def _concurrent(bootstrap: str) -> dict[str, Any]:
    """InitProducerId while a transaction is ongoing: CONCURRENT_TRANSACTIONS (the
    coordinator aborts it), then the bumped epoch; the old producer is fenced; the
    commit of a transaction answered, retried once complete, and the other end of it."""
    topic = unique("busy")
    create_led_topic(bootstrap, topic)
    tid, pid, epoch = _ongoing(bootstrap, topic)
    _, new_epoch, busy = _initialized(bootstrap, tid)
    seen: dict[str, Any] = {
        "first answer": busy[0],
        "epochs": new_epoch - epoch,
        "old producer": _partition_codes(call1(bootstrap, _add_partitions(tid, pid, epoch, topic))),
    }
    tid, pid, epoch = _ongoing(bootstrap, topic)
    seen["commit"] = _name(call1(bootstrap, _end(tid, pid, epoch, commit=True)).error_code)
    seen["state"] = _until_state(bootstrap, tid, "CompleteCommit")
    seen["commit retried"] = _name(call1(bootstrap, _end(tid, pid, epoch, commit=True)).error_code)
    seen["abort after"] = _name(call1(bootstrap, _end(tid, pid, epoch, commit=False)).error_code)
    return seen


def test_concurrent_transactions(pair: Pair) -> None:
    kafka, shoal = pair.run(_concurrent)
    assert shoal == kafka
    assert kafka["first answer"] == "CONCURRENT_TRANSACTIONS"


def _timed_out(bootstrap: str) -> dict[str, Any]:
    """A transaction left open past its timeout is aborted by the coordinator, which
    fences its producer: its records are never read_committed, its EndTxn is refused
    (INVALID_PRODUCER_EPOCH before v2), and the next InitProducerId is answered."""
    topic = unique("timed-out")
    create_led_topic(bootstrap, topic)
    tid = unique("txn")
    pid, epoch, _ = _initialized(bootstrap, tid, timeout_ms=1_000)
    call1(bootstrap, _add_partitions(tid, pid, epoch, topic))
    produced = _produced(call1(bootstrap, _produce(tid, pid, epoch, topic, 9, sequence=0)))
    state = _until_state(bootstrap, tid, "CompleteAbort")
    seen: dict[str, Any] = {"produced": produced, "state": state}
    for v in range(6):
        response = call1(bootstrap, _end(tid, pid, epoch, commit=True, version=v))
        seen[f"EndTxn v{v}"] = _name(response.error_code)
    seen["committed"] = _read(bootstrap, topic, "read_committed", want=0)
    seen["uncommitted"] = _read(bootstrap, topic, "read_uncommitted", want=1)
    _, new_epoch, busy = _initialized(bootstrap, tid)
    seen["re-init"] = (busy, new_epoch - epoch)
    return seen


def test_a_timed_out_transaction_is_aborted(pair: Pair) -> None:
    kafka, shoal = pair.run(_timed_out)
    assert shoal == kafka
    assert kafka["EndTxn v0"] == "INVALID_PRODUCER_EPOCH"


# ---- through confluent-kafka (librdkafka)


def _read(bootstrap: str, topic: str, isolation: str, *, want: int) -> list[tuple[int, bytes]]:
    """(offset, value) of what a consumer at `isolation` reads of partition 0: `want`
    records, then nothing more for a second."""
    c = consumer(bootstrap, isolation_level=isolation, auto_offset_reset="earliest")
    got: list[tuple[int, bytes]] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + WAIT_S
        quiet_until = None
        while quiet_until is None or time.monotonic() < quiet_until:
            assert time.monotonic() < deadline, f"read {got}, want {want} records"
            for message in c.consume(num_messages=100, timeout=0.2):
                if message.error() is not None:
                    raise KafkaException(message.error())
                got.append((message.offset(), message.value()))
            if len(got) >= want and quiet_until is None:
                quiet_until = time.monotonic() + 1.0
    finally:
        c.close()
    return got


def _txn_producer(bootstrap: str, tid: str, errors: list[KafkaError] | None = None) -> Any:
    """A transactional producer; `errors` collects what its error callback reports
    (without one, confluent-kafka raises a fatal error out of whichever call polls)."""
    return producer(
        bootstrap,
        transactional_id=tid,
        transaction_timeout_ms=60_000,
        linger_ms=0,
        error_cb=(errors if errors is not None else []).append,
    )


def _commit_and_abort(bootstrap: str) -> dict[str, Any]:
    topic = unique("visible")
    create_led_topic(bootstrap, topic)
    p = _txn_producer(bootstrap, unique("txn"))
    p.init_transactions(WAIT_S)
    for values, commit in (([b"a1", b"a2"], True), ([b"b1", b"b2"], False), ([b"c1"], True)):
        p.begin_transaction()
        for value in values:
            p.produce(topic, value, partition=0)
        p.flush(WAIT_S)
        if commit:
            p.commit_transaction(WAIT_S)
        else:
            p.abort_transaction(WAIT_S)
    return {
        "read_committed": _read(bootstrap, topic, "read_committed", want=3),
        "read_uncommitted": _read(bootstrap, topic, "read_uncommitted", want=5),
    }


def test_commit_and_abort_as_consumers_see_them(pair: Pair) -> None:
    kafka, shoal = pair.run(_commit_and_abort)
    assert shoal == kafka
    # offsets 2 and 5 are the markers
    assert kafka["read_committed"] == [(0, b"a1"), (1, b"a2"), (6, b"c1")]


def _error(exc: KafkaException) -> tuple[str, bool, bool, bool]:
    error: KafkaError = exc.args[0]
    return error.name(), error.fatal(), error.txn_requires_abort(), error.retriable()


def _produce_one(p: Any, topic: str) -> None:
    p.produce(topic, b"after", partition=0)
    p.flush(WAIT_S)


def _fenced_librdkafka(bootstrap: str) -> dict[str, Any]:
    """librdkafka's test 0103 do_test_fenced_txn: a second producer of the
    transactional id fences the first in the middle of its transaction."""
    topic = unique("fenced")
    create_led_topic(bootstrap, topic)
    tid = unique("txn")
    reported: list[KafkaError] = []
    first = _txn_producer(bootstrap, tid, reported)
    first.init_transactions(WAIT_S)
    first.begin_transaction()
    first.produce(topic, b"before", partition=0)
    first.flush(WAIT_S)
    second = _txn_producer(bootstrap, tid)
    second.init_transactions(WAIT_S)
    seen: dict[str, Any] = {}
    for step, call in (
        ("produce", lambda: _produce_one(first, topic)),
        ("commit", lambda: first.commit_transaction(WAIT_S)),
        ("abort", lambda: first.abort_transaction(WAIT_S)),
    ):
        try:
            call()
            seen[step] = "NONE"
        except KafkaException as exc:
            seen[step] = _error(exc)
    seen["reported"] = [(e.name(), e.fatal()) for e in reported]
    second.begin_transaction()
    second.produce(topic, b"second", partition=0)
    second.commit_transaction(WAIT_S)
    seen["read_committed"] = [v for _, v in _read(bootstrap, topic, "read_committed", want=1)]
    return seen


def test_a_fenced_confluent_kafka_producer(pair: Pair) -> None:
    kafka, shoal = pair.run(_fenced_librdkafka)
    assert shoal == kafka
    assert kafka["read_committed"] == [b"second"]


def _described_epoch(bootstrap: str, tid: str) -> int:
    request = request_schema(65, 0).make("DescribeTransactionsRequest", transactional_ids=(tid,))
    (state,) = call1(bootstrap, request).transaction_states
    return int(state.producer_epoch)


def _timed_out_v2(bootstrap: str) -> dict[str, Any]:
    """A transaction version 2 transaction (Produce v12 added its partition) left open
    past its timeout: the coordinator aborts it; the epochs it leaves and what the
    timed-out producer's EndTxn v5 and Produce v12 are answered."""
    topic = unique("timed-out-v2")
    create_led_topic(bootstrap, topic)
    tid = unique("txn")
    pid, epoch, _ = _initialized(bootstrap, tid, timeout_ms=1_000)
    produced = _produced(call1(bootstrap, _produce(tid, pid, epoch, topic, 12, sequence=0)))
    seen: dict[str, Any] = {"produced": produced}
    seen["state"] = _until_state(bootstrap, tid, "CompleteAbort")
    seen["epoch after"] = _described_epoch(bootstrap, tid) - epoch
    for label, e, commit in (
        ("abort", epoch, False),
        ("commit", epoch, True),
        ("abort +1", epoch + 1, False),
        ("commit +1", epoch + 1, True),
    ):
        response = call1(bootstrap, _end(tid, pid, e, commit=commit, version=5))
        seen[f"EndTxn v5 {label}"] = (_name(response.error_code), response.producer_epoch - epoch)
        _until_state(bootstrap, tid, "CompleteAbort")  # Kafka's markers go after its answer
    produce = call1(bootstrap, _produce(tid, pid, epoch, topic, 12, sequence=1))
    seen["Produce v12 old epoch"] = _produced(produce)
    seen["committed"] = _read(bootstrap, topic, "read_committed", want=0)
    _, new_epoch, busy = _initialized(bootstrap, tid)
    seen["re-init"] = (busy, new_epoch - epoch)
    return seen


def test_a_timed_out_v2_transaction_is_aborted(pair: Pair) -> None:
    kafka, shoal = pair.run(_timed_out_v2)
    assert shoal == kafka
    # one bump by the timeout; the producer's abort at its old epoch reads as a retry
    assert kafka["epoch after"] == 1
    assert kafka["EndTxn v5 abort"] == ("NONE", 1)


_LAST_BEFORE_EXHAUSTED = PRODUCER_EPOCH_MAX - 3
"""32764: two transactions from the epoch Kafka calls exhausted (Short.MaxValue - 1)."""


def _epoch_overflow_v2(bootstrap: str) -> dict[str, Any]:
    """EndTxn v5 bumps the epoch at every end: aborts of no transaction take a fresh
    producer to epoch 32764, then transactions commit (Produce v12 adds the partition)
    until the epoch runs out; the producer ids and epochs answered, a retry of the end
    that ran out, InitProducerId and EndTxn by the old id after, and what
    read_committed reads."""
    topic = unique("overflow")
    create_led_topic(bootstrap, topic)
    tid = unique("txn")
    first_pid, epoch, _ = _initialized(bootstrap, tid)

    async def go(conn: Any) -> dict[str, Any]:
        pid, at = first_pid, epoch

        async def end(p: int, e: int, commit: bool) -> Any:
            while True:
                answer = await send(conn, _end(tid, p, e, commit=commit, version=5))
                if answer.error_code != _CONCURRENT_TRANSACTIONS:
                    return answer
                await asyncio.sleep(0.001)

        while at < _LAST_BEFORE_EXHAUSTED:
            answer = await end(pid, at, False)
            assert answer.error_code == 0 and answer.producer_id == pid, (at, answer)
            at = int(answer.producer_epoch)
        seen: dict[str, Any] = {}
        old: tuple[int, int] | None = None
        for n in range(4):
            produced = await send(conn, _produce(tid, pid, at, topic, 12, sequence=0))
            if old is not None:  # the id that ran out, while the new one's is ongoing
                late = await end(*old, True)
                seen["old id, new transaction ongoing"] = _name(late.error_code)
            answer = await end(pid, at, True)
            new_pid, new_epoch = int(answer.producer_id), int(answer.producer_epoch)
            seen[f"txn {n} at {at}"] = (
                _produced(produced),
                _name(answer.error_code),
                "same id" if new_pid == pid else "new id",
                new_epoch,
            )
            if new_pid != pid:
                retried = await end(pid, at, True)
                seen["retried"] = (
                    _name(retried.error_code),
                    "new id" if int(retried.producer_id) == new_pid else int(retried.producer_id),
                    int(retried.producer_epoch),
                )
                reinit = await send(conn, _init(tid, pid=pid, epoch=at))
                seen["InitProducerId by the old id"] = (
                    _name(reinit.error_code),
                    "new id" if int(reinit.producer_id) == new_pid else int(reinit.producer_id),
                    int(reinit.producer_epoch),
                )
                earlier = await send(conn, _init(tid, pid=pid, epoch=at - 1))
                seen["InitProducerId by the old id, an earlier epoch"] = _name(earlier.error_code)
                old = (pid, at)
            pid, at = new_pid, new_epoch
        # then aborts of no transaction up to the exhausted epoch, and one more
        while at < PRODUCER_EPOCH_MAX - 1:
            answer = await end(pid, at, False)
            assert answer.error_code == 0 and answer.producer_id == pid, (at, answer)
            at = int(answer.producer_epoch)
        answer = await end(pid, at, False)
        seen[f"abort of nothing at {at}"] = (
            _name(answer.error_code),
            "same id" if int(answer.producer_id) == pid else "new id",
            int(answer.producer_epoch),
        )
        retried = await end(pid, at, False)
        seen["abort of nothing retried"] = (
            _name(retried.error_code),
            "new id" if int(retried.producer_id) == int(answer.producer_id) else "other",
            int(retried.producer_epoch),
        )
        return seen

    seen = with_connection(bootstrap, go)
    seen["read_committed"] = [v for _, v in _read(bootstrap, topic, "read_committed", want=4)]
    return seen


@pytest.mark.slow
def test_end_txn_v5_epoch_overflow(pair: Pair) -> None:
    kafka, shoal = pair.run(_epoch_overflow_v2)
    assert shoal == kafka
    # from the exhausted epoch (32766) an end answers a new producer id at epoch 0
    assert kafka["txn 2 at 32766"][2:] == ("new id", 0)
    assert kafka["abort of nothing at 32766"] == ("NONE", "new id", 0)
    assert kafka["InitProducerId by the old id"] == ("NONE", "new id", 0)
    assert kafka["InitProducerId by the old id, an earlier epoch"] == "PRODUCER_FENCED"


def _init_naming_another_id(bootstrap: str) -> dict[str, Any]:
    """InitProducerId v4 naming a producer id the transactional id does not have (at
    its epoch, at 0), once Empty and once with a transaction complete."""
    topic = unique("other-id")
    create_led_topic(bootstrap, topic)
    tid = unique("txn")
    pid, epoch, _ = _initialized(bootstrap, tid)
    seen: dict[str, Any] = {}
    for e in (epoch, 0):
        seen[f"Empty, epoch {e}"] = _name(
            call1(bootstrap, _init(tid, pid=pid + 999, epoch=e)).error_code
        )
    call1(bootstrap, _produce(tid, pid, epoch, topic, 12, sequence=0))
    ended = call1(bootstrap, _end(tid, pid, epoch, commit=True, version=5))
    _until_state(bootstrap, tid, "CompleteCommit")
    for e in (int(ended.producer_epoch), 0):
        response = call1(bootstrap, _init(tid, pid=pid + 999, epoch=e))
        seen[f"CompleteCommit, epoch {e - epoch}"] = _name(response.error_code)
    return seen


def test_init_naming_another_producer_id(pair: Pair) -> None:
    kafka, shoal = pair.run(_init_naming_another_id)
    assert shoal == kafka
    assert set(kafka.values()) == {"PRODUCER_FENCED"}
