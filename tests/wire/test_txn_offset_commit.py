"""TxnOffsetCommit (28) v0-v5 against a broker process: the offsets are held pending
(OffsetFetch shows the previous commit, and answers UNSTABLE_OFFSET_COMMIT with
require_stable), member fields are checked from v3, unknown partitions refused. Each
commit is made by a real transactional producer whose transaction holds the group's
offsets partition (AddOffsetsToTxn), as the coordinator verifies (KIP-890); the
verification's answers by version are tests/differential/test_transactions.py's.
Their completion by a transaction marker needs the transaction coordinator (txn/);
the shard and service tests cover it (tests/unit/group/test_txn_offsets.py,
tests/unit/server/test_group_log_maintenance.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.calls import Call
from shoal.client.requests import (
    fetched_offsets,
    offset_commit,
    offset_fetch,
    txn_offset_commit,
)
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import stable_group
from tests.support.topics import create_topic, topic_name
from tests.support.wire import api_versions_request, call1


def in_transaction(bootstrap: str, transactional_id: str, group_id: str) -> tuple[int, int]:
    """A transactional producer (its id and epoch) whose transaction holds the group's
    offsets partition."""
    init = request_schema(22, 4).make(
        "InitProducerIdRequest",
        transactional_id=transactional_id,
        transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=-1,
        producer_epoch=-1,
    )
    producer = call1(bootstrap, init)
    assert producer.error_code == ErrorCode.none, producer
    add = request_schema(25, 3).make(
        "AddOffsetsToTxnRequest",
        transactional_id=transactional_id,
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        group_id=group_id,
    )
    assert call1(bootstrap, add).error_code == ErrorCode.none
    return int(producer.producer_id), int(producer.producer_epoch)


@pytest.fixture(scope="module")
def topic(broker: BrokerProcess) -> str:
    name = topic_name("txn-offsets")
    create_topic(broker.bootstrap, name, partitions=2)
    return name


def errors(response: Any) -> list[ErrorCode]:
    return [p.error_code for t in response.topics for p in t.partitions]


def at(version: int, call: Call) -> Call:
    """`call` sent at exactly `version`."""
    return Call.exact(call.build(version))


def test_advertised_v0_to_v5(broker: BrokerProcess) -> None:
    response = call1(broker.bootstrap, api_versions_request())
    served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
    assert served[28] == (0, 5)


@pytest.mark.parametrize("version", [0, 2, 3, 5])
def test_pending_offsets_are_unstable_not_visible(
    broker: BrokerProcess, topic: str, version: int
) -> None:
    group = topic_name(f"txn-v{version}")
    assert errors(call1(broker.bootstrap, offset_commit(group, {(topic, 0): 3}))) == [
        ErrorCode.none
    ]
    tid = f"tx-1-v{version}"
    producer_id, epoch = in_transaction(broker.bootstrap, tid, group)
    committed = txn_offset_commit(
        transactional_id=tid,
        group_id=group,
        producer_id=producer_id,
        producer_epoch=epoch,
        offsets={(topic, 0): 10, (topic, 1): 11},
    )
    response = call1(broker.bootstrap, at(version, committed))
    assert [t.name for t in response.topics] == [topic]
    assert errors(response) == [ErrorCode.none, ErrorCode.none]
    wanted = {topic: [0, 1]}
    plain = fetched_offsets(call1(broker.bootstrap, offset_fetch(group, wanted)))
    assert plain.offsets == {(topic, 0): 3, (topic, 1): -1} and plain.errors == {}
    stable = fetched_offsets(
        call1(broker.bootstrap, offset_fetch(group, wanted, require_stable=True))
    )
    assert stable.errors == {
        (topic, 0): ErrorCode.unstable_offset_commit,
        (topic, 1): ErrorCode.unstable_offset_commit,
    }
    # v7 (one group) answers the same way as v9 (several groups).
    v7 = fetched_offsets(
        call1(broker.bootstrap, at(7, offset_fetch(group, wanted, require_stable=True)))
    )
    assert v7.errors == stable.errors


def test_member_fields_are_checked_from_v3(broker: BrokerProcess, topic: str) -> None:
    m = stable_group(broker.bootstrap, topic_name("txn-members"))
    producer_id, epoch = in_transaction(broker.bootstrap, "tx-2", m.group_id)

    def commit(version: int, **member: Any) -> list[ErrorCode]:
        call = txn_offset_commit(
            transactional_id="tx-2",
            group_id=m.group_id,
            producer_id=producer_id,
            producer_epoch=epoch,
            offsets={(topic, 0): 1},
            **member,
        )
        return errors(call1(broker.bootstrap, at(version, call)))

    assert commit(2) == [ErrorCode.none]  # no member fields before v3: the group is busy
    assert commit(3) == [ErrorCode.none]  # none given from v3 either
    member = {"member_id": m.member_id, "generation": m.generation}
    assert commit(3, **member) == [ErrorCode.none]
    assert commit(5, member_id=m.member_id, generation=m.generation + 1) == [
        ErrorCode.illegal_generation
    ]
    assert commit(5, member_id="ghost", generation=m.generation) == [ErrorCode.unknown_member_id]


def test_partitions_that_do_not_exist(broker: BrokerProcess, topic: str) -> None:
    group = topic_name("txn-unknown")
    producer_id, epoch = in_transaction(broker.bootstrap, "tx-3", group)
    call = txn_offset_commit(
        transactional_id="tx-3",
        group_id=group,
        producer_id=producer_id,
        producer_epoch=epoch,
        offsets={(topic, 0): 1, (topic, 7): 1, ("no-such-topic", 0): 1},
    )
    response = call1(broker.bootstrap, call)
    rows = {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }
    assert rows == {
        (topic, 0): ErrorCode.none,
        (topic, 7): ErrorCode.unknown_topic_or_partition,
        ("no-such-topic", 0): ErrorCode.unknown_topic_or_partition,
    }
