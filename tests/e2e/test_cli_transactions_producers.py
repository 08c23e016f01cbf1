"""`shoal transactions describe-producers|find-hanging|abort` against a broker with a
hanging transaction (a transactional batch written by hand for a producer id the
coordinator does not know, so no marker will ever come: the module's broker runs with
`transaction.partition.verification.enable=false`, as a hanging transaction is left by
an old client) next to an ongoing confluent-kafka transaction (not hanging: its
coordinator lists the partition)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from tests.support.batches import build_batch
from tests.support.broker import BrokerProcess, running
from tests.support.cli import parse_table, shoal
from tests.support.clients import producer
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1, init_producer_id_request


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    unverified = "transaction.partition.verification.enable=false"
    yield from running(tmp_path_factory.mktemp("broker") / "data", unverified)


def _latest(bootstrap: str, topic: str, partition: int, isolation_level: int) -> int:
    response = call1(
        bootstrap,
        requests.list_offsets(
            {(topic, partition): requests.LATEST_TIMESTAMP}, isolation_level=isolation_level
        ),
    )
    (answer,) = response.topics[0].partitions
    assert answer.error_code == ErrorCode.none, answer
    return int(answer.offset)


def _tx(bootstrap: str, *args: str) -> tuple[int, list[dict[str, str]], str]:
    done = shoal("transactions", "--bootstrap-server", bootstrap, *args)
    lines = done.stdout.splitlines()
    return done.returncode, parse_table(lines) if lines else [], done.stderr


def test_find_hanging_and_abort(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("cli-hang")
    create_topic(bootstrap, topic, partitions=2)
    assert produce(bootstrap, topic, build_batch([b"p0", b"p1"])) == 0
    init = call1(bootstrap, init_producer_id_request())
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    hanging = build_batch(
        [b"h0", b"h1"], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True
    )
    assert produce(bootstrap, topic, hanging, transactional_id=topic_name("old-client")) == 2
    assert produce(bootstrap, topic, build_batch([b"p2"])) == 4

    live = producer(bootstrap, transactional_id=topic_name("cli-hang-tx"))
    live.init_transactions(30)
    live.begin_transaction()
    live.produce(topic, b"live", partition=1)
    assert live.flush(30) == 0
    try:
        code, rows, err = _tx(bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
        assert code == 0, err
        (row,) = rows
        assert (row["ProducerId"], row["ProducerEpoch"], row["LastSequence"]) == (
            str(pid),
            str(epoch),
            "1",
        )
        assert (row["LatestCoordinatorEpoch"], row["CurrentTransactionStartOffset"]) == ("-1", "2")
        assert _latest(bootstrap, topic, 0, requests.READ_COMMITTED) == 2

        # The default timeout (15 minutes) has not passed: nothing is hanging yet.
        code, rows, err = _tx(bootstrap, "find-hanging", "--topic", topic)
        assert (code, rows) == (0, []), err
        time.sleep(0.05)
        code, rows, err = _tx(
            bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"
        )
        assert code == 0, err
        (row,) = rows  # the confluent-kafka transaction on partition 1 is not hanging
        assert (row["Topic"], row["Partition"], row["ProducerId"]) == (topic, "0", str(pid))
        assert (row["CoordinatorEpoch"], row["StartOffset"], row["Duration(min)"]) == (
            "-1",
            "2",
            "0",
        )
        (node,) = call1(bootstrap, requests.metadata([topic])).brokers
        code, by_broker, err = _tx(
            bootstrap,
            "find-hanging",
            "--broker-id",
            str(node.node_id),
            "--max-transaction-timeout",
            "0",
        )
        assert code == 0, err
        assert [r["Topic"] for r in by_broker if r["Topic"] == topic] == [topic]

        code, _, err = _tx(
            bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "3"
        )
        assert code == 1
        assert (
            f"Could not find any open transactions starting at offset 3 on partition {topic}-0"
            in err
        )
        code, _, err = _tx(
            bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "2"
        )
        assert code == 0, err
        # The ABORT marker at offset 5 ends the transaction: the LSO is the log end.
        assert _latest(bootstrap, topic, 0, requests.READ_COMMITTED) == 6
        code, rows, err = _tx(bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
        assert code == 0, err
        assert [
            (r["CurrentTransactionStartOffset"], r["LatestCoordinatorEpoch"]) for r in rows
        ] == [("None", "0")]
        code, rows, err = _tx(
            bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"
        )
        assert (code, rows) == (0, []), err

        # The pre-3.0 form names the producer itself.
        second = call1(bootstrap, init_producer_id_request())
        batch = build_batch(
            [b"h2"],
            producer_id=int(second.producer_id),
            producer_epoch=int(second.producer_epoch),
            base_sequence=0,
            transactional=True,
        )
        assert produce(bootstrap, topic, batch, transactional_id=topic_name("old-client")) == 6
        assert _latest(bootstrap, topic, 0, requests.READ_COMMITTED) == 6
        code, _, err = _tx(
            bootstrap,
            "abort",
            "--topic",
            topic,
            "--partition",
            "0",
            "--producer-id",
            str(second.producer_id),
            "--producer-epoch",
            str(second.producer_epoch),
            "--coordinator-epoch",
            "-1",
        )
        assert code == 0, err
        assert _latest(bootstrap, topic, 0, requests.READ_COMMITTED) == 8
    finally:
        live.abort_transaction(30)


def test_find_hanging_needs_a_scope(broker: BrokerProcess) -> None:
    code, _, err = _tx(broker.bootstrap, "find-hanging")
    assert code == 1 and "requires either --topic or --broker-id" in err
    code, _, err = _tx(broker.bootstrap, "abort", "--topic", "t", "--partition", "0")
    assert code == 1 and "must be identified either with --start-offset" in err
