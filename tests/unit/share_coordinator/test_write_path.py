"""The share state write's fast paths against their reference paths: the bytes a
coordinator on a real log writes equal a cache-free encoding of the same records; a
shard that replays the record its `write` just built (taking the key and batches the
write computed) ends in the state of one replaying a decoded copy (deriving them from
the record); reloading the log gives the live state back; the update key entity a
shard writes again is encoded by identity; a `SharePartitionKey` keeps its hash."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.clock import ManualClock
from shoal.coordinator.log_sink import LogRecordSink, read_log
from shoal.coordinator.records import RecordCodec
from shoal.coordinator.result import CoordinatorResult
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import encode_batch
from shoal.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from shoal.share_coordinator.records import (
    CODEC,
    ShareCoordinatorRecord,
    ShareSnapshotKey,
    ShareUpdateKey,
)
from shoal.share_coordinator.state import SharePartitionKey, StateBatch, StateWrite
from tests.unit.share_coordinator.support import ACK, ARC, ARCHIVING, AV, KEY, TOPIC, Rig

OTHER = SharePartitionKey("h", TOPIC, 3)


class RecordingSink:
    """The log sink, remembering the records of each append (in order)."""

    def __init__(self, sink: LogRecordSink[ShareCoordinatorRecord]) -> None:
        self.sink = sink
        self.appends: list[tuple[int, tuple[ShareCoordinatorRecord, ...]]] = []

    def append(self, records: Sequence[ShareCoordinatorRecord], /) -> int:
        base = self.sink.append(records)
        self.appends.append((base, tuple(records)))
        return base


def _coordinator(sink: object, clock: ManualClock) -> ShareCoordinator:
    return ShareCoordinator(
        sink_for=lambda _partition: sink,  # type: ignore[arg-type,return-value]
        clock=clock,
        settings=ShareCoordinatorSettings(
            num_partitions=1, records_per_snapshot=3, cold_partition_snapshot_interval_ms=1_000
        ),
    )


def _acknowledgements(live: ShareCoordinator, clock: ManualClock) -> None:
    """What acknowledgements write: in-order acks (the batch falls below the new start
    offset), acks above the start, no batches, a start offset that does not move,
    snapshots every 3 updates, a leader epoch raised by a read (an update built
    without the kept key entity), a delete and a re-initialisation, cold snapshots."""
    for key in (KEY, OTHER):
        assert live.initialize(key=key, state_epoch=0, start_offset=0) is None
    for step in range(12):
        first = 2 * step
        for key in (KEY, OTHER):
            batches: tuple[StateBatch, ...] = (StateBatch(first, first + 1, ACK, 1),)
            start = first + 2
            if step % 4 == 1:  # an ack above the start offset, start not moving
                batches, start = (StateBatch(first + 5, first + 6, ARCHIVING, 2, 1),), -1
            elif step % 4 == 2:
                batches = ()
            state_epoch = 1 if key == OTHER and step > 7 else 0  # re-initialised at step 7
            leader_epoch = 2 if step > 5 else 0  # raised by the read at step 5
            count = 0 if start >= 0 else -1
            write = StateWrite(key, state_epoch, leader_epoch, start, count, batches)
            assert live.write(write=write) is None
        if step == 5:
            assert live.read(key=OTHER, leader_epoch=2).error is None
        if step == 7:
            assert live.delete(key=OTHER) is None
            assert live.initialize(key=OTHER, state_epoch=1, start_offset=first) is None
        clock.advance(400)
        live.write_cold_snapshots(clock.wall_ms())


def test_the_log_holds_the_reference_bytes_and_reloads_to_the_live_state(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    log = PartitionLog.open(
        directory=tmp_path / "__share_group_state-0", config={"retention.ms": -1}, clock=clock
    )
    try:
        sink = RecordingSink(LogRecordSink(log=log, encode=CODEC.encode, clock=clock))
        live = _coordinator(sink, clock)
        _acknowledgements(live, clock)

        fresh = RecordCodec(topic="t", keys=(ShareSnapshotKey, ShareUpdateKey))
        read = log.read(0, max_bytes=1 << 20)
        assert len(read.headers) == len(sink.appends) > 30
        for header, (base, records) in zip(read.headers, sink.appends, strict=True):
            written = read.records[header.position : header.position + header.size]
            reference = encode_batch(
                [fresh.encode(record) for record in records],
                timestamp_ms=header.base_timestamp,
                partition_leader_epoch=0,
            )
            assert header.base_offset == base
            assert written[8:] == reference[8:]  # all but the base offset the log stamps

        restarted = _coordinator(RecordingSink(sink.sink), clock)
        restarted.runtime.load_partition(0, read_log(log, CODEC.decode, buffer_bytes=1 << 16))
        assert restarted.shard(0).states == live.shard(0).states
        assert restarted.shard(0).end_offset == live.shard(0).end_offset == log.log_end_offset
        for key in (KEY, OTHER):
            assert restarted.read(key=key, leader_epoch=2) == live.read(key=key, leader_epoch=2)
    finally:
        log.abandon()


_writes = st.lists(
    st.tuples(
        st.sampled_from([KEY, OTHER]),
        st.integers(0, 2),  # leader epoch
        st.integers(-1, 30),  # start offset
        st.integers(-1, 10),  # delivery complete count
        st.lists(
            st.builds(
                lambda first, length, state, count: StateBatch(
                    first, first + length, state, count, 1 if state == ARCHIVING else 0
                ),
                st.integers(0, 40),
                st.integers(0, 6),
                st.sampled_from([AV, ACK, ARCHIVING, ARC]),
                st.integers(0, 3),
            ),
            max_size=3,
        ),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(_writes, st.integers(0, 3))
def test_replaying_the_record_write_built_equals_replaying_a_decoded_copy(
    writes: list[tuple[SharePartitionKey, int, int, int, list[StateBatch]]], per_snapshot: int
) -> None:
    fast, reference = Rig(records_per_snapshot=per_snapshot), Rig(records_per_snapshot=per_snapshot)
    for rig in (fast, reference):
        rig.init(KEY)
        rig.init(OTHER, start=5)
    for key, leader, start, count, batches in writes:
        write = StateWrite(key, 0, leader, start, count, tuple(batches))
        answer = fast.apply(fast.shard.write(write=write))
        result = reference.shard.write(write=write)
        copies = tuple(CODEC.decode(*CODEC.encode(record)) for record in result.records)
        assert reference.apply(CoordinatorResult(copies, result.response)) == answer
        assert fast.shard.states == reference.shard.states
    assert fast.shard.end_offset == reference.shard.end_offset


def test_a_write_built_before_another_was_replayed_looks_its_state_up_again() -> None:
    """Two writes of one key built before either is applied (the second's `write` saw
    the state before the first): replaying them equals replaying decoded copies."""
    fast, reference = Rig(records_per_snapshot=1), Rig(records_per_snapshot=1)
    for rig in (fast, reference):
        rig.init(KEY)
    writes = [
        StateWrite(KEY, 0, 0, -1, -1, (StateBatch(4, 6, ARC, 1),)),
        StateWrite(KEY, 0, 0, 2, 1, (StateBatch(0, 1, ACK, 2),)),
        StateWrite(KEY, 0, 0, -1, -1, (StateBatch(5, 9, AV, 3),)),
    ]
    for rig, copy in ((fast, False), (reference, True)):
        results = [rig.shard.write(write=write) for write in writes]
        for result in results:
            records = result.records
            if copy:
                records = tuple(CODEC.decode(*CODEC.encode(record)) for record in records)
            assert rig.apply(CoordinatorResult(records, result.response)) is None
    assert fast.shard.states == reference.shard.states
    state = fast.state()
    assert state is not None and (state.start_offset, state.updates_since_snapshot) == (2, 3)
    assert state.state_batches == (StateBatch(4, 4, ARC, 1), StateBatch(5, 9, AV, 3))


def test_a_shard_writes_its_update_key_entity_again_and_the_codec_finds_it_by_identity() -> None:
    rig = Rig()
    rig.init(KEY)
    rig.write(StateBatch(0, 1, ACK, 1), start=2, count=0)
    rig.write(StateBatch(2, 3, ACK, 1), start=4, count=0)
    first, second = rig.sink.records[-2:]
    assert first.key is second.key
    assert isinstance(second.key, ShareUpdateKey)
    codec = RecordCodec(topic="t", keys=(ShareSnapshotKey, ShareUpdateKey))
    fresh = RecordCodec(topic="t", keys=(ShareSnapshotKey, ShareUpdateKey))
    assert codec.encode(first) == fresh.encode(first)
    assert codec._key_bytes_by_id[id(second.key)][0] is second.key
    assert codec.encode(second) == fresh.encode(second)


def test_a_key_keeps_its_hash_and_equal_keys_hash_and_compare_alike() -> None:
    key = SharePartitionKey("g", uuid.UUID(int=99), 4)
    twin = SharePartitionKey("g", uuid.UUID(int=99), 4)
    assert key._hash == 0
    assert hash(key) == hash(("g", uuid.UUID(int=99), 4)) == key._hash == hash(twin)
    assert key == twin and {key: 1}[twin] == 1
    assert key != SharePartitionKey("g", uuid.UUID(int=99), 5)
    moved = dataclasses.replace(key, partition=5)
    assert hash(moved) == hash(("g", uuid.UUID(int=99), 5))
    assert repr(key) == (
        "SharePartitionKey(group_id='g', topic_id=UUID('00000000-0000-0000-0000-000000000063'), "
        "partition=4)"
    )
