"""ShareCoordinatorShard in the coordinator-runtime shape: call an operation, check the
records and the response, apply them (append + replay), check the state.

Conformance items covered: 63-70 (docs/design/coordinators.md §2.3-2.5).
"""

from __future__ import annotations

import uuid

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.share_coordinator.shard import KeyState
from shoal.share_coordinator.state import (
    PersistedState,
    ReadResult,
    SharePartitionKey,
    StateBatch,
    StateSummary,
)
from tests.unit.share_coordinator.support import (
    ACK,
    ARC,
    AV,
    KEY,
    T0,
    TOPIC,
    Rig,
    snapshot,
    state_write,
    tombstone,
    update,
)


def test_write_or_read_of_an_uninitialised_key_is_invalid() -> None:
    """63: write or read of an uninitialised key -> INVALID_REQUEST, nothing written."""
    rig = Rig()
    written = rig.shard.write(write=state_write(StateBatch(0, 10, AV, 1)))
    assert (written.records, written.response) == ((), ErrorCode.invalid_request)
    read = rig.shard.read(key=KEY, leader_epoch=1)
    assert (read.records, read.response) == ((), ReadResult(ErrorCode.invalid_request))
    assert rig.state() is None and len(rig.sink) == 0


def test_lower_leader_epoch_is_fenced() -> None:
    """64: a write or read with a leader epoch below the stored one ->
    FENCED_LEADER_EPOCH, nothing written."""
    rig = Rig()
    rig.init()
    assert rig.apply(rig.shard.read(key=KEY, leader_epoch=5)).error is None
    written = rig.shard.write(write=state_write(StateBatch(0, 10, AV, 1), leader_epoch=4))
    assert (written.records, written.response) == ((), ErrorCode.fenced_leader_epoch)
    read = rig.shard.read(key=KEY, leader_epoch=4)
    assert (read.records, read.response) == ((), ReadResult(ErrorCode.fenced_leader_epoch))
    state = rig.state()
    assert state is not None and state.leader_epoch == 5 and state.state_batches == ()


def test_lower_state_epoch_is_fenced() -> None:
    """64: a write or initialize with a state epoch below the stored one ->
    FENCED_STATE_EPOCH, nothing written."""
    rig = Rig()
    rig.init(state_epoch=1)
    written = rig.shard.write(write=state_write(StateBatch(11, 20, AV, 1), state_epoch=0))
    assert (written.records, written.response) == ((), ErrorCode.fenced_state_epoch)
    again = rig.shard.initialize(key=KEY, state_epoch=0, start_offset=0)
    assert (again.records, again.response) == ((), ErrorCode.fenced_state_epoch)
    state = rig.state()
    assert state is not None and state.state_epoch == 1 and state.state_batches == ()


def test_start_offset_regression_is_discarded() -> None:
    """65: a start offset below the stored one keeps the stored one and drops the
    write's DeliveryCompleteCount; the update says so with -1 / -1."""
    rig = Rig()
    rig.init(start=100)
    forward = rig.shard.write(write=state_write(StateBatch(100, 109, ACK, 1), start=110, count=10))
    assert forward.records == (update(start=110, count=10),)  # 100-109 lies below 110
    rig.apply(forward)
    back = rig.shard.write(write=state_write(StateBatch(105, 115, ACK, 1), start=105, count=20))
    assert back.records == (update(batches=[StateBatch(110, 115, ACK, 1)]),)
    rig.apply(back)
    state = rig.state()
    assert state is not None
    assert (state.start_offset, state.delivery_complete_count) == (110, 10)
    assert state.state_batches == (StateBatch(110, 115, ACK, 1),)


def test_snapshot_update_count_boundary() -> None:
    """66: with records.per.snapshot = 2 -> update, update, snapshot; replaying the
    snapshot resets the count, so the next write is an update of the new snapshot."""
    rig = Rig(records_per_snapshot=2)
    rig.init()
    kinds = []
    for first in (0, 10, 20, 30):
        result = rig.shard.write(write=state_write(StateBatch(first, first + 9, ACK, 1)))
        kinds.append(type(result.records[0].value).__name__)
        rig.apply(result)
    assert kinds == [
        "ShareUpdateValue",
        "ShareUpdateValue",
        "ShareSnapshotValue",
        "ShareUpdateValue",
    ]
    assert rig.sink.records[3] == snapshot(snapshot_epoch=1, batches=[StateBatch(0, 29, ACK, 1)])
    assert rig.sink.records[4] == update(
        snapshot_epoch=1, start=0, batches=[StateBatch(30, 39, ACK, 1)]
    )
    state = rig.state()
    assert state is not None
    assert (state.snapshot_epoch, state.updates_since_snapshot, state.snapshot_offset) == (1, 1, 3)
    assert state.state_batches == (StateBatch(0, 39, ACK, 1),)


def test_zero_updates_per_snapshot_makes_every_write_a_snapshot() -> None:
    """records.per.snapshot = 0 (its minimum): no updates at all."""
    rig = Rig(records_per_snapshot=0)
    rig.init()
    rig.write(StateBatch(0, 0, AV, 1))
    result = rig.shard.write(write=state_write(StateBatch(1, 1, AV, 1)))
    assert result.records == (snapshot(snapshot_epoch=2, batches=[StateBatch(0, 1, AV, 1)]),)
    rig.apply(result)
    assert [type(r.value).__name__ for r in rig.sink.records] == ["ShareSnapshotValue"] * 3


def test_initialize_is_idempotent_then_replaces() -> None:
    """67: initialize repeated with equal epoch and start -> no record; a new start
    -> a new snapshot (SnapshotEpoch + 1) replacing all state, leader epoch kept."""
    rig = Rig()
    first = rig.shard.initialize(key=KEY, state_epoch=1, start_offset=0)
    assert first.records == (snapshot(snapshot_epoch=0, state_epoch=1),)
    rig.apply(first)
    rig.apply(rig.shard.read(key=KEY, leader_epoch=3))
    rig.write(StateBatch(0, 4, ACK, 1), state_epoch=1, leader_epoch=3, count=5)
    same = rig.shard.initialize(key=KEY, state_epoch=1, start_offset=0)
    assert (same.records, same.response) == ((), None)
    rig.clock.advance(50)
    replaced = rig.shard.initialize(key=KEY, state_epoch=2, start_offset=5)
    assert replaced.records == (
        snapshot(
            snapshot_epoch=1,
            state_epoch=2,
            leader_epoch=3,
            start=5,
            count=0,
            create=T0 + 50,
            write=T0 + 50,
        ),
    )
    rig.apply(replaced)
    read = rig.apply(rig.shard.read(key=KEY, leader_epoch=3))
    assert read == ReadResult(None, PersistedState(2, 5, ()))


def test_initialize_without_start_offset_has_no_delivery_complete_count() -> None:
    """StartOffset -1 (resolve by share.auto.offset.reset): DeliveryCompleteCount -1."""
    rig = Rig()
    result = rig.shard.initialize(key=KEY, state_epoch=0, start_offset=-1)
    assert result.records == (snapshot(snapshot_epoch=0, start=-1, count=-1),)


def test_merge_example() -> None:
    """68: 0-20 AVAILABLE dc1 + 11-20 ARCHIVED dc1 with start 5 -> 5-10 AVAILABLE,
    11-20 ARCHIVED; the same through an update and through a snapshot."""
    for per_snapshot in (500, 1):
        rig = Rig(records_per_snapshot=per_snapshot)
        rig.init()
        rig.write(StateBatch(0, 20, AV, 1))
        rig.write(StateBatch(11, 20, ARC, 1), start=5)
        state = rig.state()
        assert state is not None
        expected = (StateBatch(5, 10, AV, 1), StateBatch(11, 20, ARC, 1))
        assert state.state_batches == expected, per_snapshot
    last = rig.sink.records[-1]
    assert last == snapshot(snapshot_epoch=1, start=5, batches=expected)


def test_read_with_a_higher_leader_epoch_records_it_first() -> None:
    """69: the read writes a ShareUpdate carrying only the new LeaderEpoch, then
    answers; the same epoch again writes nothing."""
    rig = Rig()
    rig.init(state_epoch=4, start=-1)
    result = rig.shard.read(key=KEY, leader_epoch=2)
    assert result.records == (update(leader_epoch=2),)
    assert result.response == ReadResult(None, PersistedState(4, -1, ()))
    assert rig.apply(result) == result.response
    state = rig.state()
    assert state is not None
    assert (state.leader_epoch, state.updates_since_snapshot, state.start_offset) == (2, 1, -1)
    again = rig.shard.read(key=KEY, leader_epoch=2)
    assert (again.records, again.response.error) == ((), None)


def test_summary_of_an_unknown_key() -> None:
    """70: StartOffset -1, DeliveryCompleteCount -1, epochs 0, no error; a known key's
    summary changes nothing, whatever its leader epoch."""
    rig = Rig()
    unknown = rig.shard.read_summary(key=KEY, leader_epoch=0)
    assert (unknown.records, unknown.response) == ((), StateSummary(None))
    rig.init(state_epoch=3, start=7)
    known = rig.shard.read_summary(key=KEY, leader_epoch=9)
    assert known.records == ()
    summary = known.response
    assert summary == StateSummary(
        None, state_epoch=3, leader_epoch=-1, start_offset=7, delivery_complete_count=0
    )
    assert len(rig.sink) == 1


def test_delete_writes_one_tombstone_then_the_key_is_uninitialised() -> None:
    """§2.3.4: delete -> one tombstone on the ShareSnapshot key (as Kafka writes);
    the key reads as uninitialised; deleting an unknown key writes nothing."""
    rig = Rig()
    rig.init()
    rig.write(StateBatch(0, 3, ACK, 1))
    result = rig.shard.delete(key=KEY)
    assert (result.records, result.response) == ((tombstone(),), None)
    rig.apply(result)
    assert rig.state() is None
    assert rig.shard.read(key=KEY, leader_epoch=0).response == ReadResult(ErrorCode.invalid_request)
    assert rig.shard.read_summary(key=KEY, leader_epoch=0).response == StateSummary(None)
    again = rig.shard.delete(key=KEY)
    assert (again.records, again.response) == ((), None)
    rig.init(state_epoch=0, start=0)
    state = rig.state()
    assert state is not None and (state.snapshot_epoch, state.state_batches) == (0, ())


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.initialize(
            key=SharePartitionKey("g", TOPIC, -1), state_epoch=0, start_offset=0
        ),
        lambda s: s.initialize(
            key=SharePartitionKey("g", uuid.UUID(int=0), 0), state_epoch=0, start_offset=0
        ),
        lambda s: s.initialize(key=KEY, state_epoch=-1, start_offset=0),
        lambda s: s.initialize(key=KEY, state_epoch=0, start_offset=-2),
        lambda s: s.read(key=KEY, leader_epoch=-1),
        lambda s: s.write(write=state_write(leader_epoch=-1)),
        lambda s: s.write(write=state_write(state_epoch=-1)),
        lambda s: s.write(write=state_write(start=-2)),
        lambda s: s.write(write=state_write(StateBatch(0, 1, AV, 2**15))),
        lambda s: s.delete(key=SharePartitionKey("g", TOPIC, -1)),
    ],
)
def test_invalid_arguments_are_refused(call: object) -> None:
    """§2.3.6: negative partition or epochs, null topic id, a start offset below -1,
    a delivery count beyond int16 -> INVALID_REQUEST, nothing written."""
    rig = Rig()
    rig.init()
    result = call(rig.shard)  # type: ignore[operator]
    assert result.records == ()
    response = result.response
    assert (
        response if isinstance(response, ErrorCode) else response.error
    ) == ErrorCode.invalid_request
    bad = SharePartitionKey("g", TOPIC, -1)
    assert (
        rig.shard.read_summary(key=bad, leader_epoch=0).response.error == ErrorCode.invalid_request
    )


def test_snapshot_timestamps_come_from_the_clock() -> None:
    """CreateTimestamp / WriteTimestamp are the clock's wall time when an RPC writes
    a snapshot; updates carry none."""
    rig = Rig(records_per_snapshot=1)
    rig.init()
    rig.clock.advance(1_000)
    rig.write(StateBatch(0, 0, ACK, 1))
    rig.clock.advance(1_000)
    rig.write(StateBatch(1, 1, ACK, 1))
    state = rig.state()
    assert state is not None
    assert (state.create_timestamp_ms, state.write_timestamp_ms) == (T0 + 2_000, T0 + 2_000)


def test_update_of_an_unknown_key_then_its_tombstone() -> None:
    """A pruned log may start after a deleted key's snapshot but before its updates
    and tombstone: the update builds a partial state, the tombstone removes it."""
    rig = Rig()
    other = SharePartitionKey("h", TOPIC, 1)
    rig.runtime.load_partition(
        0,
        [
            (40, update(other, leader_epoch=3, start=12, batches=[StateBatch(12, 13, ACK, 1)])),
            (41, snapshot(KEY, snapshot_epoch=0)),
        ],
    )
    partial = rig.state(other)
    assert partial is not None
    assert (partial.start_offset, partial.leader_epoch, partial.snapshot_offset) == (12, 3, 40)
    rig.runtime.shard_at(0).replay(tombstone(other), 42)
    assert set(rig.shard.states) == {KEY}
    assert rig.shard.prune_offset() == 41


def test_prune_offset_follows_the_oldest_live_snapshot() -> None:
    """The log below the lowest latest-snapshot offset of the live keys is not needed;
    a key on updates still needs its snapshot; deleted keys need nothing; with no
    live key everything up to the end may go."""
    rig = Rig(records_per_snapshot=1)
    a, b = SharePartitionKey("g", TOPIC, 0), SharePartitionKey("g", TOPIC, 1)
    assert rig.shard.prune_offset() is None
    rig.init(a)  # 0: snapshot a
    rig.init(b)  # 1: snapshot b
    assert rig.shard.prune_offset() == 0
    rig.write(StateBatch(0, 0, ACK, 1), key=a)  # 2: update a
    assert rig.shard.prune_offset() == 0
    rig.write(StateBatch(1, 1, ACK, 1), key=a)  # 3: snapshot a
    assert rig.shard.prune_offset() == 1
    rig.write(StateBatch(0, 0, ACK, 1), key=b)  # 4: update b
    rig.write(StateBatch(1, 1, ACK, 1), key=b)  # 5: snapshot b
    assert rig.shard.prune_offset() == 3
    rig.apply(rig.shard.delete(key=a))  # 6: tombstone a
    assert rig.shard.prune_offset() == 5
    reloaded = Rig(records_per_snapshot=1)
    reloaded.runtime.load_partition(0, rig.logged()[5:])
    assert reloaded.shard.states == rig.shard.states
    rig.apply(rig.shard.delete(key=b))  # 7: tombstone b
    assert rig.shard.prune_offset() == 8


def test_cold_snapshot_moves_an_idle_key_that_pins_pruning() -> None:
    """A key with nothing but an old snapshot, far below the end of the log, is
    snapshotted again once cold, so the partition's prune offset can pass it."""
    rig = Rig(records_per_snapshot=2, cold_interval_ms=10_000)
    idle, busy = SharePartitionKey("g", TOPIC, 0), SharePartitionKey("g", TOPIC, 1)
    rig.init(idle)  # offset 0
    rig.init(busy)  # offset 1
    for offset in range(3):  # offsets 2-4: update, update, snapshot
        rig.write(StateBatch(offset, offset, ACK, 1), key=busy, start=offset + 1)
    assert rig.shard.prune_offset() == 0, "the idle key's snapshot pins the log"
    rig.clock.advance(10_000)
    cold = rig.shard.cold_snapshots(rig.clock.wall_ms())
    assert [(type(r.key).__name__, r.key.partition) for r in cold.records] == [
        ("ShareSnapshotKey", 0)
    ]
    rig.apply(cold)
    assert rig.shard.prune_offset() == 4, "now the busy key's snapshot is the oldest needed"
    rig.clock.advance(10_000)
    assert rig.shard.cold_snapshots(rig.clock.wall_ms()).records == (), "nothing pins now"


def test_cold_snapshots() -> None:
    """A key left on updates for the cold-partition interval gets a snapshot keeping
    its CreateTimestamp; keys without updates since their snapshot, or with a recent
    one, get none; once snapshotted the key is not snapshotted again."""
    rig = Rig(cold_interval_ms=10_000)
    a, b = SharePartitionKey("g", TOPIC, 0), SharePartitionKey("g", TOPIC, 1)
    rig.init(a)
    rig.init(b)
    rig.write(StateBatch(0, 4, ACK, 1), key=a, count=5)
    rig.clock.advance(9_999)
    early = rig.shard.cold_snapshots(rig.clock.wall_ms())
    assert (early.records, early.response) == ((), 0)
    rig.clock.advance(1)
    now = rig.clock.wall_ms()
    cold = rig.shard.cold_snapshots(now)
    expected = snapshot(
        a, snapshot_epoch=1, start=0, count=5, batches=[StateBatch(0, 4, ACK, 1)], write=now
    )
    assert (cold.records, cold.response) == ((expected,), 1)
    assert rig.apply(cold) == 1
    state = rig.state(a)
    assert state is not None
    assert (state.updates_since_snapshot, state.snapshot_offset, state.write_timestamp_ms) == (
        0,
        3,
        now,
    )
    rig.clock.advance(50_000)
    assert rig.shard.cold_snapshots(rig.clock.wall_ms()).records == ()


def test_state_keeps_only_the_merged_batches() -> None:
    """Memory per key is its merged state: many writes over the same range leave one
    batch, not a history."""
    rig = Rig()
    rig.init()
    for count in range(1, 50):
        rig.write(StateBatch(0, 99, AV, count))
    state = rig.state()
    assert isinstance(state, KeyState) and state.state_batches == (StateBatch(0, 99, AV, 49),)


def test_persisted_delivery_states_match_the_record_states() -> None:
    """The ids this package persists are the share-partition leader's RecordStates."""
    from shoal.share.states import PERSISTED_STATES
    from shoal.share_coordinator.state import PERSISTED_DELIVERY_STATES

    assert (
        {int(state) for state in PERSISTED_STATES} == PERSISTED_DELIVERY_STATES == {AV, ACK, 3, ARC}
    )
