"""`shoal transactions list|describe` against a broker holding an ongoing transaction."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.cli import parse_table, shoal
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1


def _ongoing(bootstrap: str, tid: str, topic: str) -> int:
    init = request_schema(22, 4).make(
        "InitProducerIdRequest",
        transactional_id=tid,
        transaction_timeout=datetime.timedelta(seconds=90),
        producer_id=-1,
        producer_epoch=-1,
    )
    pid = int(call1(bootstrap, init).producer_id)
    schema = request_schema(24, 3)
    add = schema.make(
        "AddPartitionsToTxnRequest",
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=(schema.make("AddPartitionsToTxnTopic", name=topic, partitions=(0,)),),
    )
    (result,) = call1(bootstrap, add).results_by_topic_v3_and_below
    assert result.results_by_partition[0].partition_error_code == ErrorCode.none
    return pid


def test_list_and_describe(broker: BrokerProcess) -> None:
    topic = topic_name("cli-tx")
    create_topic(broker.bootstrap, topic)
    tid = topic_name("cli-tx-id")
    pid = _ongoing(broker.bootstrap, tid, topic)

    listed = shoal(
        "transactions", "--bootstrap-server", broker.bootstrap, "list", "--state", "Ongoing"
    )
    assert listed.returncode == 0, listed.stderr
    rows = parse_table(listed.stdout.splitlines())
    (row,) = [r for r in rows if r["TransactionalId"] == tid]
    assert (row["ProducerId"], row["TransactionState"]) == (str(pid), "Ongoing")
    assert int(row["Coordinator"]) >= 0

    described = shoal(
        "transactions",
        "--bootstrap-server",
        broker.bootstrap,
        "describe",
        "--transactional-id",
        tid,
    )
    assert described.returncode == 0, described.stderr
    (described_row,) = parse_table(described.stdout.splitlines())
    row = described_row
    assert (row["ProducerId"], row["ProducerEpoch"], row["TransactionState"]) == (
        str(pid),
        "0",
        "Ongoing",
    )
    assert row["TransactionTimeoutMs"] == "90000" and row["TopicPartitions"] == f"{topic}-0"
    assert int(row["TransactionDurationMs"]) >= 0

    missing = shoal(
        "transactions",
        "--bootstrap-server",
        broker.bootstrap,
        "describe",
        "--transactional-id",
        "nope",
    )
    assert missing.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr
