"""The share coordinator's state RPC semantics (docs/design/coordinators.md §2), checked against
both `Persister`s: `InMemoryPersister` and the durable `ShareCoordinator` (over
in-memory record sinks, with a snapshot every 2 updates so both record kinds occur).

Conformance items covered here: 63, 64, 65, 67 (no-op / replace), 68, 69, 70.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoal.clock import ManualClock
from shoal.coordinator.runtime import InMemoryRecordSink
from shoal.protocol.errors import ErrorCode
from shoal.share.persister import (
    InMemoryPersister,
    Persister,
    SharePartitionKey,
    StateBatch,
    StateWrite,
    merge_state_batches,
)
from shoal.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from shoal.share_coordinator.state import (
    DLQ_REASON_DELIVERY_LIMIT,
    DLQ_REASON_REJECTED,
    merge_into_state,
)

KEY = SharePartitionKey("g", uuid.UUID(int=7), 0)
AV, ACK, ARCHIVING, ARC = 0, 2, 3, 4


def _share_coordinator() -> Persister:
    return ShareCoordinator(
        sink_for=lambda _partition: InMemoryRecordSink(),
        clock=ManualClock(),
        settings=ShareCoordinatorSettings(num_partitions=3, records_per_snapshot=2),
    )


_PERSISTERS = {"in_memory": InMemoryPersister, "share_coordinator": _share_coordinator}


@pytest.fixture(params=sorted(_PERSISTERS))
def persister(request: pytest.FixtureRequest) -> Persister:
    factory = _PERSISTERS[request.param]
    return factory()


def write(
    *batches: StateBatch,
    start: int = 0,
    state_epoch: int = 0,
    leader_epoch: int = 0,
    count: int = -1,
) -> StateWrite:
    return StateWrite(KEY, state_epoch, leader_epoch, start, count, tuple(batches))


def test_uninitialised_key(persister: Persister) -> None:
    """63: write or read of an uninitialised key -> INVALID_REQUEST."""
    assert persister.write(write=write()) == ErrorCode.invalid_request
    assert persister.read(key=KEY, leader_epoch=0).error == ErrorCode.invalid_request


def test_fencing(persister: Persister) -> None:
    """64: lower leader epoch -> FENCED_LEADER_EPOCH; lower state epoch ->
    FENCED_STATE_EPOCH. 69: a read with a higher leader epoch records it."""
    assert persister.initialize(key=KEY, state_epoch=3, start_offset=0) is None
    assert persister.read(key=KEY, leader_epoch=5).error is None
    assert (
        persister.write(write=write(state_epoch=3, leader_epoch=4)) == ErrorCode.fenced_leader_epoch
    )
    assert persister.read(key=KEY, leader_epoch=4).error == ErrorCode.fenced_leader_epoch
    assert (
        persister.write(write=write(state_epoch=2, leader_epoch=5)) == ErrorCode.fenced_state_epoch
    )
    assert persister.write(write=write(state_epoch=3, leader_epoch=5)) is None
    assert (
        persister.initialize(key=KEY, state_epoch=2, start_offset=0) == ErrorCode.fenced_state_epoch
    )
    assert persister.read_summary(key=KEY, leader_epoch=0).leader_epoch == 5


def test_start_offset_never_moves_back(persister: Persister) -> None:
    """65: a start offset below the stored one keeps the stored one (and its
    DeliveryCompleteCount); -1 keeps it too."""
    persister.initialize(key=KEY, state_epoch=0, start_offset=-1)
    assert persister.write(write=write(StateBatch(10, 14, ACK, 1), start=10, count=5)) is None
    assert persister.write(write=write(StateBatch(15, 15, ACK, 1), start=7, count=9)) is None
    summary = persister.read_summary(key=KEY, leader_epoch=0)
    assert (summary.start_offset, summary.delivery_complete_count) == (10, 5)
    state = persister.read(key=KEY, leader_epoch=0).state
    assert state is not None and state.start_offset == 10
    assert state.state_batches == (StateBatch(10, 15, ACK, 1),)
    assert persister.write(write=write(start=-1, count=3)) is None
    assert persister.read_summary(key=KEY, leader_epoch=0).start_offset == 10


def test_initialize_is_idempotent_and_replaces(persister: Persister) -> None:
    """67 (semantics): same epoch and start -> nothing changes; a new start replaces
    all state."""
    persister.initialize(key=KEY, state_epoch=1, start_offset=0)
    persister.write(write=write(StateBatch(0, 4, ACK, 1), state_epoch=1, count=5))
    assert persister.initialize(key=KEY, state_epoch=1, start_offset=0) is None
    state = persister.read(key=KEY, leader_epoch=0).state
    assert state is not None and state.state_batches == (StateBatch(0, 4, ACK, 1),)
    assert persister.initialize(key=KEY, state_epoch=2, start_offset=3) is None
    state = persister.read(key=KEY, leader_epoch=0).state
    assert state is not None
    assert (state.state_epoch, state.start_offset, state.state_batches) == (2, 3, ())


def test_merge_rule() -> None:
    """68: 0-20 AVAILABLE dc1 + 11-20 ARCHIVED dc1, start 5 -> 5-10 AVAILABLE,
    11-20 ARCHIVED. The higher count wins first, then the higher state."""
    merged = merge_state_batches(
        [StateBatch(0, 20, AV, 1)], [StateBatch(11, 20, ARC, 1)], start_offset=5
    )
    assert merged == [StateBatch(5, 10, AV, 1), StateBatch(11, 20, ARC, 1)]
    merged = merge_state_batches(
        [StateBatch(0, 9, ACK, 1)], [StateBatch(3, 4, AV, 2)], start_offset=0
    )
    assert merged == [StateBatch(0, 2, ACK, 1), StateBatch(3, 4, AV, 2), StateBatch(5, 9, ACK, 1)]


def test_merge_keeps_the_newer_dlq_reason_at_equal_count_and_state() -> None:
    """An ARCHIVING batch's DLQ reason goes with the batch that wins; at equal count
    and state (a write reported failed that landed, then the retry) the incoming one."""
    limit = StateBatch(0, 3, ARCHIVING, 2, DLQ_REASON_DELIVERY_LIMIT)
    rejected = StateBatch(2, 5, ARCHIVING, 2, DLQ_REASON_REJECTED)
    assert merge_state_batches([limit], [rejected], start_offset=1) == [
        StateBatch(1, 1, ARCHIVING, 2, DLQ_REASON_DELIVERY_LIMIT),
        StateBatch(2, 5, ARCHIVING, 2, DLQ_REASON_REJECTED),
    ]
    archived = StateBatch(0, 5, ARC, 2)
    assert merge_state_batches([limit, rejected], [archived], start_offset=0) == [archived]
    assert merge_into_state([limit], [rejected], start_offset=1) == merge_state_batches(
        [limit], [rejected], start_offset=1
    )


def test_delete_and_summary_of_unknown_key(persister: Persister) -> None:
    """70: summary of an unknown key -> -1 / -1, no error; delete makes it unknown."""
    summary = persister.read_summary(key=KEY, leader_epoch=0)
    assert (summary.error, summary.start_offset, summary.delivery_complete_count) == (None, -1, -1)
    assert (summary.leader_epoch, summary.state_epoch) == (0, 0)
    persister.initialize(key=KEY, state_epoch=0, start_offset=0)
    assert persister.delete(key=KEY) is None
    assert persister.read(key=KEY, leader_epoch=0).error == ErrorCode.invalid_request


def test_negative_partition_or_epochs(persister: Persister) -> None:
    bad = SharePartitionKey("g", KEY.topic_id, -1)
    assert persister.initialize(key=bad, state_epoch=0, start_offset=0) == ErrorCode.invalid_request
    assert (
        persister.initialize(key=KEY, state_epoch=-1, start_offset=0) == ErrorCode.invalid_request
    )
    persister.initialize(key=KEY, state_epoch=0, start_offset=0)
    assert persister.write(write=write(leader_epoch=-2)) == ErrorCode.invalid_request


def test_writes_never_change_the_epochs(persister: Persister) -> None:
    """Kafka 4.2 (KAFKA-19456): only initialize sets the state epoch and only read
    raises the leader epoch; a write with higher epochs is accepted, changing neither."""
    persister.initialize(key=KEY, state_epoch=1, start_offset=0)
    assert persister.read(key=KEY, leader_epoch=2).error is None
    assert persister.write(write=write(state_epoch=4, leader_epoch=7)) is None
    summary = persister.read_summary(key=KEY, leader_epoch=0)
    assert (summary.state_epoch, summary.leader_epoch) == (1, 2)
    assert persister.write(write=write(state_epoch=1, leader_epoch=2)) is None


def test_partitions_with_state(persister: Persister) -> None:
    """The partitions of one (group, topic) that hold state; deleted ones drop out."""
    topic = KEY.topic_id
    for partition in (4, 0, 2):
        key = SharePartitionKey("g", topic, partition)
        assert persister.initialize(key=key, state_epoch=0, start_offset=0) is None
    other_group = SharePartitionKey("other", topic, 1)
    other_topic = SharePartitionKey("g", uuid.UUID(int=8), 3)
    for key in (other_group, other_topic):
        assert persister.initialize(key=key, state_epoch=0, start_offset=0) is None
    assert persister.delete(key=SharePartitionKey("g", topic, 2)) is None
    assert persister.partitions_with_state(group_id="g", topic_id=topic) == (0, 4)
    assert persister.partitions_with_state(group_id="none", topic_id=topic) == ()


_batch = st.builds(
    lambda first, length, state, count, reason: StateBatch(
        first, first + length, state, count, reason if state == ARCHIVING else 0
    ),
    st.integers(0, 40),
    st.integers(0, 10),
    st.sampled_from([AV, ACK, ARCHIVING, ARC]),
    st.integers(0, 4),
    st.sampled_from([DLQ_REASON_REJECTED, DLQ_REASON_DELIVERY_LIMIT]),
)


@given(st.lists(_batch, max_size=6), st.lists(_batch, max_size=6), st.integers(0, 20))
def test_merge_matches_a_per_offset_model(
    current: list[StateBatch], incoming: list[StateBatch], start: int
) -> None:
    """The sweep equals the rule applied offset by offset, and comes out coalesced."""
    expected: dict[int, tuple[int, int]] = {}
    for b in (*current, *incoming):
        for offset in range(max(b.first_offset, start), b.last_offset + 1):
            candidate = (b.delivery_count, b.delivery_state)
            expected[offset] = max(expected.get(offset, candidate), candidate)
    merged = merge_state_batches(current, incoming, start_offset=start)
    got = {
        offset: (b.delivery_count, b.delivery_state)
        for b in merged
        for offset in range(b.first_offset, b.last_offset + 1)
    }
    assert got == expected
    for left, right in itertools.pairwise(merged):
        assert left.last_offset < right.first_offset
        if left.last_offset + 1 == right.first_offset:
            assert (left.delivery_state, left.delivery_count, left.dlq_reason) != (
                right.delivery_state,
                right.delivery_count,
                right.dlq_reason,
            )


@given(_batch, st.integers(0, 50))
def test_merge_of_one_batch_into_nothing_equals_the_sweep(batch: StateBatch, start: int) -> None:
    """The one-batch shortcut (tuples and lists) gives what the sweep gives (iterators
    always take the sweep)."""
    swept = merge_state_batches(iter(()), iter([batch]), start_offset=start)
    assert merge_state_batches((), (batch,), start_offset=start) == swept
    assert merge_state_batches([], [batch], start_offset=start) == swept


@given(
    st.lists(_batch, max_size=12),
    st.lists(_batch, max_size=6),
    st.integers(0, 20),
    st.integers(0, 20),
)
def test_merge_into_a_merged_state_equals_the_full_merge(
    history: list[StateBatch], incoming: list[StateBatch], first_start: int, more: int
) -> None:
    """The incremental merge a shard replays with gives exactly the full sweep's
    result, start offset moves included."""
    state = merge_state_batches((), history, start_offset=first_start)
    start = first_start + more
    assert merge_into_state(state, incoming, start_offset=start) == merge_state_batches(
        state, incoming, start_offset=start
    )


def test_partition_error_for_failed_state_rpcs() -> None:
    """§8.5: fenced -> NOT_LEADER_OR_FOLLOWER (and reload); coordinator errors ->
    COORDINATOR_NOT_AVAILABLE."""
    from shoal.protocol.errors import ErrorCode
    from shoal.share.persister import FENCING_ERRORS, partition_error

    assert partition_error(ErrorCode.fenced_state_epoch) is ErrorCode.not_leader_or_follower
    assert partition_error(ErrorCode.fenced_leader_epoch) is ErrorCode.not_leader_or_follower
    assert (
        partition_error(ErrorCode.coordinator_load_in_progress)
        is ErrorCode.coordinator_not_available
    )
    assert partition_error(ErrorCode.request_timed_out) is ErrorCode.unknown_server_error
    assert ErrorCode.fenced_state_epoch in FENCING_ERRORS
