"""Transactional offset commits on the shard (group/txn_offsets.py): TxnOffsetCommit
holds offsets pending per (group, producer id); the marker (`complete_transaction`)
commits or drops them; OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT
meanwhile; retention and deletions treat them as Kafka 4.2 does. The harness fixture
checks at teardown that replaying the log (whole, compacted, pruned, re-written)
rebuilds the same committed and pending offsets."""

from __future__ import annotations

from collections.abc import Sequence

from shoal.clock import ManualClock
from shoal.coordinator.placement import partition_for
from shoal.coordinator.runtime import CoordinatorRuntime, InMemoryRecordSink
from shoal.group import GroupCoordinatorShard
from shoal.group import records as r
from shoal.group.committed_offsets import FetchedOffset, OffsetToCommit
from shoal.group.txn_offsets import PendingOffset
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness
from tests.unit.group.test_classic import Classic
from tests.unit.group.test_consumer_heartbeat import beat

PID = 4000
OTHER_PID = 4001
EPOCH = 3


def _offsets(*entries: tuple[str, int, int]) -> tuple[OffsetToCommit, ...]:
    return tuple(
        OffsetToCommit(topic=t, partition=p, offset=o, leader_epoch=-1, metadata=f"md{o}")
        for t, p, o in entries
    )


def txn_commit(
    harness: Harness,
    *entries: tuple[str, int, int],
    group: str = "g",
    producer_id: int = PID,
    producer_epoch: int = EPOCH,
    member_id: str = "",
    generation_id: int = -1,
) -> list[ErrorCode | None]:
    result = harness.shard.classic.txn_commit_offsets(
        group_id=group,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        member_id=member_id,
        generation_id=generation_id,
        group_instance_id=None,
        offsets=_offsets(*entries),
        now_ms=harness.clock.wall_ms(),
    )
    for record in result.records:
        harness.write(record)
    return [p.error for p in result.response]


def plain_commit(harness: Harness, *entries: tuple[str, int, int], group: str = "g") -> None:
    result = harness.shard.classic.commit_offsets(
        group_id=group,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=_offsets(*entries),
        api_version=9,
        now_ms=harness.clock.wall_ms(),
    )
    assert [p.error for p in result.response] == [None] * len(entries)
    for record in result.records:
        harness.write(record)


def marker(
    harness: Harness, *, commit: bool, producer_id: int = PID, producer_epoch: int = EPOCH
) -> tuple[r.CoordinatorRecord, ...]:
    result = harness.run(
        harness.shard.complete_transaction(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
        )
    )
    assert result.response == len(result.records)
    return result.records


def fetch(
    harness: Harness,
    partitions: Sequence[tuple[str, int]] | None,
    *,
    stable: bool = False,
    group: str = "g",
) -> list[tuple[int, ErrorCode | None]]:
    error, fetched = harness.shard.classic.fetch_offsets(
        group_id=group, partitions=partitions, require_stable=stable
    )
    assert error is None
    return [(f.offset, f.error) for f in fetched]


def test_pending_offsets_are_invisible_until_the_commit_marker(harness: Harness) -> None:
    plain_commit(harness, ("t", 0, 5))
    assert txn_commit(harness, ("t", 0, 10), ("t", 1, 20)) == [None, None]
    assert [type(rec.key).__name__ for rec in harness.log[-2:]] == ["PendingTxnOffsetKey"] * 2
    assert fetch(harness, [("t", 0), ("t", 1), ("u", 0)]) == [(5, None), (-1, None), (-1, None)]
    assert fetch(harness, [("t", 0), ("t", 1), ("u", 0)], stable=True) == [
        (-1, ErrorCode.unstable_offset_commit),
        (-1, ErrorCode.unstable_offset_commit),
        (-1, None),
    ]
    # Fetching every partition lists the committed ones only; unstable ones flagged.
    assert fetch(harness, None, stable=True) == [(-1, ErrorCode.unstable_offset_commit)]
    written = marker(harness, commit=True)
    assert [type(rec.key).__name__ for rec in written] == [
        "OffsetCommitKey",
        "OffsetCommitKey",
        "PendingTxnOffsetKey",
        "PendingTxnOffsetKey",
    ]
    assert [rec.value is None for rec in written] == [False, False, True, True]
    assert fetch(harness, [("t", 0), ("t", 1)], stable=True) == [(10, None), (20, None)]
    _error, fetched = harness.shard.classic.fetch_offsets(group_id="g", partitions=[("t", 1)])
    assert fetched == (FetchedOffset(topic="t", partition=1, offset=20, metadata="md20"),)
    assert marker(harness, commit=True) == ()  # a repeated marker writes nothing
    assert marker(harness, commit=False) == ()


def test_abort_drops_only_that_producers_offsets(harness: Harness) -> None:
    plain_commit(harness, ("t", 0, 5))
    assert txn_commit(harness, ("t", 0, 10)) == [None]
    assert txn_commit(harness, ("t", 1, 30), producer_id=OTHER_PID) == [None]
    written = marker(harness, commit=False)
    assert [(type(rec.key).__name__, rec.value) for rec in written] == [
        ("PendingTxnOffsetKey", None)
    ]
    assert fetch(harness, [("t", 0), ("t", 1)], stable=True) == [
        (5, None),
        (-1, ErrorCode.unstable_offset_commit),
    ]
    assert harness.shard.classic.txn_offsets.snapshot() == {
        ("g", OTHER_PID): {
            ("t", 1): PendingOffset(
                producer_epoch=EPOCH,
                offset=30,
                leader_epoch=-1,
                metadata="md30",
                commit_timestamp_ms=harness.clock.wall_ms(),
            )
        }
    }


def test_a_later_commit_in_the_transaction_replaces_the_pending_offset(harness: Harness) -> None:
    assert txn_commit(harness, ("t", 0, 10)) == [None]
    assert txn_commit(harness, ("t", 0, 12)) == [None]
    marker(harness, commit=True)
    assert fetch(harness, [("t", 0)]) == [(12, None)]


def test_a_plain_commit_after_the_transactional_one_wins(harness: Harness) -> None:
    """Kafka keeps the committed offset whose record is newer."""
    assert txn_commit(harness, ("t", 0, 10), ("t", 1, 11)) == [None, None]
    plain_commit(harness, ("t", 0, 99))
    written = marker(harness, commit=True)
    committed = [rec.key for rec in written if isinstance(rec.key, r.OffsetCommitKey)]
    assert committed == [r.OffsetCommitKey(group_id="g", topic="t", partition=1)]
    assert fetch(harness, [("t", 0), ("t", 1)], stable=True) == [(99, None), (11, None)]


def test_a_zombie_marker_with_an_older_epoch_is_ignored(harness: Harness) -> None:
    assert txn_commit(harness, ("t", 0, 10), producer_epoch=EPOCH + 1) == [None]
    assert txn_commit(harness, ("t", 1, 10), producer_epoch=EPOCH) == [
        ErrorCode.invalid_producer_epoch
    ]
    assert marker(harness, commit=True, producer_epoch=EPOCH) == ()
    assert fetch(harness, [("t", 0)], stable=True) == [(-1, ErrorCode.unstable_offset_commit)]
    # Transaction V2 ends with the epoch bumped: a marker above the offsets' epoch settles them.
    assert len(marker(harness, commit=True, producer_epoch=EPOCH + 2)) == 2
    assert fetch(harness, [("t", 0)], stable=True) == [(10, None)]


def test_metadata_too_large_is_refused_per_partition(harness: Harness) -> None:
    result = harness.shard.classic.txn_commit_offsets(
        group_id="g",
        producer_id=PID,
        producer_epoch=EPOCH,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=(
            OffsetToCommit(topic="t", partition=0, offset=1, leader_epoch=-1, metadata="x" * 5000),
            OffsetToCommit(topic="t", partition=1, offset=1, leader_epoch=2, metadata=None),
        ),
        now_ms=0,
    )
    assert [p.error for p in result.response] == [ErrorCode.offset_metadata_too_large, None]
    assert len(result.records) == 1
    for record in result.records:
        harness.write(record)


def test_retention_keeps_partitions_with_pending_offsets(harness: Harness) -> None:
    retention = 60_000
    plain_commit(harness, ("t", 0, 5), ("t", 1, 6))
    assert txn_commit(harness, ("t", 0, 10)) == [None]
    now = harness.clock.wall_ms() + retention
    expired = harness.shard.classic.expire_offsets(now_ms=now, retention_ms=retention)
    assert [(rec.key, rec.value) for rec in expired] == [
        (r.OffsetCommitKey(group_id="g", topic="t", partition=1), None)
    ]  # partition 0 kept, and the group (no GroupMetadata tombstone) too
    for record in expired:
        harness.write(record)
    assert harness.shard.classic.has_group("g")
    marker(harness, commit=True)
    assert fetch(harness, [("t", 0)]) == [(10, None)]


def test_pending_only_group_exists_and_deleting_it_drops_them(harness: Harness) -> None:
    assert txn_commit(harness, ("t", 0, 10), group="solo") == [None]
    assert harness.shard.classic.has_group("solo")
    listed = harness.shard.classic.list_groups(states_filter=(), types_filter=())
    assert [(g.group_id, g.group_state) for g in listed] == [("solo", "Empty")]
    [described] = harness.shard.classic.describe(["solo"])
    assert described.state == "Empty"
    records, results = harness.shard.classic.delete_groups(["solo"])
    assert [res.error for res in results] == [None]
    assert (
        r.CoordinatorRecord(
            key=r.PendingTxnOffsetKey(group_id="solo", producer_id=PID, topic="t", partition=0),
            value=None,
        )
        in records
    )
    for record in records:
        harness.write(record)
    assert harness.shard.classic.txn_offsets.snapshot() == {}
    assert marker(harness, commit=True) == ()
    assert fetch(harness, [("t", 0)], group="solo") == [(-1, None)]


def test_deleting_a_topic_or_an_offset_drops_its_pending_offsets(harness: Harness) -> None:
    plain_commit(harness, ("t", 0, 1), ("u", 0, 2))
    assert txn_commit(harness, ("t", 0, 10), ("u", 0, 20), ("u", 1, 21)) == [None] * 3
    harness.run(harness.shard.on_topics_deleted(topic_names=["t"]))
    assert fetch(harness, [("t", 0), ("u", 0)], stable=True) == [
        (-1, None),
        (-1, ErrorCode.unstable_offset_commit),
    ]
    error, result = harness.shard.classic.delete_offsets(group_id="g", partitions=[("u", 0)])
    assert error is None
    for record in result.records:
        harness.write(record)
    # u-0's committed offset and its pending one are gone; u-1 (nothing committed) stays.
    assert fetch(harness, [("u", 0), ("u", 1)], stable=True) == [
        (-1, None),
        (-1, ErrorCode.unstable_offset_commit),
    ]
    written = marker(harness, commit=True)
    assert [rec.key for rec in written if rec.value is not None] == [
        r.OffsetCommitKey(group_id="g", topic="u", partition=1)
    ]


def test_the_marker_settles_only_the_groups_of_its_offsets_partition() -> None:
    sinks: list[InMemoryRecordSink[r.CoordinatorRecord]] = [InMemoryRecordSink() for _ in range(4)]
    runtime: CoordinatorRuntime[GroupCoordinatorShard, r.CoordinatorRecord] = CoordinatorRuntime(
        new_shard=lambda _p: GroupCoordinatorShard(clock=ManualClock()), sinks=sinks
    )
    groups = [f"g{i}" for i in range(20)]
    by_partition = {partition_for(g, 4): g for g in groups}
    assert len(by_partition) >= 2, by_partition
    (p_a, g_a), (p_b, g_b) = sorted(by_partition.items())[:2]
    for group_id in (g_a, g_b):
        runtime.write(
            runtime.partition_of(group_id),
            lambda shard, group_id=group_id: shard.classic.txn_commit_offsets(
                group_id=group_id,
                producer_id=PID,
                producer_epoch=EPOCH,
                member_id="",
                generation_id=-1,
                group_instance_id=None,
                offsets=_offsets(("t", 0, 7)),
                now_ms=0,
            ),
        )
    written = runtime.write(
        p_a,
        lambda shard: shard.complete_transaction(
            producer_id=PID, producer_epoch=EPOCH, commit=True
        ),
    ).records
    assert {rec.key.group_id for rec in written} == {g_a}
    pending = {key for _, shard in runtime.shards() for key in shard.classic.txn_offsets.snapshot()}
    assert pending == {(g_b, PID)}
    assert runtime.shard_at(p_b).classic.txn_offsets.snapshot().keys() == {(g_b, PID)}
    assert p_b != p_a


def test_pending_records_round_trip_through_the_codec() -> None:
    record = r.CoordinatorRecord(
        key=r.PendingTxnOffsetKey(group_id="g", producer_id=PID, topic="t", partition=3),
        value=r.PendingTxnOffsetValue(
            producer_epoch=EPOCH, offset=42, leader_epoch=7, metadata="m", commit_timestamp=9
        ),
    )
    key, value = r.CODEC.encode(record)
    assert key[:2] == (1000).to_bytes(2, "big")
    assert r.CODEC.decode(key, value) == record
    tombstone = r.CoordinatorRecord(key=record.key, value=None)
    assert r.CODEC.decode(*r.CODEC.encode(tombstone)) == tombstone


# ---- validation (Kafka 4.2's validateTransactionalOffsetCommit) -------------------------


def _classic_txn(c: Classic, member: str, generation: int, group: str = "g") -> list[object]:
    result = c.classic.txn_commit_offsets(
        group_id=group,
        producer_id=PID,
        producer_epoch=EPOCH,
        member_id=member,
        generation_id=generation,
        group_instance_id=None,
        offsets=_offsets(("t", 0, 1)),
        now_ms=c.now,
    )
    return [p.error for p in c.runtime.write(0, lambda _shard: result).response]


def test_member_fields_are_checked_against_a_classic_group() -> None:
    c = Classic(initial_rebalance_delay_ms=3_000, max_size=3)
    leader, _follower = c.stable_pair()
    assert _classic_txn(c, "", -1) == [None]  # v0-v2: no member fields, group not empty
    assert _classic_txn(c, leader, 1) == [None]
    assert _classic_txn(c, leader, 0) == [ErrorCode.illegal_generation]
    assert _classic_txn(c, "ghost", 1) == [ErrorCode.unknown_member_id]
    assert _classic_txn(c, "", 1, group="nope") == [ErrorCode.illegal_generation]
    assert _classic_txn(c, "", -1, group="") == [ErrorCode.invalid_group_id]
    loaded = c.runtime.load_partition(0, enumerate(c.sink.records))
    assert loaded.classic.txn_offsets.snapshot() == c.classic.txn_offsets.snapshot()


def test_share_and_consumer_group_ids(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("share", "m1", ["t"])
    assert txn_commit(harness, ("t", 0, 1), group="share") == [ErrorCode.group_id_not_found]
    harness.write(
        r.CoordinatorRecord(
            key=r.ConsumerGroupMetadataKey(group_id="cg"),
            value=r.ConsumerGroupMetadataValue(epoch=1),
        )
    )
    assert txn_commit(harness, ("t", 0, 1), group="cg") == [None]
    assert txn_commit(harness, ("t", 0, 1), group="cg", member_id="ghost", generation_id=1) == [
        ErrorCode.unknown_member_id
    ]


def test_consumer_group_members_commit_at_their_epoch(harness: Harness) -> None:
    """A KIP-848 member's epoch is its generation; a stale one is ILLEGAL_GENERATION
    for TxnOffsetCommit (Kafka turns STALE_MEMBER_EPOCH into it)."""
    harness.set_topics(t=1)
    joined = beat(harness, "member-a", 0, ["t"])
    assert joined.error is None
    epoch = joined.member_epoch

    def commit(generation_id: int) -> list[ErrorCode | None]:
        return txn_commit(
            harness, ("t", 0, 1), group="cg", member_id="member-a", generation_id=generation_id
        )

    assert commit(epoch) == [None]
    assert commit(epoch - 1) == [ErrorCode.illegal_generation]
    assert txn_commit(harness, ("t", 0, 1), group="cg") == [None]  # no member fields
