"""What the `shoal-share` source's driver does with the records its member acquired:
a pure bookkeeping core, no I/O (share_source.py performs what it returns).

Every acquired record is in exactly one place:

- **pending**: acquired, not yet part of a batch (kept locked by RENEW until planned,
  or RELEASEd at stop);
- **planned[seq]**: part of the batch whose end offset has that `seq`, planned (or, on
  a restart, reclaimed for a replay, maybe only its lowest records: share_bisect.py)
  by this process; ACCEPTed by `settle(seq)` once
  Spark has durably committed the batch (latestOffset(start=that end) or commit(end));
- or handed back at once by `admit`: ACCEPT for records an earlier run of the query
  already delivered in a committed batch (`remember_delivered`), RELEASE for records
  at or beyond the AvailableNow bound.

Invariants: the pending and planned records are disjoint; a planned batch is settled at
most once; spans per topic-partition stay sorted and non-overlapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from shoal.client.ranges import Span, merge, normalized, record_count, split_by
from shoal.spark.share_offsets import Spans, TopicPartition

SpanMap = dict[TopicPartition, tuple[Span, ...]]


# ---- span arithmetic on one topic-partition (sorted, non-overlapping lists) ---------


def split_at(spans: Sequence[Span], bound: int) -> tuple[list[Span], list[Span]]:
    """(records below `bound`, records at or above it)."""
    return split_by(spans, [Span(0, bound - 1, 1)] if bound > 0 else [])


def take(spans: Sequence[Span], count: int) -> tuple[list[Span], list[Span]]:
    """(the first `count` records, the rest)."""
    taken: list[Span] = []
    rest: list[Span] = []
    for span in spans:
        if count <= 0:
            rest.append(span)
        elif span.size <= count:
            taken.append(span)
            count -= span.size
        else:
            taken.append(Span(span.first, span.first + count - 1, span.delivery_count))
            rest.append(Span(span.first + count, span.last, span.delivery_count))
            count = 0
    return taken, rest


# ---- the ledger ---------------------------------------------------------------------


@dataclass(slots=True)
class Admission:
    """What `admit` decided for newly acquired records."""

    accept: SpanMap = field(default_factory=dict)
    """Already delivered by a committed batch of an earlier run: ACCEPT now."""
    release: SpanMap = field(default_factory=dict)
    """At or beyond the AvailableNow bound: RELEASE now."""
    pending: int = 0
    """Records added to pending."""
    relocked: int = 0
    """Records that were still filed here (their lock had expired and the group handed
    them out again): they are pending now and no longer part of their old batch."""


class ShareLedger:
    """The driver's acquired records and batches. See the module docstring."""

    def __init__(self) -> None:
        self._pending: dict[TopicPartition, list[Span]] = {}
        self._planned: dict[int, SpanMap] = {}
        self._delivered: dict[TopicPartition, list[Span]] = {}
        self._bounds: dict[TopicPartition, int] | None = None
        self._exhausted: set[TopicPartition] = set()
        self._settled_seq = -1

    # ---- reading

    @property
    def pending_count(self) -> int:
        return record_count(self._pending)

    @property
    def planned_count(self) -> int:
        """Batches planned (or replayed) here and not settled yet."""
        return len(self._planned)

    @property
    def settled_seq(self) -> int:
        """The highest seq settled so far (-1 before any)."""
        return self._settled_seq

    def planned(self, seq: int) -> SpanMap | None:
        return self._planned.get(seq)

    def held(self) -> SpanMap:
        """Every record this driver holds (pending and planned), for RENEW."""
        out: dict[TopicPartition, list[Span]] = {tp: list(s) for tp, s in self._pending.items()}
        for batch in self._planned.values():
            for tp, spans in batch.items():
                out[tp] = merge(out.get(tp, ()), spans)
        return normalized(out)

    # ---- AvailableNow

    def bound(self, end_offsets: Mapping[TopicPartition, int]) -> SpanMap:
        """Only records below `end_offsets` (exclusive, per topic-partition; others have
        no records to read) go into batches from now on. Returns pending records beyond
        the bound, which the caller RELEASEs."""
        self._bounds = dict(end_offsets)
        beyond: dict[TopicPartition, list[Span]] = {}
        for tp in list(self._pending):
            below, above = split_at(self._pending[tp], self._bounds.get(tp, 0))
            self._set_pending(tp, below)
            if above:
                beyond[tp] = above
                self._exhausted.add(tp)
        return normalized(beyond)

    @property
    def bounded(self) -> bool:
        return self._bounds is not None

    @property
    def exhausted(self) -> frozenset[TopicPartition]:
        """Partitions that handed out a record at or beyond the AvailableNow bound: the
        group has nothing below it there, so they are not fetched from again (each
        acquisition of a record beyond would count as one of its deliveries)."""
        return frozenset(self._exhausted)

    # ---- acquiring and planning

    def remember_delivered(self, spans: Spans) -> None:
        """`spans` were delivered by a batch that Spark committed in an earlier run of the
        query: if the group hands them to us again, accept them without a new delivery."""
        for tp, items in spans.items():
            self._delivered[tp] = merge(split_by(self._delivered.get(tp, ()), items)[1], items)

    def admit(self, acquired: Spans) -> Admission:
        """File newly acquired records (see `Admission`)."""
        admission = Admission()
        accept: dict[TopicPartition, list[Span]] = {}
        release: dict[TopicPartition, list[Span]] = {}
        for tp, spans in normalized(acquired).items():
            already, fresh = split_by(spans, self._delivered.get(tp, ()))
            if already:
                accept[tp] = already
            if self._bounds is not None:
                fresh, beyond = split_at(fresh, self._bounds.get(tp, 0))
                if beyond:
                    release[tp] = beyond
                    self._exhausted.add(tp)
            if fresh:
                relocked = self._held_count(tp, fresh)
                if relocked:
                    self.forget({tp: fresh})
                    admission.relocked += relocked
                self._set_pending(tp, merge(self._pending.get(tp, ()), fresh))
                admission.pending += sum(s.size for s in fresh)
        admission.accept = normalized(accept)
        admission.release = normalized(release)
        return admission

    def plan(
        self, *, seq: int, records_max: int, limit_for: Callable[[int], int] | None = None
    ) -> SpanMap:
        """Move up to `records_max` pending records, lowest offsets first, into the batch
        `seq`; topic-partitions take turns starting at a place that rotates with `seq`
        so none starves. `limit_for(delivery_count)` caps the batch further: it holds
        at most `limit_for(c)` records, `c` the highest delivery count in it (a failing
        batch is split, share_bisect.py)."""
        assert seq not in self._planned, seq
        assert records_max >= 1, records_max
        order = sorted(self._pending)
        if order:
            shift = seq % len(order)
            order = order[shift:] + order[:shift]
        batch: dict[TopicPartition, list[Span]] = {}
        cap, taken_count = records_max, 0
        for tp in order:
            taken: list[Span] = []
            rest = list(self._pending[tp])
            while rest:
                span = rest[0]
                if limit_for is not None:
                    cap = min(cap, limit_for(span.delivery_count))
                room = cap - taken_count
                if room <= 0:
                    break
                head, tail = take([span], room)
                taken.extend(head)
                taken_count += sum(s.size for s in head)
                rest = tail + rest[1:]
            if taken:
                batch[tp] = taken
                self._set_pending(tp, rest)
            if taken_count >= cap:
                break
        planned = normalized(batch)
        if planned:
            self._planned[seq] = planned
        return planned

    def pending_delivery_count_max(self) -> int:
        """The highest delivery count of a pending record (0 when none is pending)."""
        return max((s.delivery_count for spans in self._pending.values() for s in spans), default=0)

    def missing(self, spans: Spans) -> int:
        """Records of `spans` not (yet) pending here."""
        return sum(
            sum(s.size for s in split_by(items, self._pending.get(tp, ()))[1])
            for tp, items in spans.items()
        )

    def reclaim(self, *, seq: int, spans: Spans, records_max: int | None = None) -> SpanMap:
        """A restarted query replays the uncommitted batch `seq` of an earlier run: the
        pending records inside its `spans` (re-acquired, with their new delivery counts)
        become batch `seq`, the lowest `records_max` of them at most (the others stay
        pending, for later batches: a batch that failed is split, share_bisect.py).
        Records of `spans` that are not pending are left out."""
        assert seq not in self._planned, seq
        room = records_max
        batch: dict[TopicPartition, list[Span]] = {}
        for tp, items in spans.items():
            inside, outside = split_by(self._pending.get(tp, ()), items)
            if room is not None:
                inside, beyond = take(inside, room)
                room -= sum(s.size for s in inside)
                outside = merge(outside, beyond)
            if inside:
                batch[tp] = inside
                self._set_pending(tp, outside)
        planned = normalized(batch)
        self._planned[seq] = planned
        return planned

    # ---- settling

    def settle(self, seq: int) -> SpanMap:
        """Spark committed every batch up to `seq`: the records of those planned here,
        to ACCEPT. Idempotent."""
        done = [s for s in self._planned if s <= seq]
        accepted: dict[TopicPartition, list[Span]] = {}
        for s in sorted(done):
            for tp, spans in self._planned.pop(s).items():
                accepted[tp] = merge(accepted.get(tp, ()), spans)
        self._settled_seq = max(self._settled_seq, seq)
        return normalized(accepted)

    def release_pending(self) -> SpanMap:
        """Every pending record, now no longer held (the caller RELEASEs them)."""
        pending = normalized(self._pending)
        self._pending.clear()
        return pending

    def forget(self, spans: Spans) -> None:
        """Drop `spans` from pending and planned batches (their locks were lost)."""
        for tp, items in spans.items():
            if tp in self._pending:
                self._set_pending(tp, split_by(self._pending[tp], items)[1])
            for batch in self._planned.values():
                if tp in batch:
                    kept = split_by(batch[tp], items)[1]
                    if kept:
                        batch[tp] = tuple(kept)
                    else:
                        del batch[tp]

    # ---- internals

    def _set_pending(self, tp: TopicPartition, spans: list[Span]) -> None:
        if spans:
            self._pending[tp] = spans
        else:
            self._pending.pop(tp, None)

    def _held_count(self, tp: TopicPartition, spans: Sequence[Span]) -> int:
        held = list(self._pending.get(tp, ()))
        for batch in self._planned.values():
            held = merge(held, batch.get(tp, ()))
        return sum(s.size for s in split_by(spans, held)[0])
