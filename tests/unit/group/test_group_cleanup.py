"""Groups left without offsets live until the offsets cleanup pass (Kafka's
GroupCoordinatorShard.cleanupGroupMetadata): a simple group (offsets only) survives
OffsetDelete of its last offset, Empty, listed, described and deletable; the cleanup
pass deletes it, and every Empty classic or consumer group without offsets. Replay
of the log at any point gives the same groups (group/classic/coordinator.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shoal.coordinator import NO_OFFSET
from shoal.group import GroupCoordinatorShard
from shoal.group import records as r
from shoal.group.committed_offsets import OffsetToCommit
from shoal.group.results import DeleteShareState
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness
from tests.unit.group.mixed_groups import Mixed

RETENTION_MS = 7 * 24 * 3_600_000


def _write(h: Harness, records: Iterable[r.CoordinatorRecord]) -> None:
    for record in records:
        h.write(record)


def _commit(h: Harness, group_id: str, partitions: tuple[int, ...] = (0,)) -> None:
    result = h.shard.classic.commit_offsets(
        group_id=group_id,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=tuple(
            OffsetToCommit(topic="t", partition=p, offset=5, leader_epoch=-1, metadata="")
            for p in partitions
        ),
        api_version=9,
        now_ms=h.clock.wall_ms(),
    )
    assert [a.error for a in result.response] == [None] * len(partitions)
    _write(h, result.records)


def _delete_offsets(h: Harness, group_id: str, partitions: tuple[int, ...] = (0,)) -> None:
    error, result = h.shard.classic.delete_offsets(
        group_id=group_id, partitions=[("t", p) for p in partitions]
    )
    assert error is None and [a.error for a in result.response] == [None] * len(partitions)
    _write(h, result.records)


def _cleanup(h: Harness) -> tuple[r.CoordinatorRecord, ...]:
    return h.run(
        h.shard.cleanup_group_metadata(now_ms=h.clock.wall_ms(), retention_ms=RETENTION_MS)
    ).records


def _reloaded(h: Harness) -> GroupCoordinatorShard:
    shard = h.new_shard()
    for offset, record in enumerate(h.log):
        shard.replay(record, offset)
    shard.on_loaded(now_ms=h.clock.monotonic_ms())
    assert shard.durable_state() == h.shard.durable_state()
    return shard


def _listed(shard: GroupCoordinatorShard) -> list[tuple[str, str, str, str]]:
    return [
        (g.group_id, g.protocol_type, g.group_state, g.group_type)
        for g in shard.classic.list_groups(states_filter=(), types_filter=())
    ] + [
        (g.group_id, g.protocol_type, g.group_state, g.group_type)
        for g in shard.list_consumer_groups(states_filter=(), types_filter=())
    ]


def _described(shard: GroupCoordinatorShard, group_id: str) -> tuple[Any, ...]:
    (d,) = shard.classic.describe([group_id])
    return (d.state, d.protocol_type, d.members)


def test_simple_group_outlives_its_last_offset_until_the_cleanup_pass(harness: Harness) -> None:
    harness.set_topics(t=2)
    _commit(harness, "simple", (0, 1))
    _delete_offsets(harness, "simple", (0,))
    _delete_offsets(harness, "simple", (1,))  # the last offset
    assert harness.shard.classic.fetch_offsets(group_id="simple", partitions=None) == (None, ())
    for shard in (harness.shard, _reloaded(harness)):
        assert shard.group_type("simple") == "classic"
        assert _listed(shard) == [("simple", "", "Empty", "classic")]
        assert _described(shard, "simple") == ("Empty", "", ())
    harness.advance(60_000)
    records = _cleanup(harness)
    assert records == (r.CoordinatorRecord(key=r.GroupMetadataKey(group_id="simple"), value=None),)
    for shard in (harness.shard, _reloaded(harness)):
        assert shard.group_type("simple") is None
        assert _listed(shard) == []
        assert _described(shard, "simple") == ("Dead", "", ())
    assert _cleanup(harness) == ()


def test_delete_groups_of_a_simple_group_without_offsets(harness: Harness) -> None:
    harness.set_topics(t=1)
    _commit(harness, "simple")
    _delete_offsets(harness, "simple")
    assert harness.shard.classic.has_group("simple")  # DeleteGroups is routed to it
    records, results = harness.shard.classic.delete_groups(["simple"])
    assert [(d.group_id, d.error) for d in results] == [("simple", None)]
    assert records[0] == r.CoordinatorRecord(key=r.GroupMetadataKey(group_id="simple"), value=None)
    _write(harness, records)
    assert harness.shard.group_type("simple") is None
    assert _reloaded(harness).group_type("simple") is None


def test_cleanup_keeps_groups_with_live_offsets_and_deletes_empty_ones(harness: Harness) -> None:
    harness.set_topics(t=4)
    _commit(harness, "kept")
    m = Mixed(harness)
    a, b = m.stable_classic_pair()  # classic group "g", protocol type consumer
    m.leave(a)
    m.leave(b)
    assert harness.shard.classic.groups.state_of("g") == "Empty"
    assert _described(harness.shard, "g")[:2] == ("Empty", "consumer")
    records = _cleanup(harness)
    assert records == (r.CoordinatorRecord(key=r.GroupMetadataKey(group_id="g"), value=None),)
    assert harness.shard.group_type("g") is None
    assert harness.shard.group_type("kept") == "classic"  # its offset is not expired
    assert _reloaded(harness).group_type("g") is None


def test_cleanup_deletes_an_empty_consumer_group_once_its_offsets_are_gone(
    harness: Harness,
) -> None:
    harness.set_topics(t=4)
    m = Mixed(harness)
    joined = m.beat("m1", 0, ["t"])
    assert joined.error is None
    result = harness.shard.classic.commit_offsets(
        group_id="g",
        member_id="m1",
        generation_id=joined.member_epoch,
        group_instance_id=None,
        offsets=(OffsetToCommit(topic="t", partition=0, offset=3, leader_epoch=-1, metadata=""),),
        api_version=9,
        now_ms=harness.clock.wall_ms(),
    )
    assert [a.error for a in result.response] == [None]
    _write(harness, result.records)
    assert m.beat("m1", -1).error is None  # leaves: the group is Empty
    assert _cleanup(harness) == ()  # its offset keeps it
    _delete_offsets(harness, "g")
    for shard in (harness.shard, _reloaded(harness)):
        assert shard.group_type("g") == "consumer"
        assert _listed(shard) == [("g", "consumer", "Empty", "consumer")]
    records = _cleanup(harness)
    assert records[-1] == r.CoordinatorRecord(
        key=r.ConsumerGroupMetadataKey(group_id="g"), value=None
    )
    for shard in (harness.shard, _reloaded(harness)):
        assert shard.group_type("g") is None
        assert _listed(shard) == []


def test_pruning_keeps_the_last_offset_record_of_a_simple_group_without_offsets(
    harness: Harness,
) -> None:
    harness.set_topics(t=1)
    _commit(harness, "simple")
    _commit(harness, "other")
    _delete_offsets(harness, "simple")
    anchor = 0  # simple's commit: no live key is left to hold it
    assert harness.shard.prune_offset() == anchor
    pruned = harness.new_shard()
    for offset in range(anchor, len(harness.log)):
        pruned.replay(harness.log[offset], offset)
    assert pruned.group_type("simple") == "classic"
    assert pruned.durable_state() == harness.shard.durable_state()
    _cleanup(harness)  # deletes simple: only other's commit is needed now
    assert harness.shard.prune_offset() == 1
    unknown = harness.new_shard()
    for record in harness.log[:3]:
        unknown.replay(record, NO_OFFSET)
    assert unknown.prune_offset() is None  # offsets unknown: nothing may be pruned


def test_delete_any_groups_answers_every_type_in_request_order(harness: Harness) -> None:
    """DeleteGroups of mixed ids as one shard write: a simple group, an empty share
    group with state (pending, with its state deletion as the effect), a live share
    group (NON_EMPTY_GROUP) and an unknown id, answered in request order; the simple
    group's tombstones and the share group's move to deleting are one result."""
    harness.set_topics(t=2)
    _commit(harness, "simple")
    harness.join("emptied", "m1", ["t"])
    harness.complete_inits()
    harness.heartbeat("emptied", "m1", -1)
    harness.join("live", "m2", ["t"])
    harness.take_effects()
    result = harness.run(
        harness.shard.delete_any_groups(group_ids=["live", "simple", "nope", "emptied"])
    )
    assert [(x.group_id, x.error, x.pending) for x in result.response.results] == [
        ("live", ErrorCode.non_empty_group, False),
        ("simple", None, False),
        ("nope", ErrorCode.group_id_not_found, False),
        ("emptied", None, True),
    ]
    [delete] = result.effects
    assert isinstance(delete, DeleteShareState) and delete.group_id == "emptied"
    assert {record.key.group_id for record in result.records} == {"simple", "emptied"}
    assert not harness.shard.classic.has_group("simple")
    assert harness.shard.group_state("emptied") == "Dead"
