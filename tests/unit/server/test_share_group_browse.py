"""ShareGroupBrowse (30000, Shoal's extension API) at the handler: the in-flight window
as the share-partition leader holds it (state, delivery count, holder, lock expiry),
capped, read without changing anything; its errors; and its authorization (DESCRIBE
on the group and the topic, which lets a principal browse but not acquire).

Real handlers and services of an in-process broker on a manual clock (no socket); the
share-partition is driven through the share service as a consumer's requests would
(`ShareRig` of `tests/support/share_rig.py`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from shoal.client.share_browse import share_group_browse
from shoal.client.share_requests import heartbeat, share_fetch
from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.security.acl import AclOperation as Op
from shoal.security.acl import KafkaPrincipal
from shoal.security.acl import ResourceType as RT
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.share.acknowledge import AckBatch
from shoal.share.persister import SharePartitionKey
from tests.support.delivery_holds import DUE_MS, give_holds, mark_entries, split_blocked_and_due
from tests.support.share_rig import ShareRig, manual_broker
from tests.unit.server.authz_harness import ALICE, Harness, send, topic_id

CAROL = KafkaPrincipal("User", "carol")
"""A consumer: READ on the group and the topic."""
MEMBER = "m" * 22


def _browse(broker: Broker, partitions: tuple[int, ...] = (0,), **kw: Any) -> Any:
    call = share_group_browse(
        kw.pop("group", "g"), kw.pop("topic", "t"), partitions, max_entries=kw.pop("max", 100)
    )
    assert not kw, kw
    ctx = RequestContext(
        services=broker.services,
        connection=ConnectionInfo(1, "127.0.0.1", 5000),
        api_key=call.api_key,
        api_version=0,
        correlation_id=1,
        client_id="browse-test",
    )
    return asyncio.run(broker.handlers[call.api_key].handle(ctx, call.build(0)))


def _rows(response: Any) -> list[tuple[int, int, str, int, str | None, int]]:
    (partition,) = response.partitions
    return [
        (
            e.first_offset,
            e.last_offset,
            e.state_name,
            e.delivery_count,
            e.member_id,
            e.lock_expires_in_ms,
        )
        for e in partition.entries
    ]


def test_browse_shows_states_delivery_counts_holders_and_lock_expiry(broker: Broker) -> None:
    rig = ShareRig(broker)  # m1 holds offsets 10-14
    response = _browse(broker)
    assert response.error_code == ErrorCode.none
    assert response.topic_id == rig.tp.topic_id
    assert _rows(response) == [(10, 14, "ACQUIRED", 1, "m1", 30_000)]
    (partition,) = response.partitions
    assert (partition.loaded, partition.start_offset, partition.end_offset) == (True, 10, 14)
    assert not partition.truncated

    rig.clock.advance(4_000)
    rig.acknowledge(
        AckBatch(10, 11, (int(AcknowledgeType.ACCEPT),)),
        AckBatch(12, 12, (int(AcknowledgeType.RELEASE),)),
    )
    assert _rows(_browse(broker)) == [
        (12, 12, "AVAILABLE", 1, None, -1),
        (13, 13, "ACQUIRED", 1, "m1", 26_000),
        (14, 14, "ACQUIRED", 1, "m1", 26_000),
    ]


def test_browse_shows_when_a_delayed_redelivery_is_due(broker: Broker) -> None:
    """With delayed redelivery a RELEASEd record is AVAILABLE but held back: the entry
    says how long for (tagged RedeliveryDueInMs), counting down on the manual clock,
    and -1 once it is due (or for records never held back)."""
    rig = ShareRig(broker)  # m1 holds offsets 10-14 (first delivery)
    asyncio.run(broker.group_configs.alter("g", {"shoal.share.redelivery.backoff.ms": "2000"}))
    rig.acknowledge(AckBatch(12, 12, (int(AcknowledgeType.RELEASE),)))

    def due() -> list[tuple[int, str, int]]:
        (partition,) = _browse(broker).partitions
        return [(e.first_offset, e.state_name, e.redelivery_due_in_ms) for e in partition.entries]

    assert due() == [(10, "ACQUIRED", -1), (11, "ACQUIRED", -1), (12, "AVAILABLE", 2_000)] + [
        (o, "ACQUIRED", -1) for o in (13, 14)
    ]
    rig.clock.advance(1_500)
    assert due()[2] == (12, "AVAILABLE", 500)
    assert rig.fetch() == 0, "held back: not acquired yet"
    rig.clock.advance(500)
    assert due()[2] == (12, "AVAILABLE", -1)
    assert rig.fetch() == 1


def test_browse_carries_what_key_order_and_scheduled_delivery_hold_back(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The share-partition's `delivery_holds` (here values the test gives: the core's
    own are tested with the core) and each entry's `deliver_at_ms` and `key_blocked`
    reach the answer as its tagged fields; nothing held back reads as the defaults."""
    ShareRig(broker)  # m1 holds offsets 10-14
    (plain,) = _browse(broker).partitions
    assert (plain.blocked_keys, plain.blocked_records, plain.top_blocked_keys) == (0, 0, ())
    assert (plain.scheduled_records, plain.next_due_ms, plain.malformed_deliver_at) == (0, -1, 0)
    assert [(e.deliver_at_ms, e.key_blocked) for e in plain.entries] == [(-1, False)]

    give_holds(monkeypatch)
    mark_entries(monkeypatch, split_blocked_and_due)
    (held,) = _browse(broker).partitions
    assert (held.blocked_keys, held.blocked_records) == (2, 7)
    assert [(k.key, k.held_records) for k in held.top_blocked_keys] == [(b"k1", 5), (b"\xff", 2)]
    assert (held.scheduled_records, held.next_due_ms, held.malformed_deliver_at) == (
        3,
        DUE_MS,
        1,
    )
    assert [(e.first_offset, e.deliver_at_ms, e.key_blocked) for e in held.entries] == [
        (10, -1, True),
        (13, DUE_MS, False),
    ]


def test_browse_acquires_nothing(broker: Broker) -> None:
    rig = ShareRig(broker)
    rig.acknowledge(AckBatch(12, 12, (int(AcknowledgeType.RELEASE),)))
    sp = broker.share_service.partitions.get(SharePartitionKey("g", rig.tp.topic_id, 0))
    assert sp is not None
    before = (sp.in_flight(), sp.next_lock_deadline(), sp.next_fetch_offset())
    rig.produce(3)  # offsets 15-17, never acquired
    for _ in range(3):
        _browse(broker)
    assert (sp.in_flight(), sp.next_lock_deadline(), sp.next_fetch_offset()) == before
    sp.check_invariants()
    # The member then gets exactly the released record (its second delivery) and the
    # three new ones (their first): the browses took none of them.
    assert rig.fetch() == 4
    rows = _rows(_browse(broker))
    assert (12, 12, "ACQUIRED", 2, "m1", 30_000) in rows
    assert (15, 17, "ACQUIRED", 1, "m1", 30_000) in rows


def test_browse_is_capped_by_the_request_and_by_themanual_broker(tmp_path: Path) -> None:
    broker = manual_broker(tmp_path, **{"shoal.share.browse.max.entries": "2"})
    try:
        rig = ShareRig(broker)
        rig.acknowledge(AckBatch(10, 10, (int(AcknowledgeType.RELEASE),)))  # splits 10-14
        capped = _browse(broker, max=1_000)  # the broker's limit wins
        assert [r[:2] for r in _rows(capped)] == [(10, 10), (11, 11)]
        assert capped.partitions[0].truncated
        one = _browse(broker, max=1)
        assert [r[:2] for r in _rows(one)] == [(10, 10)] and one.partitions[0].truncated
        none = _browse(broker, max=0)
        assert _rows(none) == [] and none.partitions[0].truncated
    finally:
        broker.logs.close()


def test_browse_of_a_share_partition_not_in_memory_says_so(broker: Broker) -> None:
    broker.logs.create_topic("t", partitions=2, configs={})
    response = _browse(broker, (1, 0))
    assert [(p.partition_index, p.error_code, p.loaded) for p in response.partitions] == [
        (1, ErrorCode.none, False),
        (0, ErrorCode.none, False),
    ]
    assert broker.share_service.partitions.keys() == []  # browsing loaded nothing


def test_browse_errors(broker: Broker) -> None:
    broker.logs.create_topic("t", partitions=1, configs={})
    unknown = _browse(broker, topic="nope")
    assert (unknown.error_code, unknown.partitions) == (ErrorCode.unknown_topic_or_partition, ())
    assert _browse(broker, group="").error_code == ErrorCode.invalid_group_id
    assert _browse(broker, max=-1).error_code == ErrorCode.invalid_request
    (missing,) = _browse(broker, (3,)).partitions
    assert missing.error_code == ErrorCode.unknown_topic_or_partition


def _join_and_fetch(h: Harness, principal: Any) -> Any:
    send(h, principal, heartbeat("g", MEMBER, 0, ["t"]))
    call = share_fetch(
        group_id="g",
        member_id=MEMBER,
        session_epoch=0,
        partitions=[(topic_id(h, "t"), 0)],
        max_wait_ms=0,
        max_records=10,
    )
    return send(h, principal, call)


def test_describe_on_group_and_topic_lets_a_principal_browse_but_not_acquire(h: Harness) -> None:
    browse = share_group_browse("g", "t", [0], max_entries=10)
    assert send(h, ALICE, browse).error_code == ErrorCode.group_authorization_failed
    h.allow(Op.DESCRIBE, RT.GROUP, "g")
    assert send(h, ALICE, browse).error_code == ErrorCode.topic_authorization_failed
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    assert send(h, ALICE, browse).error_code == ErrorCode.none
    # Not even a join, nor an acquisition.
    assert _join_and_fetch(h, ALICE).error_code == ErrorCode.group_authorization_failed
    # A consumer holding READ loads the share-partition; the browser then sees its window.
    h.grant(CAROL, Op.READ, RT.GROUP, "g")
    h.grant(CAROL, Op.READ, RT.TOPIC, "t")
    assert _join_and_fetch(h, CAROL).error_code == ErrorCode.none
    (partition,) = send(h, ALICE, browse).partitions
    assert (partition.error_code, partition.loaded) == (ErrorCode.none, True)


def test_browse_with_share_groups_off_is_unsupported(tmp_path: Path) -> None:
    broker = manual_broker(tmp_path, **{"share.version": "0"})
    try:
        broker.logs.create_topic("t", partitions=1, configs={})
        response = _browse(broker)
        assert (response.error_code, response.partitions) == (ErrorCode.unsupported_version, ())
    finally:
        broker.logs.close()
