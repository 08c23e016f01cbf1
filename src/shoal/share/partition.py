"""`SharePartition`: the share-partition leader of one (group, topic, partition).

A sans-I/O state machine. Inputs are method calls with keyword arguments; effects
come back as values:

- `acquire` returns AcquiredRecords ranges and the log batches to send; it may also
  return a `StateWrite` for records it archived on the way (compaction holes, a
  lowered delivery limit, aborted transactions) - those transitions stand whether or
  not the write succeeds, like expiries.
- `acknowledge` and `release_member` return a pending `StateWrite` and a handle. The
  caller persists the write and then calls `commit_write` (the SPSO may advance) or
  `rollback_write` (the records return to ACQUIRED, or to AVAILABLE / ARCHIVED when
  their lock expired meanwhile). Until then those records can be neither acquired
  nor acknowledged. The write carries the SPSO and DeliveryCompleteCount its own
  commit gives (computed on the tentative state), so a persisted start offset never
  trails the acknowledgement that moved it; memory moves only at `commit_write`.
- `expire_locks(now_ms)` returns one write per expired lock; the server calls it when
  `next_lock_deadline()` passes. Transitions stand even if the writes fail.
- `wake` flags say when parked share fetches should be retried; `next_redelivery_ms`
  says when a delayed redelivery (share/redelivery.py) becomes due, and
  `redeliveries_due` when the shell should wake them.
- While the group's `shoal.share.delivery.paused` is true, `acquire` takes nothing
  and `can_acquire` is False; everything else (acknowledgements, expiries) goes on.
- Dead-letter queues (KIP-1191): with a DLQ topic configured, REJECTed records and
  those reaching the delivery limit go ARCHIVING (persisted, state 3) instead of
  ARCHIVED. Once their write is done, `dlq_copies` hands them out (each once) as
  `DlqCopy` effects: copy these offsets to the group's DLQ topic. The caller writes
  the copies (or gives up) and calls `dlq_done`, which makes them ARCHIVED and
  returns the write (it stands). The SPSO never passes an ARCHIVING record.
  Persisted ARCHIVING records are handed out again after a reload (the caller
  dedupes copies a crash left behind).

Time comes only from the injected clock (lock deadlines) and from `now_ms` passed to
`expire_locks`. The group's settings are a value, `settings` (share/leader_settings.py): the
owner (`SharePartitionManager`) sets the ones it was handed with each operation before
calling in, so a config change applies from the next operation on; the in-flight
limit bounds each acquisition as Kafka's does (`_records_to_acquire`).
See docs/design/share-partition.md for the semantics; the window's invariants are listed in
`window.py` and checked by `check_invariants`.

About 920 lines on purpose: one class is the whole public face of the state machine
(acquire, acknowledge, renew, expire, the state-write completions, the DLQ hand-out,
the read-only views, and the entry points of key-ordered and scheduled delivery: the
fetch offset past held-back records, the room they leave, the reads that gather them);
the mechanics live in `window.py`, `dlq.py`, `key_order.py`, `schedule.py`,
`holding.py` and the batch modules beside them.
"""

from __future__ import annotations

import itertools
import logging
import operator
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shoal import limits
from shoal.clock import Clock
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import LOG_OVERHEAD, BatchHeader
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch, apply_plan, plan_acknowledgement, validate_batches
from shoal.share.acquire import AcquiredRecords, Acquisition
from shoal.share.dlq import DlqCopy, finish_copies, take_copies
from shoal.share.holding import DeliveryHolds, delivery_holds, next_ready_offset, read_holds
from shoal.share.inflight import InFlightBatch, InFlightState, Lock
from shoal.share.key_order import first_eligible, held_back
from shoal.share.leader_settings import IsolationLevel, SharePartitionConfig
from shoal.share.persister import PersistedState, SharePartitionKey, StateBatch, StateWrite
from shoal.share.redelivery import Redelivery
from shoal.share.states import Event, RecordState, reason_of_code
from shoal.share.window import InFlightWindow

INT32_MAX = 2**31 - 1

log = logging.getLogger(__name__)


class StateLoadError(ValueError):
    """Persisted state that cannot be loaded (§10.3): the load fails."""


@dataclass(frozen=True, slots=True)
class WriteHandle:
    id: int


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A state write to persist, then `commit_write` or `rollback_write` its handle."""

    write: StateWrite
    handle: WriteHandle


@dataclass(frozen=True, slots=True)
class AcquireResult:
    acquired: tuple[AcquiredRecords, ...]
    count: int
    """Records acquired (to subtract from the request's MaxRecords budget)."""
    batches: tuple[BatchHeader, ...]
    """The log batches overlapping [first acquired, last acquired] (§7.8), in order."""
    write: StateWrite | None
    """Archivals made while acquiring; they stand whatever happens to the write."""
    lock_duration_ms: int
    """AcquisitionLockTimeoutMs for the response."""

    @property
    def byte_range(self) -> tuple[int, int] | None:
        """[start, end) of `batches` in the buffer their positions refer to."""
        if not self.batches:
            return None
        last = self.batches[-1]
        return self.batches[0].position, last.position + last.size

    def batch_bytes(self, buffer: bytes) -> list[tuple[int, bytes]]:
        """(base offset, bytes) of each of `batches` in `buffer` (the read's records)."""
        return [
            (header.base_offset, buffer[header.position : header.position + header.size])
            for header in self.batches
        ]

    def byte_ranges(self) -> list[tuple[int, int]]:
        """[start, end) of each run of adjacent `batches` (one unless some batches
        between acquired ones were left out)."""
        spans: list[tuple[int, int]] = []
        for header in self.batches:
            end = header.position + header.size
            if spans and spans[-1][1] == header.position:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((header.position, end))
        return spans


@dataclass(frozen=True, slots=True)
class AckResult:
    error: ErrorCode | None = None
    """INVALID_REQUEST or INVALID_RECORD_STATE for the partition; nothing changed."""
    pending: PendingWrite | None = None
    """None when nothing needs writing (RENEW only, or wholly below the SPSO)."""
    renewed: int = 0


@dataclass(frozen=True, slots=True)
class WriteCompletion:
    start_offset_moved: bool
    wake: bool
    """Records became acquirable or the SPSO moved: retry parked share fetches."""
    writes: tuple[StateWrite, ...] = ()
    """Follow-up writes: locks that expired while a rolled-back write was pending, or
    the start offset when a commit moved it past what its write carried (another
    write was pending when it was computed)."""


@dataclass(frozen=True, slots=True)
class ExpiryResult:
    writes: tuple[StateWrite, ...]
    """One per expired lock, in deadline order."""
    wake: bool


@dataclass(frozen=True, slots=True)
class RecordView:
    """One cache entry (a whole batch, or one offset of a split batch), for describe
    and tests."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str
    pending: bool
    lock_deadline_ms: int | None
    redelivery_due_ms: int | None = None
    """When an AVAILABLE entry held back by delayed redelivery may be acquired again
    (monotonic clock), None when it is not held back."""
    deliver_at_ms: int | None = None
    """When an AVAILABLE entry waiting for its `shoal.deliver.at` time comes due (epoch
    milliseconds), None when it does not wait."""
    key_blocked: bool = False
    """An AVAILABLE entry held back because an earlier record of its key is in flight."""


@dataclass(frozen=True, slots=True)
class InFlightSnapshot:
    """A read-only picture of the window for observers (the web console): plain data,
    at most `max_entries` entries from the start offset on (`truncated` says more
    existed). Lock deadlines are on the monotonic clock of `taken_at_ms`."""

    start_offset: int
    end_offset: int
    delivery_complete_count: int
    taken_at_ms: int
    entries: tuple[RecordView, ...]
    truncated: bool


class SharePartition:
    """The in-flight state machine of one share-partition. Call `initialize` first."""

    def __init__(
        self,
        *,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        clock: Clock,
        settings: SharePartitionConfig,
        leader_epoch: int = 0,
        key_scan_max: int = limits.SHARE_KEY_ORDER_SCAN_MAX_RECORDS,
        scheduled_max: int = limits.SHARE_SCHEDULED_RECORDS_MAX,
        window_span_max: int = limits.SHARE_WINDOW_SPAN_MAX_OFFSETS,
    ) -> None:
        self.key = SharePartitionKey(group_id, topic_id, partition)
        self.key_scan_max = key_scan_max
        """Key order: held-back records one acquisition passes (a limit; smaller in tests)."""
        self.scheduled_max = scheduled_max
        """Scheduled delivery: records the window may hold waiting (a limit)."""
        self.window_span_max = window_span_max
        """Key order or scheduled delivery: the widest window, in offsets (a limit)."""
        self._clock = clock
        self.settings = settings
        """The group's settings for the operation in progress (set by the owner)."""
        self.leader_epoch = leader_epoch
        self.state_epoch = 0
        self._window: InFlightWindow | None = None
        self._carried: dict[int, int] = {}
        """Start offset each pending write carries, by handle."""
        self._dlq_recovered: set[int] = set()
        """ARCHIVING offsets loaded from persisted state (their copy may exist)."""

    # ---- loading

    def initialize(
        self, *, state: PersistedState, log_start_offset: int, reset_offset: int
    ) -> None:
        """Load persisted state (§10). A start offset of -1 means `reset_offset` (the
        group's `share.auto.offset.reset`, see settings.resolve_reset_offset); it is
        kept in memory and persisted with the next write."""
        assert self._window is None, "already initialized"
        start = state.start_offset if state.start_offset >= 0 else reset_offset
        if start < 0:
            raise StateLoadError(f"start offset {start} is negative")
        window = InFlightWindow(
            start_offset=start,
            redelivery=Redelivery(
                now_ms=self._clock.monotonic_ms,
                delay_ms=self._redelivery_delay_ms,  # the settings of the operation in progress
            ),
            dlq=lambda: self.settings.dlq_enabled,
        )
        limit = self.settings.delivery_count_limit
        previous_last = start - 1
        gap_start = None
        for batch in state.state_batches:
            if batch.first_offset < start:
                raise StateLoadError(f"{batch} lies below the start offset {start}")
            if batch.first_offset <= previous_last:
                raise StateLoadError(f"{batch} overlaps the batch before it")
            delivery = RecordState(batch.delivery_state)
            if delivery is RecordState.ACQUIRED:
                raise StateLoadError(f"{batch} has a state that is never persisted")
            if delivery is RecordState.ARCHIVING:
                reason = reason_of_code(
                    batch.dlq_reason, delivery_count=batch.delivery_count, limit=limit
                )
                for offset in range(batch.first_offset, batch.last_offset + 1):
                    window.dlq_reasons[offset] = reason
                    self._dlq_recovered.add(offset)
            if gap_start is None and batch.first_offset > previous_last + 1:
                gap_start = previous_last + 1
            previous_last = batch.last_offset
            st = InFlightState(delivery, batch.delivery_count)
            window.cache.add(InFlightBatch(batch.first_offset, batch.last_offset, st))
            if delivery.is_terminal:
                window.delivery_complete_count += batch.last_offset - batch.first_offset + 1
            elif delivery is RecordState.AVAILABLE:
                window.note_available(batch.first_offset)
        if state.state_batches:
            window.end_offset = previous_last
            if gap_start is not None:
                window.open_gap_window(gap_start=gap_start, gap_end=previous_last)
            window.advance_start()
        self.state_epoch = state.state_epoch
        self._window = window
        if log_start_offset > window.start_offset:
            window.move_log_start(log_start_offset, limit=self.settings.delivery_count_limit)
            window.advance_start()
        self._check_boundary()

    def _redelivery_delay_ms(self, delivery_count: int) -> int:
        return self.settings.redelivery_delay_ms(delivery_count)

    @property
    def initialized(self) -> bool:
        return self._window is not None

    @property
    def _w(self) -> InFlightWindow:
        assert self._window is not None, "share-partition not initialized"
        return self._window

    # ---- reading

    @property
    def start_offset(self) -> int:
        return self._w.start_offset

    @property
    def end_offset(self) -> int:
        return self._w.end_offset

    @property
    def delivery_complete_count(self) -> int:
        return self._w.delivery_complete_count

    @property
    def record_lock_duration_ms(self) -> int:
        return self.settings.record_lock_duration_ms

    def next_fetch_offset(self) -> int:
        """Where the caller reads the log from for the next `acquire`."""
        return self._fetch_offset(self._w)

    def records_to_read(self, fetch_offset: int, max_records: int) -> int:
        """How many records a read from `fetch_offset` should cover for an acquisition
        of `max_records`: those, plus under scheduled delivery the window's records past
        `fetch_offset` (at most `key_scan_max`): the records that came due lie scattered
        among waiting and done ones, which the walk passes over cheaply."""
        window = self._w
        if self.settings.delivery_delay_max_ms <= 0 or not window.schedule.waiting_at:
            return max_records
        behind = min(max(0, window.end_offset - fetch_offset + 1), self.key_scan_max)
        return max_records + behind

    def next_ready_offset(self, after: int) -> int | None:
        """Under key order or scheduled delivery, the next record at or past `after`
        that may be taken now (`holding.next_ready_offset`); None if none."""
        config = self.settings
        return next_ready_offset(
            self._w,
            after,
            key_ordered=config.key_ordered,
            scheduled=config.delivery_delay_max_ms > 0,
            scan_max=self.key_scan_max,
        )

    def new_records_offset(self, read_limit: int) -> int | None:
        """Under key order or scheduled delivery, after an acquisition whose read ended
        inside the window or short of the log's end (records waiting or held back took
        part of it): where a second read for the new records starts (the end offset
        + 1), if there are records below `read_limit` there and the in-flight limit
        leaves room; else None."""
        config = self.settings
        window = self._w
        if not (config.key_ordered or config.delivery_delay_max_ms > 0):
            return None
        if config.delivery_paused or window.gap_start is not None:
            return None
        beyond = window.end_offset + 1
        if beyond >= read_limit or not window.has_inflight() or self._room(window) <= 0:
            return None
        return beyond

    def _fetch_offset(self, window: InFlightWindow) -> int:
        """`InFlightWindow.next_fetch_offset`, passing over the records held back by
        their key when the group orders by key (share/key_order.py)."""
        if window.schedule.waiting_at:
            window.schedule.prune(self._clock.wall_ms(), window.start_offset)
        window.prune_held()
        keys = window.keys
        if not self.settings.key_ordered or keys is None or not window.has_inflight():
            return window.next_fetch_offset()
        offset, _ = first_eligible(window, keys, scan_max=self.key_scan_max)
        gap = window.first_gap_offset()
        if offset is None:
            return window.end_offset + 1 if gap is None else gap
        return offset if gap is None else min(offset, gap)

    def acquirable_from(self) -> int | None:
        """`next_fetch_offset()` when `can_acquire()`, else None (one pass over the
        window for the fetch's per-partition check)."""
        window = self._window
        assert window is not None, "share-partition not initialized"
        config = self.settings
        if config.delivery_paused:
            return None
        offset = self._fetch_offset(window)
        if self._extended and window.acquired_records >= config.max_record_locks:
            return None  # members hold all the limit allows
        if offset != window.end_offset + 1 or self._room(window) > 0:
            return offset
        return None

    @property
    def _extended(self) -> bool:
        """Key order or scheduled delivery is on."""
        config = self.settings
        return config.key_ordered or config.delivery_delay_max_ms > 0

    def _room(self, window: InFlightWindow) -> int:
        """Records the in-flight limit lets new acquisitions add (`occupancy`); under
        key order or scheduled delivery also within `window_span_max` offsets of the
        start offset."""
        config = self.settings
        if not (config.key_ordered or config.delivery_delay_max_ms > 0):
            return config.max_record_locks - window.occupancy()
        room = config.max_record_locks - window.occupancy(extended=True)
        return min(room, self.window_span_max - window.size())

    def can_acquire(self) -> bool:
        """Worth reading the log: something cached or in a gap is acquirable, or the
        window is below the in-flight limit; never while the group's delivery is paused."""
        return self.acquirable_from() is not None

    def next_lock_deadline(self) -> int | None:
        """Monotonic time at which `expire_locks` has work, or None."""
        return self._w.timers.next_deadline_ms()

    def next_redelivery_ms(self) -> int | None:
        """Monotonic time at which a delayed record becomes acquirable, or None."""
        return self._w.redelivery.next_due_ms()

    def deadlines(self) -> tuple[int | None, int | None]:
        """(`next_lock_deadline()`, `next_redelivery_ms()`) in one call: compared
        before and after an acknowledgement, whose timers need asking again only if
        one came earlier."""
        window = self._window
        assert window is not None, "share-partition not initialized"
        return window.timers.next_deadline_ms(), window.redelivery.next_due_ms()

    def redeliveries_due(self, *, now_ms: int) -> bool:
        """Delays reached by `now_ms` are done with: True = wake the parked fetches."""
        return self._w.redelivery.pop_due(now_ms)

    def in_flight(self) -> list[RecordView]:
        return list(self._views())

    def _views(self) -> Iterator[RecordView]:
        window = self._w
        waiting = window.schedule.waiting_at
        blocked: set[int] = set()
        if self.settings.key_ordered and window.keys is not None:
            _, blocked = held_back(window, window.keys)
        for batch in window.cache:
            for first, last, st in batch.states():
                lock = st.lock
                not_due = not window.redelivery.is_due(st.not_before_ms)
                deliver_at = waiting.get(first) if not_due and waiting else None
                yield RecordView(
                    first,
                    last,
                    st.state,
                    st.delivery_count,
                    st.member_id,
                    st.pending is not None,
                    None if lock is None else lock.deadline_ms,
                    st.not_before_ms if not_due and deliver_at is None else None,
                    deliver_at,
                    bool(blocked) and first in blocked,
                )

    def snapshot(self, *, max_entries: int) -> InFlightSnapshot:
        """The first `max_entries` entries of the window from the start offset on (a
        whole batch, or one offset of a split batch, each; settled offsets of a split
        batch below the start offset are left out), read without changing anything."""
        assert max_entries >= 0, max_entries
        window = self._w
        start = window.start_offset
        views = itertools.dropwhile(lambda view: view.last_offset < start, self._views())
        entries = tuple(itertools.islice(views, max_entries))
        truncated = next(views, None) is not None
        return InFlightSnapshot(
            start_offset=window.start_offset,
            end_offset=window.end_offset,
            delivery_complete_count=window.delivery_complete_count,
            taken_at_ms=self._clock.monotonic_ms(),
            entries=entries,
            truncated=truncated,
        )

    def record_counts(self) -> tuple[dict[RecordState, int], int]:
        """The window's records by state, and its entries (whole batches, or offsets of
        split batches), without building views: read by the metrics at each scrape."""
        counts: Counter[RecordState] = Counter()
        entries = 0
        for batch in self._w.cache:
            if batch.offsets is None:
                assert batch.whole is not None
                counts[batch.whole.state] += batch.size
                entries += 1
            else:
                counts.update(state.state for state in batch.offsets)
                entries += len(batch.offsets)
        return dict(counts), entries

    def delivery_holds(self, *, top: int = 5) -> DeliveryHolds:
        """What key order and scheduled delivery hold back now. O(window)."""
        return delivery_holds(
            self._w,
            key_ordered=self.settings.key_ordered,
            now_wall_ms=self._clock.wall_ms(),
            top=top,
        )

    def check_invariants(self) -> None:
        self._w.check_invariants()

    # ---- acquisition

    def acquire(
        self,
        *,
        member_id: str,
        fetch_offset: int,
        headers: Sequence[BatchHeader],
        max_records: int,
        batch_size: int,
        acquire_mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
        max_bytes: int = INT32_MAX,
        end_offset_limit: int | None = None,
        aborted: Sequence[tuple[int, int]] = (),
        records: bytes | memoryview = b"",
    ) -> AcquireResult:
        """Acquire records for `member_id` from `headers`, the batch headers of a log
        read starting at `fetch_offset` (normally `next_fetch_offset()`); `records`
        is the read's buffer (the headers' positions refer to it), looked into only
        when the group orders by key or schedules delivery (`record_facts`).

        `end_offset_limit` (exclusive) bounds what may be acquired: the high watermark
        by default (the read already stops there), the last stable offset under
        read_committed. `aborted` lists the (first, last) offsets of aborted
        transactional batches in the read; under read_committed they are archived
        after acquisition (`Acquisition.archive_aborted`)."""
        assert member_id, "a member id is required"
        config = self.settings
        window = self._window
        assert window is not None, "share-partition not initialized"
        if max_bytes <= 0 or max_records <= 0 or config.delivery_paused:
            return AcquireResult((), 0, (), None, config.record_lock_duration_ms)
        usable = _usable_headers(headers, window.start_offset, end_offset_limit, max_bytes)
        if not usable:
            return AcquireResult((), 0, (), None, config.record_lock_duration_ms)
        if window.schedule.waiting_at:
            window.schedule.prune(self._clock.wall_ms(), window.start_offset)
        window.prune_held()
        room = self._room(window)
        if self._extended:
            # Held-back and waiting records entered the window without room: whatever
            # comes due, members hold at most the limit.
            budget = min(max_records, config.max_record_locks - window.acquired_records)
            if room <= 0:
                budget = min(
                    budget, _records_to_acquire(window, fetch_offset, max_records=budget, room=room)
                )
        else:
            budget = _records_to_acquire(window, fetch_offset, max_records=max_records, room=room)
        if budget <= 0:
            return AcquireResult((), 0, (), None, config.record_lock_duration_ms)
        start_before = window.start_offset
        walk_from = max(usable[0].base_offset, window.start_offset)
        holds = None
        if config.key_ordered or config.delivery_delay_max_ms > 0:
            holds = read_holds(
                window,
                usable,
                records,
                walk_from=walk_from,
                settings=config,
                clock=self._clock,
                bounds=(self.key_scan_max, self.scheduled_max, self.window_span_max),
                where=self.key,
            )
        acquisition = Acquisition(
            window,
            member_id=member_id,
            headers=usable,
            max_records=budget,
            batch_size=batch_size,
            mode=acquire_mode,
            limit=config.delivery_count_limit,
            deadline_ms=self._clock.monotonic_ms() + config.record_lock_duration_ms,
            window_room=room,
            holds=holds,
        )
        acquisition.archive_compacted(
            fetch_offset=fetch_offset, first_base_offset=usable[0].base_offset
        )
        gap = window.first_gap_offset()
        acquisition.run(first_offset=walk_from, last_offset=usable[-1].last_offset)
        if config.isolation_level is IsolationLevel.READ_COMMITTED:
            acquisition.archive_aborted(aborted)
        gap_closed = False
        if gap is not None and fetch_offset <= gap:
            window.mark_scanned(acquisition.scanned_to)
            gap_closed = window.gap_start != gap
        if acquisition.archived or gap_closed:
            window.advance_start()
        write = None
        if acquisition.archived:
            write = self._state_write(acquisition.archived)
        acquired = tuple(acquisition.acquired)
        assert window.start_offset >= start_before
        self._check_boundary()
        count = 0  # a loop, not sum() over a generator: one call per range less
        for taken in acquired:
            count += taken.last_offset - taken.first_offset + 1
        return AcquireResult(
            acquired,
            count,
            _overlapping(usable, acquired, sparse=holds is not None),
            write,
            config.record_lock_duration_ms,
        )

    # ---- acknowledgement

    def acknowledge(
        self, *, member_id: str, batches: Sequence[AckBatch], validated: bool = False
    ) -> AckResult:
        """Apply one partition's acknowledgement batches atomically (§8). `validated`:
        the caller already checked the batches' shape (`validate_batches`)."""
        config = self.settings
        window = self._window
        assert window is not None, "share-partition not initialized"
        error = None if validated else validate_batches(batches)
        if error is not None:
            return AckResult(error)
        renews = False
        for batch in batches:
            if AcknowledgeType.RENEW in batch.types:
                renews = True
                break
        if renews and not config.renew_enabled:
            return AckResult(ErrorCode.invalid_record_state)
        plan = plan_acknowledgement(window, member_id=member_id, batches=batches)
        if isinstance(plan, ErrorCode):
            return AckResult(plan)
        handle = window.new_handle()
        applied = apply_plan(
            window,
            plan,
            member_id=member_id,
            handle=handle,
            limit=config.delivery_count_limit,
            # only read by a RENEW: no clock read for the others
            renew_deadline_ms=(
                self._clock.monotonic_ms() + config.record_lock_duration_ms if renews else 0
            ),
        )
        window.drop_settled_below_start()
        self._check_boundary()
        if not applied.entries:
            return AckResult(renewed=applied.renewed)
        pending = self._pending_write(applied.entries, handle)
        return AckResult(pending=pending, renewed=applied.renewed)

    def release_member(self, *, member_id: str) -> PendingWrite | None:
        """The member's share session closed or its connection dropped: its ACQUIRED
        records become AVAILABLE, or ARCHIVED at the delivery limit or below the
        SPSO; delivery counts are kept (4.2). Pending like an acknowledgement."""
        window = self._w
        limit = self.settings.delivery_count_limit
        handle = window.new_handle()
        entries = []
        for batch in window.cache:
            for first, last, st in batch.states():
                if (
                    st.state is RecordState.ACQUIRED
                    and st.pending is None
                    and st.member_id == member_id
                ):
                    entries.append(
                        window.begin(
                            st, first, last, Event.SESSION_RELEASE, limit=limit, handle=handle
                        )
                    )
        self._check_boundary()
        if not entries:
            return None
        return self._pending_write(entries, handle)

    def commit_write(self, *, handle: WriteHandle) -> WriteCompletion:
        """The write of `handle` succeeded: complete its transitions, advance the SPSO."""
        window = self._window
        assert window is not None, "share-partition not initialized"
        limit = self.settings.delivery_count_limit
        states = window.states_of_handle(handle.id)
        assert states, f"unknown or finished write {handle}"
        available = False
        for first, last, st in states:
            window.commit(st, first, last, limit=limit)
            available = available or st.state is RecordState.AVAILABLE
        moved = window.advance_start()
        carried = self._carried.pop(handle.id)
        writes = () if window.start_offset <= carried else (self._state_write(()),)
        self._check_boundary()
        # under key order, a record done may let the later records of its key go
        unblocked = self.settings.key_ordered and window.keys is not None
        return WriteCompletion(moved, moved or available or unblocked, writes)

    def rollback_write(self, *, handle: WriteHandle) -> WriteCompletion:
        """The write of `handle` failed: undo its transitions (§8.5)."""
        window = self._w
        limit = self.settings.delivery_count_limit
        now_ms = self._clock.monotonic_ms()
        states = window.states_of_handle(handle.id)
        assert states, f"unknown or finished write {handle}"
        del self._carried[handle.id]
        expired = [
            entry
            for first, last, st in states
            if (entry := window.rollback(st, first, last, now_ms=now_ms, limit=limit)) is not None
        ]
        if not expired:
            self._check_boundary()
            return WriteCompletion(False, False)
        moved = window.advance_start()
        write = self._state_write(expired)
        self._check_boundary()
        return WriteCompletion(moved, True, (write,))

    # ---- time

    def expire_locks(self, *, now_ms: int) -> ExpiryResult:
        """Fire every lock whose deadline is <= now_ms (§3.2)."""
        window = self._w
        limit = self.settings.delivery_count_limit
        writes = []
        for lock in window.timers.pop_expired(now_ms):
            entry = self._expire(lock, limit)
            if entry is not None:
                window.advance_start()
                writes.append(self._state_write([entry]))
        self._check_boundary()
        return ExpiryResult(tuple(writes), bool(writes))

    def _expire(self, lock: Lock, limit: int) -> StateBatch | None:
        window = self._w
        batch = window.cache.batch_at(lock.first_offset)
        if batch is None:
            return None
        st = batch.state_at(lock.first_offset)
        if st.lock is not lock or st.state is not RecordState.ACQUIRED:
            return None  # cancelled meanwhile, or a write is pending (rollback checks)
        first, last = lock.first_offset, lock.last_offset
        window.move(st, first, last, Event.LOCK_EXPIRED, limit=limit)
        return window.persisted(st, first, last)

    # ---- dead-letter queue

    def has_dlq_work(self) -> bool:
        """Some ARCHIVING record may be waiting to be handed out by `dlq_copies`."""
        window = self._w
        return len(window.dlq_reasons) > len(window.dlq_dispatched)

    def dlq_copies(self) -> tuple[DlqCopy, ...]:
        """The ARCHIVING records whose state write is done and which were not handed
        out yet, as runs of equal delivery count and reason; each is handed out once
        (until a reload)."""
        return take_copies(self._w, recovered=self._dlq_recovered)

    def dlq_done(self, *, first_offset: int, last_offset: int) -> tuple[StateWrite | None, bool]:
        """The copies of the handed-out ARCHIVING offsets in [first, last] were written
        (or given up): they become ARCHIVED. Returns the write (it stands) and whether
        the SPSO moved."""
        entries = finish_copies(
            self._w,
            first_offset,
            last_offset,
            limit=self.settings.delivery_count_limit,
            recovered=self._dlq_recovered,
        )
        if not entries:
            return None, False
        moved = self._w.advance_start()
        self._check_boundary()
        return self._state_write(entries), moved

    # ---- the log

    def on_log_start_offset(self, *, log_start_offset: int) -> bool:
        """The log start offset moved (retention, DeleteRecords) (§4.4). Nothing is
        written now; the next write carries the new SPSO, which also moves on across
        settled terminal records above the new log start. Returns whether it moved."""
        window = self._w
        moved = window.move_log_start(log_start_offset, limit=self.settings.delivery_count_limit)
        if moved:
            window.advance_start()
        self._check_boundary()
        return moved

    def start_offset_write(self) -> StateWrite:
        """A state write carrying only the start offset and DeliveryCompleteCount
        (no batches): persists a start offset resolved from the reset policy."""
        return self._state_write(())

    # ---- helpers

    def _state_write(
        self, entries: Sequence[StateBatch], *, start: tuple[int, int] | None = None
    ) -> StateWrite:
        """The write of `entries` with the current SPSO and DeliveryCompleteCount, or
        with `start` = (SPSO, DeliveryCompleteCount) when given."""
        window = self._window
        assert window is not None, "share-partition not initialized"
        start_offset, complete = (
            (window.start_offset, window.delivery_complete_count) if start is None else start
        )
        return StateWrite(
            key=self.key,
            state_epoch=self.state_epoch,
            leader_epoch=self.leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=complete,
            state_batches=tuple(entries),
        )

    def _pending_write(self, entries: Sequence[StateBatch], handle: int) -> PendingWrite:
        """A pending write carries the SPSO its own commit will give (§4.1): records
        it completes at the start of the window are persisted below the start offset
        they move, in the same write. Memory moves only at `commit_write`."""
        window = self._window
        assert window is not None, "share-partition not initialized"
        start = window.tentative_start(handle)
        self._carried[handle] = start[0]
        return PendingWrite(self._state_write(entries, start=start), WriteHandle(handle))

    def _check_boundary(self) -> None:
        """Cheap invariants at every method boundary (the O(window) ones are in
        `check_invariants`)."""
        window = self._window
        assert window is not None, "share-partition not initialized"
        assert window.delivery_complete_count >= 0
        assert window.end_offset >= window.start_offset or window.has_inflight()
        assert window.has_inflight() or window.end_offset == window.start_offset


def _records_to_acquire(
    window: InFlightWindow, fetch_offset: int, *, max_records: int, room: int
) -> int:
    """The acquisition budget under the in-flight limit (§5, Kafka's
    lastOffsetAndMaxRecordsToAcquire): MaxRecords, at most the room left in the
    window (`room` = limit - window size), for cached and new records alike. With no
    room left, only records inside the window can be taken (released or expired ones,
    gap-window holes): at most those from the fetch offset to the end offset; a
    fetch beyond the window gets nothing."""
    if room > 0:
        return min(max_records, room)
    if fetch_offset > window.end_offset:
        return 0
    return min(max_records, window.end_offset - fetch_offset + 1)


_BATCH_LENGTH = operator.attrgetter("batch_length")


def _usable_headers(
    headers: Sequence[BatchHeader], start_offset: int, end_offset_limit: int | None, max_bytes: int
) -> list[BatchHeader]:
    """Headers at or above the SPSO, below `end_offset_limit`, within `max_bytes`
    (the first always goes, whatever its size: §7.10)."""
    if not headers:
        return []
    first, final = headers[0], headers[-1]
    if (
        first.base_offset + first.last_offset_delta >= start_offset
        and (
            end_offset_limit is None
            or final.base_offset + final.last_offset_delta < end_offset_limit
        )
        and sum(map(_BATCH_LENGTH, headers)) + LOG_OVERHEAD * len(headers) <= max_bytes
    ):
        # The usual read (from the next fetch offset, below the limit, within the
        # bytes): every header is usable. Headers ascend, so the first and the last
        # decide the offsets; only the bytes need the sum.
        return list(headers)
    usable: list[BatchHeader] = []
    total = 0
    for header in headers:
        if header.last_offset < start_offset:
            continue
        if end_offset_limit is not None and header.last_offset >= end_offset_limit:
            break
        if usable and total + header.size > max_bytes:
            break
        total += header.size
        usable.append(header)
    return usable


def _overlapping(
    headers: Sequence[BatchHeader], acquired: Sequence[AcquiredRecords], *, sparse: bool = False
) -> tuple[BatchHeader, ...]:
    """The log batches to send with `acquired`: those from the first acquired offset to
    the last (§7.8); `sparse` (key order, scheduled delivery: acquisitions with holes)
    leaves out the batches no acquired range touches."""
    if not acquired or not headers:
        return ()
    if sparse and len(acquired) > 1:
        spans = sorted((r.first_offset, r.last_offset) for r in acquired)
        kept = []
        index = 0
        for header in headers:
            first, last = header.base_offset, header.last_offset
            while index < len(spans) and spans[index][1] < first:
                index += 1
            if index < len(spans) and spans[index][0] <= last:
                kept.append(header)
        return tuple(kept)
    if len(acquired) == 1:
        first, last = acquired[0].first_offset, acquired[0].last_offset
    else:
        first = min([r.first_offset for r in acquired])
        last = max([r.last_offset for r in acquired])
    head, tail = headers[0], headers[-1]
    if head.base_offset + head.last_offset_delta >= first and tail.base_offset <= last:
        return tuple(headers)  # headers ascend: all of them overlap (the usual case)
    return tuple([h for h in headers if h.last_offset >= first and h.base_offset <= last])
