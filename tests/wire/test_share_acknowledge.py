"""ShareAcknowledge (79) v1-v2, and acknowledgements piggy-backed on ShareFetch, against
a broker process.

Conformance (docs/design/conformance.md): A5, A8, A14 (ShareFetch and ShareAcknowledge
at epoch -1), A21 (ack batch validation, both APIs); RENEW (v2) and
`share.renew.acknowledge.enable=false`; librdkafka's closing sequence (a final
ShareAcknowledge after the leave heartbeat is accepted); unknown topic ids answered per partition.
A16 for ShareAcknowledge is in test_share_fetch.py.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.client.share_requests import (
    Acks,
    heartbeat,
    partitions_of,
    share_acknowledge,
    share_fetch,
)
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


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("share-ack") / "data",
        "group.share.min.record.lock.duration.ms=1000",
    )


def setup(
    broker: BrokerProcess, records: int = 10, **configs: str
) -> tuple[str, uuid.UUID, str, str]:
    """A topic with `records` records in one batch and a group (earliest) with one
    joined member: (topic, topic id, group, member)."""
    topic, group = topic_name("sa"), topic_name("sa-group")
    topic_id = create_topic(broker.bootstrap, topic)
    set_group_configs(
        broker.bootstrap,
        group,
        {
            "share.auto.offset.reset": "earliest",
            **{k.replace("_", "."): v for k, v in configs.items()},
        },
    )
    if records:
        produce_values(broker.bootstrap, topic, records)
    return topic, topic_id, group, join(broker.bootstrap, group, topic)


def errors_of(response: Any) -> dict[TP, int]:
    """{partition: ErrorCode} of a ShareAcknowledge response."""
    assert response.error_code == ErrorCode.none, response
    return {tp: int(p.error_code) for tp, p in partitions_of(response).items()}


async def open_and_fetch(conn: Connection, group: str, member: str, tp: TP, **kw: Any) -> Any:
    fields: dict[str, Any] = {"max_wait_ms": 0, "max_records": 500, "batch_size": 500, **kw}
    version = fields.pop("version", 1)
    fields.setdefault("is_renew_ack", False)
    request = share_fetch(
        group_id=group, member_id=member, session_epoch=0, partitions=[tp], **fields
    ).build(version)
    response = await conn.request(request)
    assert response.error_code == ErrorCode.none, response
    return response


def test_a5_share_acknowledge_at_epoch_zero(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp)
        response = await conn.request(
            share_acknowledge(
                group_id=group,
                member_id=member,
                session_epoch=0,
                acks={tp: [(0, 9, (AcknowledgeType.ACCEPT,))]},
            ).build(1)
        )
        assert response.error_code == ErrorCode.invalid_share_session_epoch
        assert response.responses == ()

    with_connection(broker.bootstrap, go)


def test_a8_share_acknowledge_advances_the_session_epoch(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        fetched = await open_and_fetch(conn, group, member, tp)
        assert acquired(fetched) == {tp: [(0, 9, 1)]}
        acked = await conn.request(
            share_acknowledge(
                group_id=group,
                member_id=member,
                session_epoch=1,
                acks={tp: [(0, 9, (AcknowledgeType.ACCEPT,))]},
            ).build(1)
        )
        assert errors_of(acked) == {tp: 0}
        stale = await conn.request(fetch_now(group, member, 1).build(1))
        assert stale.error_code == ErrorCode.invalid_share_session_epoch
        assert (await conn.request(fetch_now(group, member, 2).build(1))).error_code == 0

    with_connection(broker.bootstrap, go)


def test_share_acknowledge_errors_of_the_session(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker, records=0)
    tp = (topic_id, 0)
    none = call1(
        broker.bootstrap,
        share_acknowledge(
            group_id=group,
            member_id=member,
            session_epoch=1,
            acks={tp: [(0, 0, (AcknowledgeType.ACCEPT,))]},
        ).build(1),
    )
    assert none.error_code == ErrorCode.share_session_not_found
    final = call1(
        broker.bootstrap,
        share_acknowledge(group_id=group, member_id=member, session_epoch=-1).build(1),
    )
    assert final.error_code == ErrorCode.share_session_not_found

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp)
        wrong = await conn.request(
            share_acknowledge(group_id=group, member_id=member, session_epoch=2).build(1)
        )
        assert wrong.error_code == ErrorCode.invalid_share_session_epoch
        assert (
            errors_of(
                await conn.request(
                    share_acknowledge(group_id=group, member_id=member, session_epoch=1).build(1)
                )
            )
            == {}
        )

    with_connection(broker.bootstrap, go)


@pytest.mark.parametrize("api", ["ShareFetch", "ShareAcknowledge"])
def test_a14_a_final_request_applies_its_acks_and_releases_the_rest(
    broker: BrokerProcess, api: str
) -> None:
    _topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)
    acks: Acks = {tp: [(0, 4, (AcknowledgeType.ACCEPT,))]}

    async def go(conn: Connection) -> None:
        fetched = await open_and_fetch(conn, group, member, tp)
        assert acquired(fetched) == {tp: [(0, 9, 1)]}
        if api == "ShareFetch":
            final = await conn.request(
                fetch_now(group, member, -1, acks=acks, is_renew_ack=False).build(1)
            )
            listed = partitions_of(final)
            assert list(listed) == [tp]
            assert listed[tp].acknowledge_error_code == 0
            assert listed[tp].acquired_records == () and listed[tp].records == b""
        else:
            final = await conn.request(
                share_acknowledge(
                    group_id=group,
                    member_id=member,
                    session_epoch=-1,
                    acks=acks,
                    is_renew_ack=False,
                ).build(1)
            )
            assert errors_of(final) == {tp: 0}
        gone = await conn.request(fetch_now(group, member, 1).build(1))
        assert gone.error_code == ErrorCode.share_session_not_found
        other = await conn.request(fetch_now(group, "other", 0, partitions=[tp]).build(1))
        assert acquired(other) == {tp: [(5, 9, 2)]}

    with_connection(broker.bootstrap, go)


def test_a_final_acknowledge_after_the_leave_heartbeat(broker: BrokerProcess) -> None:
    """librdkafka's closing sequence: the ShareAcknowledge(-1) of a closing consumer often
    lands after its leave heartbeat; it is accepted without a membership check."""
    _topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp)
        left = await conn.request(heartbeat(group, member, -1, None).build(1))
        assert left.error_code == ErrorCode.none
        final = await conn.request(
            share_acknowledge(
                group_id=group,
                member_id=member,
                session_epoch=-1,
                acks={tp: [(0, 9, (AcknowledgeType.ACCEPT,))]},
            ).build(1)
        )
        assert errors_of(final) == {tp: 0}
        after = await conn.request(fetch_now(group, "other", 0, partitions=[tp]).build(1))
        assert acquired(after) == {}

    with_connection(broker.bootstrap, go)


@pytest.mark.parametrize(
    ("batches", "why"),
    [
        ([(5, 4, (AcknowledgeType.ACCEPT,))], "first > last"),
        ([(0, 5, (AcknowledgeType.ACCEPT,)), (5, 9, (AcknowledgeType.ACCEPT,))], "overlap"),
        ([(5, 9, (AcknowledgeType.ACCEPT,)), (0, 4, (AcknowledgeType.ACCEPT,))], "descending"),
        ([(0, 9, ())], "no types"),
        ([(0, 2, (AcknowledgeType.ACCEPT, AcknowledgeType.ACCEPT))], "wrong type count"),
        ([(0, 9, (AcknowledgeType.RENEW,))], "RENEW without IsRenewAck"),
        ([(0, 9, (7,))], "unknown type"),
    ],
)
def test_a21_malformed_batches_are_invalid_for_their_partition(
    broker: BrokerProcess, batches: list[tuple[int, int, tuple[int, ...]]], why: str
) -> None:
    _topic, topic_id, group, member = setup(broker)
    tp = (topic_id, 0)
    unknown: TP = (uuid.uuid4(), 0)

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp)
        acks = {tp: batches, unknown: [(0, 0, (AcknowledgeType.ACCEPT,))]}
        response = await conn.request(
            share_acknowledge(
                group_id=group, member_id=member, session_epoch=1, acks=acks, is_renew_ack=False
            ).build(2)
        )
        assert errors_of(response) == {
            tp: ErrorCode.invalid_request,
            unknown: ErrorCode.unknown_topic_id,
        }, why
        piggy = await conn.request(
            fetch_now(group, member, 2, acks={tp: batches}, is_renew_ack=False).build(1)
        )
        assert partitions_of(piggy)[tp].acknowledge_error_code == ErrorCode.invalid_request, why
        # Nothing changed: the records are still the member's to accept.
        accepted = await conn.request(
            share_acknowledge(
                group_id=group,
                member_id=member,
                session_epoch=3,
                acks={tp: [(0, 9, (AcknowledgeType.ACCEPT,))]},
            ).build(1)
        )
        assert errors_of(accepted) == {tp: 0}

    with_connection(broker.bootstrap, go)


def test_per_offset_types_gap_reject_release(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker, records=4)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp)
        acks: Acks = {
            tp: [
                (
                    0,
                    3,
                    (
                        AcknowledgeType.ACCEPT,
                        AcknowledgeType.GAP,
                        AcknowledgeType.REJECT,
                        AcknowledgeType.RELEASE,
                    ),
                )
            ]
        }
        assert errors_of(
            await conn.request(
                share_acknowledge(
                    group_id=group, member_id=member, session_epoch=1, acks=acks, is_renew_ack=False
                ).build(1)
            )
        ) == {tp: 0}
        other = await conn.request(fetch_now(group, "other", 0, partitions=[tp]).build(1))
        assert acquired(other) == {tp: [(3, 3, 2)]}

    with_connection(broker.bootstrap, go)


def test_v2_renew_keeps_the_records_locked(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker, records=3, share_record_lock_duration_ms="1000")
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        fetched = await open_and_fetch(conn, group, member, tp, version=2)
        assert acquired(fetched) == {tp: [(0, 2, 1)]}
        await asyncio.sleep(0.6)
        renew = share_acknowledge(
            group_id=group,
            member_id=member,
            session_epoch=1,
            acks={tp: [(0, 2, (AcknowledgeType.RENEW,))]},
            is_renew_ack=True,
        ).build(2)
        renewed = await conn.request(renew)
        assert errors_of(renewed) == {tp: 0}
        assert renewed.acquisition_lock_timeout.total_seconds() == 1
        await asyncio.sleep(0.6)  # past the first lock, within the renewed one
        other = await Connection.open("127.0.0.1", broker.port)
        try:
            taken = await other.request(fetch_now(group, "other", 0, partitions=[tp]).build(1))
            assert acquired(taken) == {}
        finally:
            await other.close()
        accept = share_acknowledge(
            group_id=group,
            member_id=member,
            session_epoch=2,
            acks={tp: [(0, 2, (AcknowledgeType.ACCEPT,))]},
        ).build(2)
        assert errors_of(await conn.request(accept)) == {tp: 0}

    with_connection(broker.bootstrap, go)


def test_v2_renew_disabled_by_the_group(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(
        broker, records=3, share_renew_acknowledge_enable="false"
    )
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp, version=2)
        renew = share_acknowledge(
            group_id=group,
            member_id=member,
            session_epoch=1,
            acks={tp: [(0, 2, (AcknowledgeType.RENEW,))]},
            is_renew_ack=True,
        ).build(2)
        assert errors_of(await conn.request(renew)) == {tp: ErrorCode.invalid_record_state}

    with_connection(broker.bootstrap, go)


def test_v1_has_no_lock_timeout_and_v2_reports_it(broker: BrokerProcess) -> None:
    _topic, topic_id, group, member = setup(broker, records=1, share_record_lock_duration_ms="2000")
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        await open_and_fetch(conn, group, member, tp)
        v1 = await conn.request(
            share_acknowledge(
                group_id=group,
                member_id=member,
                session_epoch=1,
                acks={tp: [(0, 0, (AcknowledgeType.RELEASE,))]},
            ).build(1)
        )
        assert errors_of(v1) == {tp: 0}
        assert not hasattr(v1, "acquisition_lock_timeout")
        v2 = await conn.request(
            share_acknowledge(group_id=group, member_id=member, session_epoch=2).build(2)
        )
        assert v2.acquisition_lock_timeout.total_seconds() == 2

    with_connection(broker.bootstrap, go)


@pytest.mark.parametrize(("group_id", "member_id"), [(None, "m"), ("g", None), ("g", "x" * 37)])
def test_group_and_member_ids_are_checked(
    broker: BrokerProcess, group_id: str | None, member_id: str | None
) -> None:
    response = call1(
        broker.bootstrap,
        share_acknowledge(group_id=group_id, member_id=member_id, session_epoch=1).build(1),
    )
    assert response.error_code == ErrorCode.invalid_request
