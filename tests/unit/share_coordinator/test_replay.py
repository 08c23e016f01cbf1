"""Replay equivalence, checked on random operation sequences: a shard loaded from every
record written so far (through the codec's bytes) equals the live one; so does a
shard loaded from the records at or above `prune_offset()`; and every answer equals
the in-memory model's (`InMemoryPersister`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.share.persister import InMemoryPersister
from shoal.share_coordinator.records import CODEC
from shoal.share_coordinator.shard import ShareCoordinatorShard, ShareResult
from shoal.share_coordinator.state import (
    DLQ_REASON_DELIVERY_LIMIT,
    DLQ_REASON_REJECTED,
    DLQ_REASON_UNKNOWN,
    SharePartitionKey,
    StateBatch,
    StateWrite,
)
from tests.unit.share_coordinator.support import ACK, ARC, ARCHIVING, AV, TOPIC, Rig

KEYS = [SharePartitionKey(g, TOPIC, p) for g in ("g", "h") for p in (0, 1)]

_batches = st.lists(
    st.builds(
        lambda first, length, state, count, reason: StateBatch(
            first, first + length, state, count, reason if state == ARCHIVING else 0
        ),
        st.integers(0, 40),
        st.integers(0, 8),
        st.sampled_from([AV, ACK, ARCHIVING, ARC]),
        st.integers(0, 4),
        st.sampled_from([DLQ_REASON_UNKNOWN, DLQ_REASON_REJECTED, DLQ_REASON_DELIVERY_LIMIT]),
    ),
    max_size=4,
)
"""ARCHIVING batches carry a DLQ reason (Shoal's tagged field) through the records."""

Op = tuple[Any, ...]
_ops: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.just("init"), st.sampled_from(KEYS), st.integers(0, 2), st.integers(-1, 20)),
    st.tuples(st.just("read"), st.sampled_from(KEYS), st.integers(0, 3)),
    st.tuples(
        st.just("write"),
        st.sampled_from(KEYS),
        st.integers(0, 2),
        st.integers(0, 3),
        st.integers(-1, 30),
        st.integers(-1, 10),
        _batches,
    ),
    st.tuples(st.just("delete"), st.sampled_from(KEYS)),
    st.tuples(st.just("summary"), st.sampled_from(KEYS), st.integers(0, 3)),
    st.tuples(st.just("cold"), st.integers(0, 20_000)),
)


def _run(
    op: Op, shard: ShareCoordinatorShard, model: InMemoryPersister, now_ms: int
) -> tuple[ShareResult[Any] | None, Callable[[Any], None]]:
    """The shard's result for `op` and a check of its (applied) answer against the model."""
    kind = op[0]
    if kind == "init":
        _, key, epoch, start = op
        expected: Any = model.initialize(key=key, state_epoch=epoch, start_offset=start)
        result: ShareResult[Any] = shard.initialize(key=key, state_epoch=epoch, start_offset=start)
    elif kind == "read":
        _, key, leader = op
        expected = model.read(key=key, leader_epoch=leader)
        result = shard.read(key=key, leader_epoch=leader)
    elif kind == "write":
        _, key, state_epoch, leader, start, count, batches = op
        write = StateWrite(key, state_epoch, leader, start, count, tuple(batches))
        expected = model.write(write=write)
        result = shard.write(write=write)
    elif kind == "delete":
        expected = model.delete(key=op[1])
        result = shard.delete(key=op[1])
    elif kind == "summary":
        summary = shard.read_summary(key=op[1], leader_epoch=op[2]).response
        assert summary == model.read_summary(key=op[1], leader_epoch=op[2])
        return None, lambda _answer: None
    else:
        return shard.cold_snapshots(now_ms), lambda _answer: None

    def check(answer: Any) -> None:
        assert answer == expected, op

    return result, check


@settings(max_examples=150, deadline=None)
@given(st.lists(_ops, max_size=40), st.integers(0, 3), st.booleans())
def test_reload_and_model_agree_after_random_operations(
    ops: list[Op], per_snapshot: int, start_initialised: bool
) -> None:
    rig = Rig(records_per_snapshot=per_snapshot, cold_interval_ms=10_000)
    model = InMemoryPersister()
    if start_initialised:  # most writes then succeed
        ops = [("init", key, 0, 0) for key in KEYS] + ops
    for op in ops:
        if op[0] == "cold":
            rig.clock.advance(op[1])
        result, check = _run(op, rig.shard, model, rig.clock.wall_ms())
        if result is not None:
            check(rig.apply(result))

    for key, state in rig.shard.states.items():
        batches = state.state_batches
        for left, right in itertools.pairwise(batches):
            assert left.last_offset < right.first_offset, key
        if state.start_offset >= 0:
            assert all(b.first_offset >= state.start_offset for b in batches), key

    logged = rig.logged()
    full = Rig(records_per_snapshot=per_snapshot)
    full.runtime.load_partition(
        0, ((offset, CODEC.decode(*CODEC.encode(record))) for offset, record in logged)
    )
    assert full.shard.states == rig.shard.states
    assert full.shard.end_offset == rig.shard.end_offset == len(logged)

    prune = rig.shard.prune_offset()
    if logged:
        assert prune is not None
        pruned = Rig(records_per_snapshot=per_snapshot)
        pruned.runtime.load_partition(0, logged[prune:])
        assert pruned.shard.states == rig.shard.states
    else:
        assert prune is None
