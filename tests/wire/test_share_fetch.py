"""ShareFetch (78) v1-v2 against a broker process.

Conformance (docs/design/conformance.md): A4, A6, A7, A9, A10, A11, A12, A13, A15, A16
(ShareFetch and ShareAcknowledge), A17, A18, A19, A20, A22; v2 record-limit mode (A34
on the wire) and renew-only fetches; MinBytes above 1; a closed connection releasing
its records;
DeleteRecords and DeleteTopics reaching share-partitions (UNKNOWN_TOPIC_ID per
partition, parked fetches woken); request validation (GroupId, MemberId, IsRenewAck
limits, ShareAcquireMode).
A5, A8, A14, A21 and RENEW through ShareAcknowledge are in test_share_acknowledge.py.

Each test uses its own topic and group; the group's `share.auto.offset.reset` is set
to earliest and a member joins (initialising the share state) before any ShareFetch.
The module broker lowers `group.share.min.record.lock.duration.ms` to 1000 so tests
can set 1 s locks (docs/reference/configs.md).

(Past 600 lines: one test per conformance item of ShareFetch, sharing three module
brokers; the ShareAcknowledge items are already in their own file.)
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.client.share_requests import partitions_of, share_acknowledge, share_fetch
from shoal.protocol.schema import request_schema
from shoal.protocol.share import AcknowledgeType
from tests.support.broker import BrokerProcess, running
from tests.support.share_wire import (
    TP,
    acquired,
    fetch_now,
    join,
    produce_values,
    set_group_configs,
)
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, with_connection

SHORT_LOCKS = "group.share.min.record.lock.duration.ms=1000"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("share-fetch") / "data", SHORT_LOCKS)


@pytest.fixture(scope="module")
def one_session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("one-session") / "data",
        "group.share.max.share.sessions=1",
        "group.share.max.size=1",
    )


def setup(
    broker: BrokerProcess, *, partitions: int = 1, lock_ms: int | None = None
) -> tuple[str, uuid.UUID, str, str]:
    """A topic and a group (earliest) with one joined member: (topic, id, group, member)."""
    topic, group = topic_name("sf"), topic_name("sf-group")
    topic_id = create_topic(broker.bootstrap, topic, partitions=partitions)
    configs = {"share.auto.offset.reset": "earliest"}
    if lock_ms is not None:
        configs["share.record.lock.duration.ms"] = str(lock_ms)
    set_group_configs(broker.bootstrap, group, configs)
    return topic, topic_id, group, join(broker.bootstrap, group, topic)


# ---- session errors ----------------------------------------------------------------------


def test_a4_acknowledgements_at_epoch_zero_are_an_invalid_request(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 3)
    request = fetch_now(
        group, member, 0, acks={(topic_id, 0): [(0, 2, (AcknowledgeType.ACCEPT,))]}
    ).build(1)
    response = call1(broker.bootstrap, request)
    assert response.error_code == ErrorCode.invalid_request
    assert response.acquisition_lock_timeout.total_seconds() == 0
    assert response.responses == ()


def test_a6_a_wrong_epoch_is_invalid_share_session_epoch(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)

    async def go(conn: Connection) -> None:
        assert (
            await conn.request(fetch_now(group, member, 0, partitions=[(topic_id, 0)]).build(1))
        ).error_code == 0
        assert (await conn.request(fetch_now(group, member, 1).build(1))).error_code == 0
        wrong = await conn.request(fetch_now(group, member, 3).build(1))
        assert wrong.error_code == ErrorCode.invalid_share_session_epoch
        assert wrong.acquisition_lock_timeout.total_seconds() == 0
        assert (await conn.request(fetch_now(group, member, 2).build(1))).error_code == 0

    with_connection(broker.bootstrap, go)


@pytest.mark.parametrize("epoch", [5, -1])
def test_a7_no_session_is_share_session_not_found(broker: BrokerProcess, epoch: int) -> None:
    _topic, topic_id, group, member = setup(broker)
    response = call1(
        broker.bootstrap,
        fetch_now(group, member, epoch, partitions=[(topic_id, 0)]).build(1),
    )
    assert response.error_code == ErrorCode.share_session_not_found


def test_a9_a_second_epoch_zero_opens_a_new_session(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        for epoch in (0, 1, 2):
            assert (
                await conn.request(fetch_now(group, member, epoch, partitions=[tp]).build(1))
            ).error_code == 0
        reopened = await conn.request(fetch_now(group, member, 0, partitions=[tp]).build(1))
        assert reopened.error_code == 0 and tp in partitions_of(reopened)
        old = await conn.request(fetch_now(group, member, 3).build(1))
        assert old.error_code == ErrorCode.invalid_share_session_epoch
        assert (await conn.request(fetch_now(group, member, 1).build(1))).error_code == 0

    with_connection(broker.bootstrap, go)


def test_a10_the_session_limit_and_a_closed_connection(one_session_broker: BrokerProcess) -> None:
    bootstrap = one_session_broker.bootstrap
    topic, group = topic_name("limit"), topic_name("limit-group")
    topic_id = create_topic(bootstrap, topic)
    first = join(bootstrap, group, topic)
    second = "second-member"
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        opened = await conn.request(fetch_now(group, first, 0, partitions=[tp]).build(1))
        assert opened.error_code == ErrorCode.none
        other = await Connection.open("127.0.0.1", one_session_broker.port)
        try:
            started = time.monotonic()
            refused = await other.request(
                share_fetch(
                    group_id=group,
                    member_id=second,
                    session_epoch=0,
                    partitions=[tp],
                    max_wait_ms=400,
                    max_records=500,
                ).build(1)
            )
            assert refused.error_code == ErrorCode.share_session_limit_reached
            assert time.monotonic() - started >= 0.38, "answered after MaxWaitMs"
            await conn.close()  # the first session ends with its connection
            deadline = time.monotonic() + 10
            while True:
                retry = await other.request(fetch_now(group, second, 0, partitions=[tp]).build(1))
                if retry.error_code == ErrorCode.none:
                    break
                assert retry.error_code == ErrorCode.share_session_limit_reached
                assert time.monotonic() < deadline, "the slot was never freed"
                await asyncio.sleep(0.05)
        finally:
            await other.close()

    with_connection(bootstrap, go)


# ---- acquisition -------------------------------------------------------------------------


def test_a11_ten_records_are_acquired_at_once(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 10)
    response = call1(
        broker.bootstrap,
        fetch_now(group, member, 0, partitions=[(topic_id, 0)]).build(1),
    )
    assert response.error_code == ErrorCode.none
    assert response.acquisition_lock_timeout.total_seconds() * 1000 == 30_000
    (partition,) = partitions_of(response).values()
    assert (partition.error_code, partition.acknowledge_error_code) == (ErrorCode.none, 0)
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (1, 0)
    assert acquired(response) == {(topic_id, 0): [(0, 9, 1)]}
    assert len(partition.records) > 0
    assert response.node_endpoints == ()


def test_a12_max_records_and_batch_size(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 1, 1, 1, 1, 1)
    tp = (topic_id, 0)
    one = call1(
        broker.bootstrap,
        fetch_now(group, member, 0, partitions=[tp], max_records=1).build(1),
    )
    assert acquired(one) == {tp: [(0, 0, 1)]}
    other_group = topic_name("sf-group")
    set_group_configs(broker.bootstrap, other_group, {"share.auto.offset.reset": "earliest"})
    other = join(broker.bootstrap, other_group, topic)
    five = call1(
        broker.bootstrap,
        fetch_now(other_group, other, 0, partitions=[tp], max_records=5, batch_size=1).build(1),
    )
    assert acquired(five) == {tp: [(i, i, 1) for i in range(5)]}


def test_a13_a_forgotten_partition_is_omitted_and_its_records_stay_locked(
    broker: BrokerProcess,
) -> None:
    topic, topic_id, group, member = setup(broker, lock_ms=1000)
    produce_values(broker.bootstrap, topic, 4)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        first = await conn.request(fetch_now(group, member, 0, partitions=[tp]).build(1))
        assert acquired(first) == {tp: [(0, 3, 1)]}
        forgot = await conn.request(fetch_now(group, member, 1, forgotten=[tp]).build(1))
        assert forgot.error_code == 0 and partitions_of(forgot) == {}
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 2)
        later = await conn.request(fetch_now(group, member, 2).build(1))
        assert later.error_code == 0 and partitions_of(later) == {}
        other = await Connection.open("127.0.0.1", broker.port)
        try:
            taken = await other.request(fetch_now(group, "other", 0, partitions=[tp]).build(1))
            assert acquired(taken) == {tp: [(4, 5, 1)]}, "0-3 are still locked"
            accept = share_acknowledge(
                group_id=group,
                member_id="other",
                session_epoch=1,
                acks={tp: [(4, 5, (AcknowledgeType.ACCEPT,))]},
                is_renew_ack=False,
            ).build(1)
            assert (await other.request(accept)).error_code == 0
            await asyncio.sleep(1.1)
            expired = await other.request(
                share_fetch(
                    group_id=group,
                    member_id="other",
                    session_epoch=2,
                    max_wait_ms=2000,
                    max_records=500,
                ).build(1)
            )
            assert acquired(expired) == {tp: [(0, 3, 2)]}
        finally:
            await other.close()

    with_connection(broker.bootstrap, go)


def test_a15_members_share_a_partition_and_groups_are_independent(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 5, 5)
    tp = (topic_id, 0)
    other_group = topic_name("sf-group")
    set_group_configs(broker.bootstrap, other_group, {"share.auto.offset.reset": "earliest"})
    other_member = join(broker.bootstrap, other_group, topic)

    async def go(conn: Connection) -> None:
        # Sessions (and their records) live as long as their connection: keep it open.
        a = await conn.request(
            fetch_now(group, member, 0, partitions=[tp], max_records=5, batch_size=500).build(1)
        )
        b = await conn.request(
            fetch_now(group, "member-b", 0, partitions=[tp], max_records=5, batch_size=500).build(1)
        )
        assert acquired(a) == {tp: [(0, 4, 1)]}
        assert acquired(b) == {tp: [(5, 9, 1)]}
        c = await conn.request(fetch_now(other_group, other_member, 0, partitions=[tp]).build(1))
        assert acquired(c) == {tp: [(0, 9, 1)]}

    with_connection(broker.bootstrap, go)


def test_a_closed_connection_releases_its_records(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 5)
    tp = (topic_id, 0)
    first = call1(
        broker.bootstrap,
        fetch_now(group, member, 0, partitions=[tp]).build(1),
    )
    assert acquired(first) == {tp: [(0, 4, 1)]}
    deadline = time.monotonic() + 10
    while True:  # the broker notices the closed connection asynchronously
        again = call1(
            broker.bootstrap,
            fetch_now(group, "member-b", 0, partitions=[tp]).build(1),
        )
        if acquired(again):
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert acquired(again) == {tp: [(0, 4, 2)]}


def test_a16_share_fetch_with_share_groups_disabled(disabled_broker: BrokerProcess) -> None:
    request = fetch_now("g", "m", 0, partitions=[(uuid.uuid4(), 0)]).build(1)
    response = call1(disabled_broker.bootstrap, request)
    assert response.error_code == ErrorCode.unsupported_version
    assert response.responses == ()
    ack = call1(
        disabled_broker.bootstrap,
        share_acknowledge(group_id="g", member_id="m", session_epoch=1).build(1),
    )
    assert ack.error_code == ErrorCode.unsupported_version


def test_a17_duplicate_topic_entries_are_merged(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker, partitions=2)
    produce_values(broker.bootstrap, topic, 3, partition=0)
    produce_values(broker.bootstrap, topic, 2, partition=1)
    p0, p1 = (topic_id, 0), (topic_id, 1)

    async def go(conn: Connection) -> None:
        first = await conn.request(fetch_now(group, member, 0, partitions=[p1]).build(1))
        assert acquired(first) == {p1: [(0, 1, 1)]}
        request = fetch_now(
            group,
            member,
            1,
            partitions=[p0],
            acks={p1: [(0, 1, (AcknowledgeType.ACCEPT,))]},
            split_topics=True,
        ).build(1)
        assert [t.topic_id for t in request.topics] == [topic_id, topic_id]
        both = await conn.request(request)
        listed = partitions_of(both)
        assert set(listed) == {p0, p1}
        assert acquired(both) == {p0: [(0, 2, 1)]}
        assert listed[p1].acknowledge_error_code == 0
        # The acknowledgement was applied: a new member gets nothing from partition 1.
        again = await conn.request(fetch_now(group, member, 2, partitions=[p1]).build(1))
        assert acquired(again) == {}

    with_connection(broker.bootstrap, go)


def test_a18_partitions_with_acknowledgements_are_always_answered(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker, partitions=2)
    produce_values(broker.bootstrap, topic, 3)
    p0 = (topic_id, 0)

    async def go(conn: Connection) -> None:
        first = await conn.request(
            fetch_now(group, member, 0, partitions=[p0, (topic_id, 1)]).build(1)
        )
        assert acquired(first) == {p0: [(0, 2, 1)]}
        acked = await conn.request(
            fetch_now(group, member, 1, acks={p0: [(0, 2, (AcknowledgeType.ACCEPT,))]}).build(1)
        )
        listed = partitions_of(acked)
        assert list(listed) == [p0]
        assert listed[p0].acknowledge_error_code == 0 and listed[p0].acquired_records == ()
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 3)
        not_held = {p0: [(3, 5, (AcknowledgeType.ACCEPT,))]}  # produced, never acquired
        failed = await conn.request(
            fetch_now(group, member, 2, acks=not_held, is_renew_ack=False).build(1)
        )
        listed = partitions_of(failed)
        assert listed[p0].acknowledge_error_code == ErrorCode.invalid_record_state
        assert acquired(failed) == {p0: [(3, 5, 1)]}, "the fetch after the acks"

    with_connection(broker.bootstrap, go)


def test_a19_records_are_empty_bytes_never_null(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)
    response = call1(
        broker.bootstrap,
        fetch_now(group, member, 0, partitions=[(topic_id, 0)]).build(1),
    )
    (partition,) = partitions_of(response).values()
    assert partition.records == b""
    assert partition.acquired_records == ()


def test_a20_long_poll_waits_for_max_wait_or_a_produce(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        started = time.monotonic()
        empty = await conn.request(
            share_fetch(
                group_id=group,
                member_id=member,
                session_epoch=0,
                partitions=[tp],
                max_wait_ms=500,
                max_records=500,
            ).build(1)
        )
        elapsed = time.monotonic() - started
        assert 0.45 <= elapsed < 3, elapsed
        assert acquired(empty) == {}
        started = time.monotonic()
        parked = asyncio.ensure_future(
            conn.request(
                share_fetch(
                    group_id=group,
                    member_id=member,
                    session_epoch=1,
                    max_wait_ms=10_000,
                    max_records=500,
                ).build(1)
            )
        )
        await asyncio.sleep(0.3)
        assert not parked.done()
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 4)
        woken = await parked
        assert time.monotonic() - started < 5
        assert acquired(woken) == {tp: [(0, 3, 1)]}

    with_connection(broker.bootstrap, go)


def test_min_bytes_waits_for_enough_data_or_max_wait(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 1)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        started = time.monotonic()
        request = share_fetch(
            group_id=group,
            member_id=member,
            session_epoch=0,
            partitions=[tp],
            max_wait_ms=500,
            min_bytes=10_000,
            max_records=500,
        ).build(1)
        waited = await conn.request(request)
        assert time.monotonic() - started >= 0.45, "too few bytes: answered at MaxWaitMs"
        assert acquired(waited) == {tp: [(0, 0, 1)]}, "with what was there"
        started = time.monotonic()
        parked = asyncio.ensure_future(
            conn.request(
                share_fetch(
                    group_id=group,
                    member_id=member,
                    session_epoch=1,
                    max_wait_ms=10_000,
                    min_bytes=300,
                    max_records=500,
                ).build(1)
            )
        )
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 1)
        await asyncio.sleep(0.2)
        assert not parked.done(), "one small batch is below MinBytes"
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 20)
        assert acquired(await parked) == {tp: [(1, 21, 1)]}
        assert time.monotonic() - started < 5

    with_connection(broker.bootstrap, go)


def test_a22_later_responses_list_only_partitions_with_data(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker, partitions=2)
    p0, p1 = (topic_id, 0), (topic_id, 1)
    produce_values(broker.bootstrap, topic, 2, partition=0)

    async def go(conn: Connection) -> None:
        first = await conn.request(fetch_now(group, member, 0, partitions=[p0, p1]).build(1))
        assert set(partitions_of(first)) == {p0, p1}, "epoch 0 lists every partition"
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 3, partition=0)
        second = await conn.request(fetch_now(group, member, 1).build(1))
        assert list(partitions_of(second)) == [p0]
        assert acquired(second) == {p0: [(2, 4, 1)]}
        idle = await conn.request(fetch_now(group, member, 2).build(1))
        assert idle.error_code == 0 and partitions_of(idle) == {}

    with_connection(broker.bootstrap, go)


def test_delete_records_moves_the_share_partition_start(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 5, 5)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        loaded = await conn.request(
            fetch_now(group, member, 0, partitions=[tp], max_bytes=0).build(1)
        )
        assert acquired(loaded) == {}, "MaxBytes 0 loads the share-partition, acquires nothing"
        schema = request_schema(21, 2)
        deleted = await conn.request(
            schema.make(
                "DeleteRecordsRequest",
                topics=(
                    schema.make(
                        "DeleteRecordsTopic",
                        name=topic,
                        partitions=(
                            schema.make("DeleteRecordsPartition", partition_index=0, offset=5),
                        ),
                    ),
                ),
                timeout=datetime.timedelta(seconds=10),
            )
        )
        assert deleted.topics[0].partitions[0].low_watermark == 5
        after = await conn.request(fetch_now(group, member, 1).build(1))
        assert acquired(after) == {tp: [(5, 9, 1)]}

    with_connection(broker.bootstrap, go)


def test_a_deleted_topic_answers_unknown_topic_id(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 3)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        assert acquired(
            await conn.request(fetch_now(group, member, 0, partitions=[tp]).build(1))
        ) == {tp: [(0, 2, 1)]}
        parked = asyncio.ensure_future(
            conn.request(
                share_fetch(
                    group_id=group,
                    member_id=member,
                    session_epoch=1,
                    max_wait_ms=10_000,
                    max_records=500,
                ).build(1)
            )
        )
        await asyncio.sleep(0.2)
        schema = request_schema(20, 6)
        request = schema.make(
            "DeleteTopicsRequest",
            topics=(schema.make("DeleteTopicState", name=topic, topic_id=None),),
            timeout=datetime.timedelta(seconds=10),
        )
        started = time.monotonic()
        deleted = await asyncio.to_thread(call1, broker.bootstrap, request)
        assert deleted.responses[0].error_code == ErrorCode.none
        woken = await parked
        assert time.monotonic() - started < 5, "the deletion woke the parked fetch"
        assert partitions_of(woken)[tp].error_code == ErrorCode.unknown_topic_id
        acks = {tp: [(0, 2, (AcknowledgeType.ACCEPT,))]}
        acked = await conn.request(
            share_acknowledge(
                group_id=group, member_id=member, session_epoch=2, acks=acks, is_renew_ack=False
            ).build(1)
        )
        assert [p.error_code for t in acked.responses for p in t.partitions] == [
            ErrorCode.unknown_topic_id
        ]

    with_connection(broker.bootstrap, go)


def test_an_unknown_topic_id_is_answered_per_partition(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)
    unknown: TP = (uuid.uuid4(), 0)
    response = call1(
        broker.bootstrap,
        fetch_now(group, member, 0, partitions=[(topic_id, 0), unknown]).build(1),
    )
    listed = partitions_of(response)
    assert listed[unknown].error_code == ErrorCode.unknown_topic_id
    assert (listed[unknown].current_leader.leader_id, listed[unknown].records) == (-1, b"")
    assert listed[(topic_id, 0)].error_code == ErrorCode.none


def test_a_null_topic_id_is_answered_per_partition(broker: BrokerProcess) -> None:
    """The all-zero topic id (kio decodes it as None) next to a partition that acquires:
    UNKNOWN_TOPIC_ID for it, records for the other (a fuzzed ShareFetch once failed
    its handler here), and the same in a session of the null id alone."""
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 3)
    null: TP = (uuid.UUID(int=0), 0)
    response = call1(
        broker.bootstrap,
        fetch_now(group, member, 0, partitions=[(topic_id, 0), null]).build(1),
    )
    listed = partitions_of(response)
    assert acquired(response) == {(topic_id, 0): [(0, 2, 1)]}
    (null_answer,) = [p for tp, p in listed.items() if tp[0] in (None, null[0])]
    assert null_answer.error_code == ErrorCode.unknown_topic_id
    alone = call1(broker.bootstrap, fetch_now(group, "member-null", 0, partitions=[null]).build(1))
    assert [p.error_code for p in partitions_of(alone).values()] == [ErrorCode.unknown_topic_id]


# ---- v2 -----------------------------------------------------------------------------------


def test_v2_record_limit_mode(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker)
    produce_values(broker.bootstrap, topic, 10)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        a, b = [
            await conn.request(
                fetch_now(
                    group, m, 0, partitions=[tp], max_records=5, acquire_mode=1, batch_size=500
                ).build(2)
            )
            for m in (member, "member-b")
        ]
        assert acquired(a) == {tp: [(0, 4, 1)]}
        assert acquired(b) == {tp: [(5, 9, 1)]}
        assert partitions_of(a)[tp].records == partitions_of(b)[tp].records, "the whole batch"

    with_connection(broker.bootstrap, go)


def test_v2_an_unknown_acquire_mode_is_invalid(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)
    request = fetch_now(group, member, 0, partitions=[(topic_id, 0)], acquire_mode=7).build(2)
    assert call1(broker.bootstrap, request).error_code == ErrorCode.invalid_request


@pytest.mark.parametrize(
    "limits",
    [{"max_wait_ms": 100}, {"min_bytes": 1}, {"max_bytes": 1}, {"max_records": 1}],
)
def test_v2_renew_with_fetch_limits_is_invalid(
    broker: BrokerProcess, limits: dict[str, int]
) -> None:
    zero = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
    request = share_fetch(
        group_id="g",
        member_id="m",
        session_epoch=1,
        is_renew_ack=True,
        batch_size=500,
        **{**zero, **limits},
    ).build(2)
    response = call1(broker.bootstrap, request)
    assert response.error_code == ErrorCode.invalid_request
    assert response.acquisition_lock_timeout.total_seconds() == 0


def test_v2_a_renew_fetch_renews_and_fetches_nothing(broker: BrokerProcess) -> None:
    topic, topic_id, group, member = setup(broker, lock_ms=1000)
    produce_values(broker.bootstrap, topic, 3)
    tp = (topic_id, 0)
    zero = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}

    async def go(conn: Connection) -> None:
        first = await conn.request(fetch_now(group, member, 0, partitions=[tp]).build(2))
        assert acquired(first) == {tp: [(0, 2, 1)]}
        assert first.acquisition_lock_timeout.total_seconds() == 1
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, 2)
        await asyncio.sleep(0.6)
        renew = share_fetch(
            group_id=group,
            member_id=member,
            session_epoch=1,
            acks={tp: [(0, 2, (AcknowledgeType.RENEW,))]},
            batch_size=500,
            is_renew_ack=True,
            **zero,
        ).build(2)
        renewed = await conn.request(renew)
        assert renewed.error_code == 0
        assert partitions_of(renewed)[tp].acknowledge_error_code == 0
        assert acquired(renewed) == {}, "a renew fetch acquires nothing"
        await asyncio.sleep(0.6)  # past the first lock, within the renewed one
        other = await Connection.open("127.0.0.1", broker.port)
        try:
            taken = await other.request(fetch_now(group, "other", 0, partitions=[tp]).build(2))
            assert acquired(taken) == {tp: [(3, 4, 1)]}
        finally:
            await other.close()
        accept = share_acknowledge(
            group_id=group,
            member_id=member,
            session_epoch=2,
            acks={tp: [(0, 2, (AcknowledgeType.ACCEPT,))]},
        ).build(2)
        accepted = await conn.request(accept)
        assert [p.error_code for t in accepted.responses for p in t.partitions] == [0]

    with_connection(broker.bootstrap, go)


# ---- request validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group_id", "member_id"),
    [(None, "m"), ("", "m"), ("g", None), ("g", ""), ("g", "m" * 37)],
)
def test_group_and_member_ids_are_checked(
    broker: BrokerProcess, group_id: str | None, member_id: str | None
) -> None:
    response = call1(
        broker.bootstrap,
        fetch_now(group_id, member_id, 0).build(1),
    )
    assert response.error_code == ErrorCode.invalid_request
    assert response.acquisition_lock_timeout.total_seconds() == 0
