"""The values of durable share-partition state, and the merge rule for its batches.

These are the words the share-partition leader and the share coordinator share: a
`SharePartitionKey` names a share-partition, a `StateBatch` is a persisted offset
range with its delivery state and count, a `StateWrite` is one WriteShareGroupState,
and `PersistedState`, `ReadResult` and `StateSummary` are what reads answer.

Invariants: a `StateBatch` never spans backwards (first <= last) and carries only a
persisted delivery state (`PERSISTED_DELIVERY_STATES`: 0 AVAILABLE, 2 ACKNOWLEDGED,
3 ARCHIVING (a dead-letter queue copy outstanding, KIP-1191), 4 ARCHIVED; ACQUIRED is
never written). `merge_state_batches` returns batches sorted,
disjoint and coalesced.

Why an ARCHIVING batch awaits its dead-letter copy (`dlq_reason`: rejected, or the
delivery count limit) is a Shoal extension of Kafka's StateBatch, persisted as a
tagged field (records.py) the way state 3 extended DeliveryState: it cannot be
inferred after a reload (a record REJECTed on its last allowed delivery has the same
count as one that ran out of deliveries, and the limit may have changed since).
`DLQ_REASON_UNKNOWN` is what state written without it reads as (older Shoal, or a
WriteShareGroupState from outside, whose Kafka schema has no such field); only an
ARCHIVING batch carries another value.

The delivery-state ids are the persisted ones; `shoal.share.states.RecordState`
names them for the share-partition leader (this package sits below `shoal.share`
and must not import it).
"""

from __future__ import annotations

import bisect
import heapq
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from shoal.protocol.errors import ErrorCode

UNINITIALIZED_START_OFFSET: Final = -1
"""A start offset not yet known (StartOffset -1): the leader resolves it itself."""
UNKNOWN_DELIVERY_COMPLETE_COUNT: Final = -1
"""DeliveryCompleteCount -1: not known, or (in a write) not being updated."""

DELIVERY_STATE_AVAILABLE: Final = 0
DELIVERY_STATE_ACKNOWLEDGED: Final = 2
DELIVERY_STATE_ARCHIVING: Final = 3
DELIVERY_STATE_ARCHIVED: Final = 4
PERSISTED_DELIVERY_STATES: Final = frozenset(
    {
        DELIVERY_STATE_AVAILABLE,
        DELIVERY_STATE_ACKNOWLEDGED,
        DELIVERY_STATE_ARCHIVING,
        DELIVERY_STATE_ARCHIVED,
    }
)
"""The DeliveryState values a StateBatch may carry."""

DLQ_REASON_UNKNOWN: Final = 0
"""Not recorded: not ARCHIVING, or written without the reason (old state)."""
DLQ_REASON_REJECTED: Final = 1
"""ARCHIVING because a consumer REJECTed the record."""
DLQ_REASON_DELIVERY_LIMIT: Final = 2
"""ARCHIVING because the record's delivery count reached the limit."""
DLQ_REASONS: Final = frozenset({DLQ_REASON_UNKNOWN, DLQ_REASON_REJECTED, DLQ_REASON_DELIVERY_LIMIT})


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """Names a share-partition. Its hash is computed on first use and kept: the
    broker hashes the same few keys several times per request (a state write three
    times), and the dataclass hash of a UUID field is two Python calls each time."""

    group_id: str
    topic_id: uuid.UUID
    partition: int
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    """0: not computed yet (a key whose hash is 0 recomputes it; still correct)."""

    def __hash__(self) -> int:
        kept = self._hash
        if not kept:
            kept = hash((self.group_id, self.topic_id, self.partition))
            object.__setattr__(self, "_hash", kept)
        return kept


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted range: `delivery_state` is a persisted state id (0, 2, 3 or 4);
    `dlq_reason` (a Shoal extension, see the module docstring) only with 3."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int
    dlq_reason: int = DLQ_REASON_UNKNOWN

    def __post_init__(self) -> None:
        assert self.first_offset <= self.last_offset, self
        assert self.delivery_state in PERSISTED_DELIVERY_STATES, self
        assert self.dlq_reason in DLQ_REASONS, self
        assert (
            self.dlq_reason == DLQ_REASON_UNKNOWN or self.delivery_state == DELIVERY_STATE_ARCHIVING
        ), self


@dataclass(frozen=True, slots=True)
class PersistedState:
    """What a read returns: state epoch, start offset (-1 if never set), batches."""

    state_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class StateWrite:
    """One WriteShareGroupState for one share-partition."""

    key: SharePartitionKey
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ReadResult:
    error: ErrorCode | None
    state: PersistedState | None = None


@dataclass(frozen=True, slots=True)
class StateSummary:
    error: ErrorCode | None
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = UNINITIALIZED_START_OFFSET
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT


_INCOMING: Final = 0
_CURRENT: Final = 1
"""Heap ranks of a merge's two inputs: at equal (count, state) the incoming wins."""


def merge_state_batches(
    current: Iterable[StateBatch], incoming: Iterable[StateBatch], *, start_offset: int
) -> list[StateBatch]:
    """The share coordinator's merge (docs/design/coordinators.md §2.4, Kafka's
    PersisterStateBatchCombiner): drop batches below `start_offset` and clip those
    straddling it; where ranges overlap the higher delivery count wins, then the higher
    delivery state, then the newer batch (incoming over current, later over earlier in
    offset order; only a DLQ reason can differ then); adjacent ranges with equal
    (state, count, reason) coalesce.

    A sweep over range boundaries with a heap of the covering batches: O(n log n).
    One batch merged into nothing (most state writes' updates, and most single
    batches `merge_into_state` merges) is that batch clipped, without the sweep.
    """
    if (
        isinstance(current, tuple | list)
        and not current
        and isinstance(incoming, tuple | list)
        and len(incoming) == 1
    ):
        (only,) = incoming
        return [_clipped(only, start_offset)] if only.last_offset >= start_offset else []
    entries = sorted(
        (
            (_clipped(b, start_offset), origin)
            for origin, group in ((_CURRENT, current), (_INCOMING, incoming))
            for b in group
            if b.last_offset >= start_offset
        ),
        key=lambda e: e[0].first_offset,
    )
    batches = [b for b, _ in entries]
    boundaries = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    merged: list[StateBatch] = []
    covering: list[tuple[int, int, int, int, int]] = []  # (-count, -state, origin, -seq, last)
    next_batch = 0
    for index, point in enumerate(boundaries[:-1]):
        while next_batch < len(batches) and batches[next_batch].first_offset == point:
            b, origin = entries[next_batch]
            heapq.heappush(
                covering,
                (-b.delivery_count, -b.delivery_state, origin, -next_batch, b.last_offset),
            )
            next_batch += 1
        while covering and covering[0][4] < point:
            heapq.heappop(covering)
        if not covering:
            continue
        top = batches[-covering[0][3]]
        _append_coalesced(
            merged,
            StateBatch(
                point,
                boundaries[index + 1] - 1,
                top.delivery_state,
                top.delivery_count,
                top.dlq_reason,
            ),
        )
    return merged


def merge_into_state(
    state: Sequence[StateBatch], incoming: Iterable[StateBatch], *, start_offset: int
) -> list[StateBatch]:
    """`merge_state_batches(state, incoming, start_offset=...)` for a `state` that is
    already merged (sorted, non-overlapping, coalesced: what a shard stores), in time
    proportional to the incoming batches and the stored ones they touch rather than to
    the whole state: replaying an update of a few ranges into a state of thousands
    costs a few bisections. Each incoming batch is merged into the stored batches it
    overlaps or adjoins (the per-offset maximum of (count, state) is associative, so
    one at a time equals all at once)."""
    result = list(state)
    below = bisect.bisect_left(result, start_offset, key=_last_offset)
    if below:
        del result[:below]
    if result and result[0].first_offset < start_offset:
        result[0] = _clipped(result[0], start_offset)
    for batch in sorted(incoming, key=_first_offset):
        if batch.last_offset < start_offset:
            continue
        low = max(batch.first_offset, start_offset)
        first = bisect.bisect_left(result, low - 1, key=_last_offset)
        end = bisect.bisect_right(result, batch.last_offset + 1, key=_first_offset)
        result[first:end] = merge_state_batches(
            result[first:end], (batch,), start_offset=start_offset
        )
    return result


def _clipped(batch: StateBatch, start_offset: int) -> StateBatch:
    """`batch` without its offsets below `start_offset` (it must reach it)."""
    if batch.first_offset >= start_offset:
        return batch
    return StateBatch(
        start_offset,
        batch.last_offset,
        batch.delivery_state,
        batch.delivery_count,
        batch.dlq_reason,
    )


def _first_offset(batch: StateBatch) -> int:
    return batch.first_offset


def _last_offset(batch: StateBatch) -> int:
    return batch.last_offset


def _append_coalesced(merged: list[StateBatch], batch: StateBatch) -> None:
    if merged:
        tail = merged[-1]
        if (
            tail.last_offset + 1 == batch.first_offset
            and tail.delivery_state == batch.delivery_state
            and tail.delivery_count == batch.delivery_count
            and tail.dlq_reason == batch.dlq_reason
        ):
            merged[-1] = StateBatch(
                tail.first_offset,
                batch.last_offset,
                tail.delivery_state,
                tail.delivery_count,
                tail.dlq_reason,
            )
            return
    merged.append(batch)
