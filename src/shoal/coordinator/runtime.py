"""The coordinator runtime: the shards of one coordinator, one per partition of its
internal topic, and everything done to them (docs/design/coordinators.md, "The runtime").

Theory of operation. A coordinator (transactions on `__transaction_state`, share state
on `__share_group_state`, groups on `__consumer_offsets`) is split into shards, one
per partition of its topic; a key lives on the partition its `Placement` names
(Kafka's placement, coordinator/placement.py). A shard is an event-sourced state
machine: its operations return a `CoordinatorResult` (records, response, effects) and
change nothing; only `shard.replay(record, offset)` changes it. The runtime hosts the
shards and does the rest, the same way for every coordinator:

- Loading (`load_partition`): a fresh shard from the factory replays the partition's
  records, read by the host's loader (or handed in). Start-up and live operation
  share `replay`, so a shard loaded from its log equals the live one.
- Writing (`write(partition, op)`): `op(shard)` decides; the result's records are
  appended through the partition's `RecordSink` (all or none: a refused append
  raises a `RecordSinkError` and the shard is untouched), replayed in order at the
  offsets the sink gave, the result's effects are handed to the host's effect
  handler, and only then does the caller get the result back: nothing a client is
  told is ahead of what was written. `read(partition, op)` runs a query on a shard;
  `write_all`/`read_all` visit every hosted partition (cross-shard work such as
  ListGroups or the cold snapshots).
- Effects (`on_effects(handler)`): plain values a shard asks the world for (write
  markers, initialise share state); the runtime never looks inside, it passes each
  result's effects, after the replay, to the handler with the partition.
- Timed writes (`add_timed`, then `next_deadline`/`fire` from the host's one timer
  driver): an operation run on every hosted partition every interval, or when a
  shard's own deadline comes, as an ordinary write (records, replay, effects). A
  failed timed write is logged and tried again after `TIMED_WRITE_RETRY_MS`.
  `due_now(name)` makes an interval timed write due at once (the host saw a reason
  not to wait: the group log's window of appended records); it runs at the driver's
  next pass, and its interval starts again from there. A timed write of idempotent
  re-writes may have its records written in several appends (`records_per_append`,
  halved while its sink finds one too large), and a `start` hook called before each
  run over the partitions (a budget the partitions share).
- Append linger: a partition whose sink is a `LingeringRecordSink`
  (coordinator/append_linger.py) stages the records of several writes and writes
  them as one batch when its linger passes. The runtime owns the bookkeeping:
  `appends_staged()` is the mark a request takes before it runs, `unwritten()`
  the partitions whose staged records are not in the log yet (the host waits for
  them before answering); `flush_deadline` and `flush_due` are the host's flush
  timer (kept apart from the timed writes: a linger of 0 flushes at the driver's
  next pass, after every request). A failed flush lost records the shard had replayed: the
  runtime reloads that partition from its log and tells the host's flush
  listener (`on_flushed`), which fails the answers that waited.
- Maintenance and pruning: a timed write marked `then_prune` (re-writing stale keys)
  is followed by each shard's `prune_offset`: `fire` returns, per partition, the
  offset below which its log is no longer needed (`prunable()` asks at any time),
  skipping partitions with staged records (their shard is ahead of the log).
  The host deletes (coordinator/pruning.py, `prune_log`): the runtime does no I/O.

- Durability awaited elsewhere (`append`, then `replay_appended`): a host whose
  appends must be durable before anything replays them, and which waits for that
  off its event loop (the metadata log: append, fsync in a disk worker, replay),
  splits a write in two. `append` appends through the partition's sink and replays
  nothing; once the host made the records durable, `replay_appended` replays them at
  the offsets the sink gave. The records are the result of an op the host ran on the
  partition's shard, and no other write may come between the two halves (the host
  serialises its writes); effects, if any, are the host's.

Invariants: a shard only ever sees records its sink accepted, in sink order; a
result without records touches neither; effects and the response come after the
replay; a partition not hosted answers `PartitionNotLoaded`.

Sans-I/O: no asyncio, no clock (times come in as arguments), no threads.

Past 600 lines on purpose: it is the one runtime of every coordinator, and each part
above (hosting, writes, timed writes, linger, pruning) is what the shells no longer do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from shoal.coordinator.append_linger import LingeringRecordSink
from shoal.coordinator.log_sink import CoordinatorBatchTooLarge
from shoal.coordinator.placement import Placement
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.sink import (
    NO_OFFSET,
    CoordinatorUnavailable,
    InMemoryRecordSink,
    RecordSink,
    RecordSinkError,
    RecordSinkFull,
    RecordSinkUnavailable,
    record_offsets,
)

log = logging.getLogger(__name__)

RecordT = TypeVar("RecordT")
RecordT_contra = TypeVar("RecordT_contra", contravariant=True)
ResponseT = TypeVar("ResponseT")

TIMED_WRITE_RETRY_MS = 1_000
"""After a timed write failed on a partition (its sink refused), wait at least this
long before running it there again."""


class Shard(Protocol[RecordT_contra]):
    """Anything whose state changes only through `replay`. `offset` is the record's
    offset in the coordinator's log (`NO_OFFSET` if the sink has none): shards that
    prune their log remember where their keys' records are."""

    def replay(self, record: RecordT_contra, offset: int = NO_OFFSET, /) -> None: ...


ShardT = TypeVar("ShardT", bound=Shard[Any])


class PartitionNotLoaded(CoordinatorUnavailable):
    """The partition is not hosted here (not loaded yet, or unloaded)."""


EffectHandler = Callable[[int, tuple[object, ...]], None]
"""Called with a partition and the effects of a result just replayed there."""
FlushListener = Callable[[int, RecordSinkError | None], None]
"""Called with a partition after each flush of its lingering sink (None: written)."""
Loader = Callable[[int], Iterable[tuple[int, Any]]]
"""A partition's records as `(offset, record)`, from its log start to its end."""


def _no_effects(_partition: int, _effects: tuple[object, ...]) -> None:
    """The effect handler of a runtime whose host registered none."""


def _no_listener(_partition: int, _failure: RecordSinkError | None) -> None:
    """The flush listener of a runtime whose host registered none."""


@dataclass(frozen=True, slots=True)
class TimedWrite(Generic[ShardT]):
    """An operation the runtime runs by itself as a write on hosted partitions.

    Due either every `interval_ms()` ms (on every hosted partition; first one interval
    after the runtime is first asked, then one interval after each run) or, per
    partition, when `deadline_ms(shard)` (the shard's own next deadline, on the
    host's monotonic clock; None: nothing armed) has come. `operation(shard, now_ms)`
    returns the result to write. With `then_prune`, `fire` reports each partition's
    prune offset after running it (the maintenance pass). With `records_per_append`
    (re-writes only: records that change no state, so a write cut in parts is as
    good as whole), the result's records are written in appends of at most that
    many, each halved while its sink refuses it as too large for one batch.
    `start(now_ms)`, if given, is called before each run over the partitions."""

    name: str
    operation: Callable[[ShardT, int], CoordinatorResult[Any, Any]]
    interval_ms: Callable[[], int] | None = None
    deadline_ms: Callable[[ShardT], int | None] | None = None
    then_prune: bool = False
    records_per_append: int | None = None
    start: Callable[[int], None] | None = None

    def __post_init__(self) -> None:
        assert (self.interval_ms is None) != (self.deadline_ms is None), (
            f"timed write {self.name}: an interval or a shard deadline, not both"
        )
        assert self.records_per_append is None or self.records_per_append >= 1


@dataclass(slots=True)
class Fired:
    """What `fire` did: the timed writes that ran, and the offsets below which
    partitions' logs may now be deleted."""

    names: list[str]
    prune: dict[int, int]


class _Hosted(Generic[ShardT, RecordT]):
    """One hosted partition (Kafka's CoordinatorContext): its shard and its sink."""

    __slots__ = ("lingering", "retry_at", "shard", "sink")

    def __init__(self, shard: ShardT, sink: RecordSink[RecordT]) -> None:
        self.shard = shard
        self.sink = sink
        self.lingering: LingeringRecordSink[Any] | None = (
            sink if isinstance(sink, LingeringRecordSink) else None
        )
        self.retry_at: dict[str, int] = {}
        """Timed write name -> monotonic ms before which it does not run again here."""


class CoordinatorRuntime(Generic[ShardT, RecordT]):
    """The shards of one coordinator over the partitions of its topic. See the module
    docstring.

    `new_shard(partition)` builds a partition's empty shard; `sinks` holds one sink
    per partition; `placement` maps keys to partitions (default: the key's
    `str`); `loader(partition)` reads a partition's `(offset, record)`s back;
    `prune_offset(shard)` says below which offset a shard needs nothing. Every
    partition is hosted from the start with an empty shard; `load_partition`
    replaces it by one replayed from the log."""

    def __init__(
        self,
        *,
        new_shard: Callable[[int], ShardT],
        sinks: Sequence[RecordSink[RecordT]],
        name: str = "coordinator",
        placement: Placement[Any] | None = None,
        loader: Loader | None = None,
        prune_offset: Callable[[ShardT], int | None] | None = None,
    ) -> None:
        self._new_shard: Callable[[int], ShardT] = new_shard
        self._sinks: tuple[RecordSink[RecordT], ...] = tuple(sinks)
        assert self._sinks, "a coordinator topic has at least one partition"
        self.name = name
        """The coordinator topic's name, for logs."""
        self._placement: Placement[Any] = (
            placement if placement is not None else Placement(len(self._sinks), key_text=str)
        )
        assert self._placement.partitions == len(self._sinks), (
            self._placement.partitions,
            len(self._sinks),
        )
        self._loader = loader
        self._prune_offset = prune_offset
        self._hosted: list[_Hosted[ShardT, RecordT] | None] = [
            self._host(index, new_shard(index)) for index in range(len(self._sinks))
        ]
        self._effects: EffectHandler = _no_effects
        self._flushed: FlushListener = _no_listener
        self._timed: list[TimedWrite[ShardT]] = []
        self._next_due: dict[str, int] = {}
        """Interval timed write name -> the monotonic ms it is next due."""
        self._due_now: set[str] = set()
        """Interval timed writes made due at once (`due_now`)."""

    def _host(self, index: int, shard: ShardT) -> _Hosted[ShardT, RecordT]:
        hosted = _Hosted(shard, self._sinks[index])
        if hosted.lingering is not None:
            hosted.lingering.on_flushed = lambda failure: self._flush_done(index, failure)
        return hosted

    # ---- the host's hooks

    def on_effects(self, handler: EffectHandler) -> None:
        """Register the handler of every replayed result's effects (one per runtime)."""
        self._effects = handler

    def on_flushed(self, listener: FlushListener) -> None:
        """Register the listener told of each lingering flush (one per runtime)."""
        self._flushed = listener

    def add_timed(self, *timed: TimedWrite[ShardT]) -> None:
        """Schedule timed writes (module docstring)."""
        names = {t.name for t in self._timed}
        for entry in timed:
            assert entry.name not in names, f"timed write {entry.name} added twice"
            names.add(entry.name)
            self._timed.append(entry)

    def due_now(self, name: str) -> None:
        """Make the interval timed write `name` due at once: `next_deadline` answers
        the time it is asked at, and the next `fire` runs it; its interval then
        starts again from that run. A call made while it runs (its own appends may
        be the reason) is answered by that run."""
        assert any(t.name == name and t.interval_ms is not None for t in self._timed), name
        self._due_now.add(name)

    # ---- placement and hosting

    @property
    def partitions(self) -> int:
        """The coordinator topic's partition count."""
        return len(self._sinks)

    def partition_of(self, key: Hashable) -> int:
        """The partition owning `key` (the coordinator's `Placement`)."""
        return self._placement.partition_of(key)

    def hosted(self, partition: int) -> bool:
        return self._hosted[partition] is not None

    def shard_at(self, partition: int) -> ShardT:
        """The live shard of `partition`: read it freely, change it only by writes.
        Raises `PartitionNotLoaded`."""
        return self._context(partition).shard

    def shards(self) -> Iterator[tuple[int, ShardT]]:
        """(partition, shard) of every hosted partition, in partition order."""
        for index, hosted in enumerate(self._hosted):
            if hosted is not None:
                yield index, hosted.shard

    def sink_at(self, partition: int) -> RecordSink[RecordT]:
        return self._sinks[partition]

    def load_partition(
        self, partition: int, records: Iterable[tuple[int, RecordT]] | None = None
    ) -> ShardT:
        """Host `partition` with a fresh shard that replayed `records` (`(offset,
        record)` read back from its log; the loader's when None). Nothing is appended.
        Returns the new shard."""
        if records is None:
            assert self._loader is not None, f"{self.name}: no loader to read partition logs"
            records = self._loader(partition)
        shard = self._new_shard(partition)
        replay = shard.replay
        for offset, record in records:
            replay(record, offset)
        self._hosted[partition] = self._host(partition, shard)
        return shard

    def unload(self, partition: int) -> None:
        """Stop hosting `partition` (its writes answer `PartitionNotLoaded`)."""
        self._hosted[partition] = None

    # ---- writes and reads

    def write(
        self, partition: int, op: Callable[[ShardT], CoordinatorResult[RecordT, ResponseT]]
    ) -> CoordinatorResult[RecordT, ResponseT]:
        """Run `op` on the partition's shard, append its records, replay them, hand its
        effects to the handler; then return the result. Raises `PartitionNotLoaded`
        or the sink's `RecordSinkError` (then nothing was replayed or handled)."""
        hosted = self._hosted[partition]
        if hosted is None:
            raise PartitionNotLoaded(f"{self.name}-{partition} is not loaded")
        result = op(hosted.shard)
        if result.records:
            self._append_replay(partition, hosted, result.records)
        if result.effects:
            self._effects(partition, result.effects)
        return result

    def write_all(
        self, op: Callable[[ShardT], CoordinatorResult[RecordT, ResponseT]]
    ) -> list[tuple[int, CoordinatorResult[RecordT, ResponseT]]]:
        """`write` on every hosted partition; a partition whose sink refuses is logged
        and left out (it is tried again at the next call)."""
        written = []
        for index, hosted in enumerate(self._hosted):
            if hosted is None:
                continue
            try:
                written.append((index, self.write(index, op)))
            except RecordSinkError as exc:
                log.warning("%s-%d: write not done: %s", self.name, index, exc)
        return written

    def read(self, partition: int, op: Callable[[ShardT], ResponseT]) -> ResponseT:
        """`op` on the partition's shard (a query: it returns no records). Raises
        `PartitionNotLoaded`."""
        return op(self._context(partition).shard)

    def read_all(self, op: Callable[[ShardT], ResponseT]) -> list[ResponseT]:
        """`op` on every hosted shard, in partition order (cross-shard reads)."""
        return [op(shard) for _, shard in self.shards()]

    def append(self, partition: int, records: Sequence[RecordT]) -> int | Sequence[int]:
        """The first half of a write whose durability the host awaits itself (module
        docstring): append `records` (decided on the partition's shard) through the
        partition's sink, replay nothing; returns what the sink returned, for
        `replay_appended`. Raises `PartitionNotLoaded` or the sink's
        `RecordSinkError`."""
        self._context(partition)
        return self._sinks[partition].append(tuple(records))

    def replay_appended(
        self, partition: int, records: Sequence[RecordT], appended: int | Sequence[int]
    ) -> None:
        """The second half: replay `records`, appended by `append` and now durable, at
        the offsets the sink gave (`appended`). Raises `PartitionNotLoaded`."""
        self._replay(self._context(partition), records, appended)

    def _append_replay(
        self, partition: int, hosted: _Hosted[ShardT, RecordT], records: Sequence[RecordT]
    ) -> None:
        """Append, then replay at the offsets the sink gave. A sink refuses with a
        `RecordSinkError`; anything else it raises (a bug, a simulated crash)
        propagates the same way, with nothing replayed."""
        if type(records) is not tuple:
            records = tuple(records)
        appended = hosted.sink.append(records)  # a refusal raises: nothing replayed
        self._replay(hosted, records, appended)

    @staticmethod
    def _replay(
        hosted: _Hosted[ShardT, RecordT], records: Sequence[RecordT], appended: int | Sequence[int]
    ) -> None:
        replay = hosted.shard.replay
        if type(appended) is int and appended != NO_OFFSET:  # the usual: a log's offset
            for index, record in enumerate(records):
                replay(record, appended + index)
        else:
            for record, offset in zip(records, record_offsets(appended, len(records)), strict=True):
                replay(record, offset)

    def _context(self, partition: int) -> _Hosted[ShardT, RecordT]:
        hosted = self._hosted[partition]
        if hosted is None:
            raise PartitionNotLoaded(f"{self.name}-{partition} is not loaded")
        return hosted

    # ---- append linger

    def appends_staged(self) -> int:
        """Appends staged by lingering sinks so far: the mark a request takes before
        it runs (0 without a linger)."""
        return sum(h.lingering.appends_staged for h in self._hosted if h and h.lingering)

    def unwritten(self) -> list[int]:
        """Partitions whose staged records are not in their log yet."""
        return [
            index
            for index, hosted in enumerate(self._hosted)
            if hosted is not None
            and (sink := hosted.lingering) is not None
            and sink.appends_written < sink.appends_staged
        ]

    def staged(self, partition: int) -> bool:
        hosted = self._hosted[partition]
        sink = None if hosted is None else hosted.lingering
        return sink is not None and sink.appends_written < sink.appends_staged

    def flush_deadline(self) -> int | None:
        """When the earliest staged batch is due (None: nothing staged)."""
        deadlines = [
            d
            for h in self._hosted
            if h and h.lingering and (d := h.lingering.deadline_ms) is not None
        ]
        return min(deadlines, default=None)

    def flush_due(self, now_ms: int) -> int:
        """Write every staged batch whose linger has passed; how many were."""
        return sum(h.lingering.flush_due(now_ms) for h in self._hosted if h and h.lingering)

    def flush_all(self) -> None:
        """Write everything staged now (a failure goes to the flush listener)."""
        for hosted in self._hosted:
            if hosted is not None and hosted.lingering is not None:
                try:
                    hosted.lingering.flush()
                except RecordSinkError:
                    pass  # reported through _flush_done

    def _flush_done(self, partition: int, failure: RecordSinkError | None) -> None:
        if failure is not None:
            log.error(
                "%s-%d: staged writes lost: %s; the partition is reloaded from its log",
                self.name,
                partition,
                failure,
            )
            if self._loader is not None:
                try:
                    self.load_partition(partition)
                except Exception:  # the log is offline: its writes fail from now on anyway
                    log.exception("%s-%d: reload after a lost write failed", self.name, partition)
        self._flushed(partition, failure)

    # ---- timed writes, maintenance, pruning

    def next_deadline(self, now_ms: int) -> int | None:
        """The earliest monotonic ms at which a timed write is due (None: none armed)."""
        earliest: int | None = None
        for timed in self._timed:
            due = self._due(timed, now_ms)
            if due is not None and (earliest is None or due < earliest):
                earliest = due
        return earliest

    def fire(self, now_ms: int) -> Fired:
        """Run every timed write due at `now_ms`; returns what ran and the prune offsets
        a maintenance pass found."""
        fired = Fired(names=[], prune={})
        for timed in self._timed:
            if timed.interval_ms is not None:
                due = self._next_due.get(timed.name)
                if timed.name not in self._due_now and (due is None or due > now_ms):
                    continue
                self._next_due[timed.name] = now_ms + max(1, timed.interval_ms())
                ran = self._run(timed, now_ms, [i for i, _ in self.shards()])
                self._due_now.discard(timed.name)  # asked before or during this run: done
            else:
                ran = self._run(timed, now_ms, self._due_partitions(timed, now_ms))
            if ran:
                fired.names.append(timed.name)
                if timed.then_prune:
                    fired.prune.update(self.prunable())
        return fired

    def prune_offsets(self) -> dict[int, int]:
        """Per hosted partition, the offset below which its shard needs nothing of its
        log (partitions that cannot say are left out)."""
        if self._prune_offset is None:
            return {}
        offsets: dict[int, int] = {}
        for index, shard in self.shards():
            offset = self._prune_offset(shard)
            if offset is not None:
                offsets[index] = offset
        return offsets

    def prunable(self) -> dict[int, int]:
        """`prune_offsets` of the partitions whose log may be deleted now: not those
        with staged records (their shard is ahead of the log; if that batch were lost,
        the reload needs records below the shard's offset)."""
        return {p: offset for p, offset in self.prune_offsets().items() if not self.staged(p)}

    def _due(self, timed: TimedWrite[ShardT], now_ms: int) -> int | None:
        if timed.interval_ms is not None:
            due = self._next_due.get(timed.name)
            if due is None:
                due = self._next_due[timed.name] = now_ms + max(1, timed.interval_ms())
            return now_ms if timed.name in self._due_now else due
        earliest: int | None = None
        for index, shard in self.shards():
            deadline = self._shard_deadline(timed, index, shard)
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    def _shard_deadline(self, timed: TimedWrite[ShardT], index: int, shard: ShardT) -> int | None:
        assert timed.deadline_ms is not None
        deadline = timed.deadline_ms(shard)
        if deadline is None:
            return None
        hosted = self._hosted[index]
        retry = None if hosted is None else hosted.retry_at.get(timed.name)
        return deadline if retry is None else max(deadline, retry)

    def _due_partitions(self, timed: TimedWrite[ShardT], now_ms: int) -> list[int]:
        return [
            index
            for index, shard in self.shards()
            if (d := self._shard_deadline(timed, index, shard)) is not None and d <= now_ms
        ]

    def _run(self, timed: TimedWrite[ShardT], now_ms: int, partitions: list[int]) -> bool:
        """Run `timed` as a write on `partitions`; True if it ran on any."""
        if timed.start is not None:
            timed.start(now_ms)
        records = 0
        for index in partitions:
            hosted = self._hosted[index]
            if hosted is None:
                continue
            try:
                if timed.records_per_append is None:
                    result = self.write(index, lambda shard: timed.operation(shard, now_ms))
                else:
                    result = self._write_in_parts(index, hosted, timed, now_ms)
            except RecordSinkError as exc:
                retry = "at its next interval"
                if timed.deadline_ms is not None:
                    hosted.retry_at[timed.name] = now_ms + TIMED_WRITE_RETRY_MS
                    retry = f"in {TIMED_WRITE_RETRY_MS} ms"
                log.warning(
                    "%s-%d: timed write %s not done, tried again %s: %s",
                    self.name,
                    index,
                    timed.name,
                    retry,
                    exc,
                )
                continue
            hosted.retry_at.pop(timed.name, None)
            records += len(result.records)
        if records:
            log.info("%s: %s wrote %d records", self.name, timed.name, records)
        return bool(partitions)

    def _write_in_parts(
        self,
        partition: int,
        hosted: _Hosted[ShardT, RecordT],
        timed: TimedWrite[ShardT],
        now_ms: int,
    ) -> CoordinatorResult[Any, Any]:
        """`write` of a timed re-write in appends of `records_per_append` (TimedWrite).
        A sink error propagates; the parts written before it stay (they change no
        state)."""
        assert timed.records_per_append is not None
        result = timed.operation(hosted.shard, now_ms)
        records = tuple(result.records)
        step = timed.records_per_append
        for start in range(0, len(records), step):
            self._append_halving(partition, hosted, records[start : start + step])
        if result.effects:
            self._effects(partition, result.effects)
        return result

    def _append_halving(
        self, partition: int, hosted: _Hosted[ShardT, RecordT], records: tuple[RecordT, ...]
    ) -> None:
        try:
            self._append_replay(partition, hosted, records)
        except CoordinatorBatchTooLarge:
            if len(records) == 1:
                raise  # one record too large for a batch: cannot happen unless limits shrank
            half = len(records) // 2
            self._append_halving(partition, hosted, records[:half])
            self._append_halving(partition, hosted, records[half:])


__all__ = [
    "NO_OFFSET",
    "TIMED_WRITE_RETRY_MS",
    "CoordinatorRuntime",
    "CoordinatorUnavailable",
    "EffectHandler",
    "Fired",
    "FlushListener",
    "InMemoryRecordSink",
    "Loader",
    "PartitionNotLoaded",
    "RecordSink",
    "RecordSinkError",
    "RecordSinkFull",
    "RecordSinkUnavailable",
    "Shard",
    "TimedWrite",
    "record_offsets",
]
