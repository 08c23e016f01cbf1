"""Acknowledgements: validation and atomic application (docs/design/share-partition.md §8).

An acknowledgement request for one partition is checked in two phases so that a
failure changes nothing at all (§8.3; docs/design/conformance.md, B27):

1. `validate_batches`: the shape of the request (first <= last, ascending and
   non-overlapping, one type or one per offset, types 0-4) -> INVALID_REQUEST.
2. `plan_acknowledgement`: each batch against the cache, in order, without touching
   it. Wholly below the SPSO: skipped, success. No cached batch at or below its first
   offset (and the SPSO not inside it) -> INVALID_RECORD_STATE; first or last offset
   past the cached batches it reaches -> INVALID_REQUEST (Kafka's check against the
   last cached batch the range reaches, so a range ending in a natural hole is
   INVALID_REQUEST too); any target not ACQUIRED, held by another member, or with a
   write pending -> INVALID_RECORD_STATE. The first failing batch decides the error.
3. `apply_plan`: split where the plan needs per-offset state, start the transitions
   (pending write) and re-arm RENEWed locks. Offsets below the SPSO that the member
   still holds are archived in memory (no write: the durable start offset covers
   them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.share.inflight import InFlightBatch, InFlightState
from shoal.share.persister import StateBatch
from shoal.share.states import ACK_TYPE_EVENTS, Event, RecordState
from shoal.share.window import InFlightWindow


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One `AcknowledgementBatches` entry: one type for the range or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_at(self, offset: int) -> AcknowledgeType:
        if len(self.types) == 1:
            return AcknowledgeType(self.types[0])
        return AcknowledgeType(self.types[offset - self.first_offset])


def validate_batches(batches: Sequence[AckBatch]) -> ErrorCode | None:
    """INVALID_REQUEST for a malformed request (docs/design/wire.md §3), else None.
    Whether RENEW is allowed by the request version and IsRenewAck is the handler's
    check."""
    previous_last: int | None = None
    for batch in batches:
        if batch.first_offset < 0 or batch.first_offset > batch.last_offset:
            return ErrorCode.invalid_request
        if previous_last is not None and batch.first_offset <= previous_last:
            return ErrorCode.invalid_request
        previous_last = batch.last_offset
        size = batch.last_offset - batch.first_offset + 1
        if len(batch.types) not in (1, size):
            return ErrorCode.invalid_request
        if not _ACK_TYPE_IDS.issuperset(batch.types):
            return ErrorCode.invalid_request
    return None


_ACK_TYPE_IDS = frozenset(int(t) for t in AcknowledgeType)
_EVENT_OF_TYPE: tuple[Event, ...] = tuple(ACK_TYPE_EVENTS[t] for t in sorted(AcknowledgeType))
"""The event of each acknowledgement type id (ids 0-4, indexed by id: what
`ACK_TYPE_EVENTS[AckBatch.type_at(offset)]` gives, without building the enum)."""
assert [int(t) for t in sorted(AcknowledgeType)] == list(range(len(_EVENT_OF_TYPE)))


@dataclass(slots=True)
class _Step:
    """Acknowledge [first, last] of `batch` (a whole unsplit batch when `whole`)."""

    batch: InFlightBatch
    first: int
    last: int
    ack: AckBatch
    whole: bool


def plan_acknowledgement(
    window: InFlightWindow, *, member_id: str, batches: Sequence[AckBatch]
) -> list[_Step] | ErrorCode:
    """The steps to apply, or the Kafka error code of the first failing batch."""
    steps: list[_Step] = []
    cache = window.cache
    cached = cache.batches
    start = window.start_offset
    for ack in batches:
        if ack.last_offset < start:
            steps.extend(_below_start_steps(window, ack))
            continue
        first_index = cache.floor_index(ack.first_offset)
        if first_index < 0:
            if not ack.first_offset < start <= ack.last_offset:
                return ErrorCode.invalid_record_state
            first_index = cache.floor_index(start)
            if first_index < 0:
                return ErrorCode.invalid_record_state
        if cached[first_index].last_offset >= ack.last_offset:
            last_index = first_index  # what floor_index(last) gives, without the bisect
        else:
            last_index = cache.floor_index(ack.last_offset)
        reached = cached[last_index]
        if reached.last_offset < ack.first_offset or ack.last_offset > reached.last_offset:
            return ErrorCode.invalid_request
        per_offset_types = len(ack.types) > 1
        for index in range(first_index, last_index + 1):
            batch = cached[index]
            first = (
                ack.first_offset if ack.first_offset > batch.first_offset else batch.first_offset
            )
            last = ack.last_offset if ack.last_offset < batch.last_offset else batch.last_offset
            if first > last:
                continue
            error = _check_targets(window, batch, first, last, member_id)
            if error is not None:
                return error
            whole = (
                batch.whole is not None
                and first == batch.first_offset
                and last == batch.last_offset
                and not per_offset_types
                and batch.first_offset >= start
            )
            steps.append(_Step(batch, first, last, ack, whole))
    return steps


def _check_targets(
    window: InFlightWindow, batch: InFlightBatch, first: int, last: int, member_id: str
) -> ErrorCode | None:
    start = window.start_offset
    whole = batch.whole
    states = (
        batch.states_in(first, last)
        if whole is None
        else ((batch.first_offset, batch.last_offset, whole),)
    )
    for _lo, hi, st in states:
        if hi < start:
            continue  # below the SPSO (acked silently)
        if st.state is not RecordState.ACQUIRED or st.pending is not None:
            return ErrorCode.invalid_record_state
        if st.member_id != member_id:
            return ErrorCode.invalid_record_state
    return None


def _below_start_steps(window: InFlightWindow, ack: AckBatch) -> list[_Step]:
    cache = window.cache
    steps = []
    index = cache.index_from(ack.first_offset)
    batches = cache.batches
    while index < len(batches) and batches[index].first_offset <= ack.last_offset:
        batch = batches[index]
        first = max(ack.first_offset, batch.first_offset)
        last = min(ack.last_offset, batch.last_offset)
        whole = (
            batch.whole is not None
            and (first, last) == (batch.first_offset, batch.last_offset)
            and len(ack.types) == 1
        )
        steps.append(_Step(batch, first, last, ack, whole))
        index += 1
    return steps


@dataclass(slots=True)
class AppliedAck:
    entries: list[StateBatch]
    """State batches to write, one per touched batch or offset, unmerged (§8.4)."""
    renewed: int
    """Offsets whose lock was re-armed."""


def apply_plan(
    window: InFlightWindow,
    steps: Sequence[_Step],
    *,
    member_id: str,
    handle: int,
    limit: int,
    renew_deadline_ms: int,
) -> AppliedAck:
    applied = AppliedAck([], 0)
    for step in steps:
        batch = step.batch
        if step.whole:
            assert batch.whole is not None
            states: Sequence[tuple[int, int, InFlightState]] = (
                (batch.first_offset, batch.last_offset, batch.whole),
            )
        else:
            window.split(batch)
            states = list(batch.states_in(step.first, step.last))
        types = step.ack.types
        single = _EVENT_OF_TYPE[types[0]] if len(types) == 1 else None
        for lo, hi, st in states:
            event = _EVENT_OF_TYPE[types[lo - step.ack.first_offset]] if single is None else single
            if hi < window.start_offset:
                owned = st.state is RecordState.ACQUIRED and st.pending is None
                if owned and st.member_id == member_id and event is not Event.RENEW:
                    window.move(st, lo, hi, event, limit=limit)
                continue
            if event is Event.RENEW:
                window.renew(st, lo, hi, deadline_ms=renew_deadline_ms)
                applied.renewed += hi - lo + 1
                continue
            applied.entries.append(window.begin(st, lo, hi, event, limit=limit, handle=handle))
    return applied
