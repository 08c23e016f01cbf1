"""The broker's log cleaner: when and where compaction runs (Kafka's LogCleaner and
LogCleanerManager).

The log package knows how to compact one partition (log/clean.py: `clean_plan` on
the owner, `CleanPlan.run` on any thread, `finish_clean` back on the owner); this
shell decides which partition to clean, when, on which thread and how fast:

- `log.cleaner.threads` workers (default 1), each an asyncio task with one dedicated
  thread of its own (never the fsync pool of server/services/disk_io.py, so a long clean never
  delays an acknowledgement). A worker takes the filthiest partition on the loop,
  runs its plan in its thread, and finishes it on the loop. The count follows the
  key when it is changed at run time (extra workers stop after their current clean).
- The filthiest partition: among the compacted partitions (`cleanup.policy` holds
  `compact`) not being cleaned and not uncleanable, those whose dirty records are
  overdue by `max.compaction.lag.ms` first, then the highest dirty ratio. The log
  decides whether anything is cleanable (`min.cleanable.dirty.ratio`,
  `min.compaction.lag.ms`): its `clean_plan` is None otherwise, and the next
  candidate is asked. With nothing to clean a worker sleeps `log.cleaner.backoff.ms`
  (woken early by a config change or shutdown). A clean that made no progress (its
  end offset not past the first dirty offset) is logged and its partition is not
  taken again for `log.cleaner.backoff.ms`, so a partition the key map cannot serve
  never spins a worker.
- Memory: the key map of one clean holds at most `key_map_entries` keys, the
  worker's share of `log.cleaner.dedupe.buffer.size` (split between the threads as
  Kafka does) times `log.cleaner.io.buffer.load.factor`, at `KEY_MAP_ENTRY_BYTES` per
  key (what a key costs here, not Kafka's 24 bytes). That buffer size is the one
  named bound of the cleaner's memory.
- I/O: `log.cleaner.io.max.bytes.per.second` is shared by every worker (`Throttler`,
  Kafka's Throttler: rate measured over `THROTTLE_CHECK_INTERVAL_S` windows, the
  excess slept in the worker thread that reported it; unlike Kafka's, a window is
  also measured as soon as it holds more bytes than the rate allows it, so a short
  burst is slowed at once rather than at the next call after the window).
- `log.cleaner.enable=false` (static, as in Kafka) starts no worker. Every other
  log.cleaner.* key and a topic's cleanup.policy are read at each pass, so their
  dynamic changes (server/metadata/dynamic_config.py, IncrementalAlterConfigs on a topic)
  apply from the next pass; `reconfigure` wakes the workers and resizes the pool.

Coordination (the log's `finish_clean` is the safety net: it swaps segments only if
the log is still the one the plan was made of, and discards a stale result):

- retention, DeleteRecords and appends run on the loop while a plan runs; the log
  reconciles them in `finish_clean`;
- a deleted topic or partition: `finish_clean` is not called when the manager no
  longer holds the very log object the plan came from (the plan's files went with
  the renamed directory); its counters are forgotten;
- an offline partition (a storage error): its `clean_plan`/`finish_clean` raise
  LogError; it is marked uncleanable (Kafka's uncleanable partitions) and skipped
  until its topic is deleted or the broker restarts;
- an unexpected failure of a clean is logged with its partition and marks that
  partition uncleanable; the worker goes on with others;
- shutdown (`close`): the throttle refuses further bytes (`CleanerStopped`), so a
  running plan stops at its next throttle call, removes its partial output and is
  discarded by `finish_clean` (a plan that completed first is swapped in as usual).
  A clean cut short by a crash leaves `.cleaned` files, which the log removes at the
  next open (log/clean_swap.py).

Metrics (server/observability/metrics_collectors.py reads `state`): Kafka's max-dirty-percent,
time-since-last-run-ms and uncleanable-partitions-count (LogCleanerManager), and
cleaner-recopy-percent, max-buffer-utilization-percent, max-clean-time-secs,
max-compaction-delay-secs and DeadThreadCount (LogCleaner), plus each partition's
backlog (dirty bytes) and progress (bytes cleaned).

Just past 600 lines: the cleaner's threads, its choice of log, throttle and metrics
are one service; the cleaning itself is log/cleaner.py.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from shoal.clock import Clock, measure_ns
from shoal.config import BrokerConfig, broker_keys, effective_topic_config
from shoal.log.api import LogError

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]

KEY_MAP_ENTRY_BYTES = 160
"""What one key of the key map counts against `log.cleaner.dedupe.buffer.size`: what
it costs in CPython (log/key_map.py keeps a dict of 16-byte digests to int offsets:
about 135-150 bytes an entry with the dict's own table, measured with tracemalloc;
tests/unit/server/test_log_cleaner.py checks the bound), not Kafka's 24
(`key_map.ENTRY_BYTES`, a packed array), so that the buffer size bounds the memory it
names. The same setting thus maps about 6.7 times fewer keys per clean than Kafka's;
a topic with more dirty keys than that is cleaned in more passes."""
THROTTLE_CHECK_INTERVAL_S = 0.3
"""The throttler measures the rate over windows of this length (Kafka's Throttler
checks every 300 ms)."""


class CleanerStopped(OSError):
    """Raised by the throttle in a worker thread once the cleaner is closing: the
    plan being run stops there. An OSError, so that the plan's own failure path runs
    (log/cleaner.py `CleanPlan.run`: it removes its partial output and returns a
    result with this error, which `finish_clean` discards)."""


class CleanStatsView(Protocol):
    """What the cleaner reads of a finished clean (log/cleaner.py `CleanStats`)."""

    @property
    def first_dirty_offset(self) -> int: ...
    @property
    def end_offset(self) -> int: ...
    @property
    def bytes_read(self) -> int: ...
    @property
    def bytes_written(self) -> int: ...
    @property
    def keys_mapped(self) -> int: ...
    @property
    def discarded(self) -> str | None: ...


class ProgressView(Protocol):
    """What the cleaner and its metrics read of a log's backlog (`CleanerProgress`)."""

    @property
    def dirty_bytes(self) -> int: ...
    @property
    def dirty_ratio(self) -> float: ...


class PlanView(Protocol):
    """A clean made on the loop, run in a worker (log/cleaner.py `CleanPlan`)."""

    def run(self, *, key_map_entries: int, throttle: Callable[[int], None] | None) -> Any: ...

    def discard(self) -> None: ...


class CleanableLog(Protocol):
    """What the cleaner asks of a partition log (log/partition.py): the result a plan's
    `run` returns goes back, unread, to `finish_clean`."""

    def clean_plan(self, now_wall_ms: int) -> PlanView | None: ...

    def finish_clean(self, result: Any) -> CleanStatsView: ...

    def cleaner_progress(self) -> ProgressView: ...

    def compaction_delay_ms(self, now_wall_ms: int) -> int: ...


class TopicView(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> int: ...
    @property
    def configs(self) -> dict[str, Any]: ...


class LogSource(Protocol):
    """The logs to clean: `LogManager`'s queries."""

    def topics(self) -> Sequence[TopicView]: ...

    def partition(self, topic: str, index: int) -> CleanableLog | None: ...


class Throttler:
    """Bytes per second shared by every cleaner thread (Kafka's Throttler). `rate()`
    is read at each call, so a dynamic change applies at once; infinity (Kafka's
    default, Double.MAX_VALUE) or a non-positive rate throttles nothing."""

    def __init__(
        self,
        rate: Callable[[], float],
        *,
        now_s: Callable[[], float] = time.monotonic,
        sleep_s: Callable[[float], bool] | None = None,
        check_interval_s: float = THROTTLE_CHECK_INTERVAL_S,
    ) -> None:
        """`sleep_s(seconds)` sleeps and returns True if woken by `stop` (default: a
        wait on the stop event)."""
        self._rate = rate
        self._now_s = now_s
        self._check_interval_s = check_interval_s
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._sleep_s = sleep_s or self._stopped.wait
        self._period_start_s = now_s()
        self._observed = 0
        self.slept_s = 0.0
        """Total time slept by the threads throttled (tests, benchmarks)."""

    def __call__(self, size_bytes: int) -> None:
        """Count `size_bytes` read or written; sleep in the caller's thread while the
        rate is above the limit. Raises CleanerStopped once `stop` was called."""
        if self._stopped.is_set():
            raise CleanerStopped("the log cleaner is shutting down")
        rate = self._rate()
        if not math.isfinite(rate) or rate <= 0 or rate >= _DOUBLE_MAX:
            return
        with self._lock:  # as Kafka's: one thread sleeps at a time, the others queue
            self._observed += size_bytes
            elapsed_s = self._now_s() - self._period_start_s
            if (
                elapsed_s < self._check_interval_s
                and self._observed < rate * self._check_interval_s
            ):
                return  # measured once a window passed, or at once past a window's bytes
            excess_s = self._observed / rate - elapsed_s
            if excess_s > 0:
                self.slept_s += excess_s
                if self._sleep_s(excess_s) or self._stopped.is_set():
                    raise CleanerStopped("the log cleaner is shutting down")
            self._period_start_s = self._now_s()
            self._observed = 0

    def stop(self) -> None:
        """Wake a sleeping thread and make every further call raise CleanerStopped."""
        self._stopped.set()


_DOUBLE_MAX = 1.7976931348623157e308


def reconfiguration_refusal(current: BrokerConfig, new: BrokerConfig) -> str | None:
    """Why a dynamic change of `log.cleaner.threads` is refused, in Kafka's words
    (LogCleaner.validateReconfiguration: at least 1, and at least half and at most
    double the current count), or None."""
    threads = new.get(broker_keys.LOG_CLEANER_THREADS)
    running = current.get(broker_keys.LOG_CLEANER_THREADS)
    if threads == running:
        return None
    reason = None
    if threads < 1:
        reason = "Log cleaner threads should be at least 1"
    elif threads < running // 2:
        reason = (
            f"Log cleaner threads cannot be reduced to less than half the current value {running}"
        )
    elif threads > running * 2:
        reason = (
            f"Log cleaner threads cannot be increased to more than double the current value "
            f"{running}"
        )
    if reason is None:
        return None
    return (
        f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} for "
        "configuration Invalid dynamic configuration"
    )


def key_map_entries(config: BrokerConfig, *, threads: int) -> int:
    """One worker's key map capacity in keys: its share of
    `log.cleaner.dedupe.buffer.size` times `log.cleaner.io.buffer.load.factor`."""
    buffer_bytes = config.get(broker_keys.LOG_CLEANER_DEDUPE_BUFFER_SIZE) // max(1, threads)
    load_factor = config.get(broker_keys.LOG_CLEANER_IO_BUFFER_LOAD_FACTOR)
    return max(1, int(buffer_bytes // KEY_MAP_ENTRY_BYTES * load_factor))


@dataclass(slots=True)
class LastClean:
    """One worker's last clean, as Kafka's cleaner thread keeps its `lastStats`."""

    bytes_read: int = 0
    bytes_written: int = 0
    elapsed_s: float = 0.0
    buffer_utilization: float = 0.0


@dataclass(slots=True)
class CleanerState:
    """What the metrics read (server/observability/metrics_collectors.py); owned by the loop."""

    last_run_wall_ms: int
    """When a worker last looked for a partition to clean (time-since-last-run-ms)."""
    max_dirty_ratio: float = 0.0
    """The dirtiest compacted partition's dirty ratio at the last look."""
    max_compaction_delay_ms: int = 0
    """How long past `max.compaction.lag.ms` the most overdue partition was at the
    last look (0: none overdue)."""
    last_cleans: dict[int, LastClean] = field(default_factory=dict)
    """Per worker index: its last clean."""
    cleaned_bytes: dict[PartitionKey, int] = field(default_factory=dict)
    """Per partition: bytes its cleans read, since start."""
    cleans: dict[PartitionKey, int] = field(default_factory=dict)
    """Per partition: cleans finished, since start."""
    uncleanable: set[PartitionKey] = field(default_factory=set)
    dead_workers: int = 0


@dataclass(slots=True)
class _Candidate:
    key: PartitionKey
    log: CleanableLog
    overdue_ms: int
    dirty_ratio: float


@dataclass(slots=True)
class _Worker:
    index: int
    executor: ThreadPoolExecutor
    task: asyncio.Task[None] | None = None


class LogCleaner:
    """The cleaner service. See the module docstring. Every method runs on the loop."""

    def __init__(
        self, *, logs: LogSource, config: Callable[[], BrokerConfig], clock: Clock
    ) -> None:
        self._logs = logs
        self._config = config
        self._clock = clock
        self.state = CleanerState(last_run_wall_ms=clock.wall_ms())
        self.throttler = Throttler(
            lambda: self._config().get(broker_keys.LOG_CLEANER_IO_MAX_BYTES_PER_SECOND)
        )
        self._in_progress: set[PartitionKey] = set()
        self._stalled: dict[PartitionKey, int] = {}
        """Partitions whose last clean made no progress, and the monotonic time before
        which they are not taken again (`log.cleaner.backoff.ms` after that clean)."""
        self._workers: dict[int, _Worker] = {}
        self._wake: asyncio.Event | None = None
        self._stopping = False

    # ---- lifecycle

    def wall_ms(self) -> int:
        """The cleaner's clock's wall time (time-since-last-run-ms)."""
        return self._clock.wall_ms()

    @property
    def enabled(self) -> bool:
        return self._config().get(broker_keys.LOG_CLEANER_ENABLE)

    @property
    def threads(self) -> int:
        """Workers running (or finishing a clean after the pool shrank)."""
        return len(self._workers)

    def start(self) -> None:
        """Start `log.cleaner.threads` workers, unless `log.cleaner.enable` is false."""
        self._wake = asyncio.Event()
        if not self.enabled:
            log.info("log cleaner disabled (log.cleaner.enable=false): nothing is compacted")
            return
        self._resize()

    def reconfigure(self, _config: BrokerConfig) -> None:
        """A dynamic broker config changed: resize the pool, wake the workers (a new
        backoff, ratio or topic policy applies from their next pass)."""
        if self._wake is None or self._stopping or not self.enabled:
            return
        self._resize()
        self._wake.set()

    def topics_changed(self) -> None:
        """Forget what the cleaner kept of partitions that no longer exist, and wake
        the workers (a new compacted topic, a policy change)."""
        present = {
            (info.name, index) for info in self._logs.topics() for index in range(info.partitions)
        }
        state = self.state
        for kept in (state.cleaned_bytes, state.cleans):
            for key in [key for key in kept if key not in present]:
                del kept[key]
        state.uncleanable &= present
        for key in [key for key in self._stalled if key not in present]:
            del self._stalled[key]
        if self._wake is not None:
            self._wake.set()

    async def close(self, *, timeout_s: float) -> None:
        """Stop every worker: a running plan stops at its next throttle call and is
        abandoned. Waits at most `timeout_s` for the worker threads."""
        self._stopping = True
        self.throttler.stop()
        if self._wake is not None:
            self._wake.set()
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=timeout_s)
            if pending:
                log.warning(
                    "log cleaner: %d workers still running after %.1f s at shutdown",
                    len(pending),
                    timeout_s,
                )
        for worker in list(self._workers.values()):
            worker.executor.shutdown(wait=False)

    def _resize(self) -> None:
        wanted = self._config().get(broker_keys.LOG_CLEANER_THREADS)
        for index in range(wanted):
            if index not in self._workers:
                worker = _Worker(
                    index,
                    ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shoal-cleaner-{index}"),
                )
                self._workers[index] = worker
                worker.task = asyncio.get_running_loop().create_task(
                    self._run_worker(worker), name=f"shoal-log-cleaner-{index}"
                )
        # workers at or beyond `wanted` see it at their next pass and stop

    # ---- one worker

    async def _run_worker(self, worker: _Worker) -> None:
        try:
            while not self._stopping and worker.index < self._wanted_threads():
                picked = self.grab()
                if picked is None:
                    await self._nap(self._config().get(broker_keys.LOG_CLEANER_BACKOFF_MS))
                    continue
                key, partition_log, plan = picked
                try:
                    await self._clean(worker, key, partition_log, plan)
                finally:
                    self._in_progress.discard(key)
        except Exception:
            self.state.dead_workers += 1
            log.exception("log cleaner worker %d died", worker.index)
        finally:
            if self._workers.get(worker.index) is worker:
                del self._workers[worker.index]
            worker.executor.shutdown(wait=False)

    def _wanted_threads(self) -> int:
        return self._config().get(broker_keys.LOG_CLEANER_THREADS)

    async def _nap(self, ms: int) -> None:
        """Sleep `ms`, or less if `reconfigure`, `topics_changed` or `close` wakes us."""
        wake = self._wake
        assert wake is not None
        wake.clear()
        waiter = asyncio.ensure_future(wake.wait())
        _done, pending = await asyncio.wait({waiter}, timeout=ms / 1000)
        for task in pending:
            task.cancel()

    async def _clean(
        self, worker: _Worker, key: PartitionKey, partition_log: CleanableLog, plan: PlanView
    ) -> None:
        config = self._config()
        entries = key_map_entries(
            config, threads=max(1, config.get(broker_keys.LOG_CLEANER_THREADS))
        )
        started_ns = measure_ns()
        log.info("cleaning %s-%d (worker %d): %r", key[0], key[1], worker.index, plan)

        def run() -> Any:
            return plan.run(key_map_entries=entries, throttle=self.throttler)

        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(worker.executor, run)
        except CleanerStopped:
            log.info("cleaning of %s-%d abandoned at shutdown", *key)
            _discard(plan)
            return
        except (OSError, LogError) as exc:
            _discard(plan)
            self._uncleanable(key, f"its clean failed: {exc}")
            return
        except Exception:
            log.exception("cleaning of %s-%d failed unexpectedly", *key)
            _discard(plan)
            self._uncleanable(key, "its clean failed unexpectedly")
            return
        if self._logs.partition(*key) is not partition_log:
            log.info("cleaning of %s-%d discarded: the partition was deleted meanwhile", *key)
            _discard(plan)
            return
        error = getattr(result, "error", None)  # CleanResult.error: the run's failure
        try:  # swaps the result in, or discards it (stopped, failed, stale)
            stats = partition_log.finish_clean(result)
        except LogError as exc:
            self._uncleanable(key, f"finishing its clean failed: {exc}")
            return
        if isinstance(error, CleanerStopped):
            log.info("cleaning of %s-%d abandoned at shutdown", *key)
            return
        if error is not None:
            self._uncleanable(key, f"its clean failed: {error!r}")
            return
        self._record(
            worker, key, stats, elapsed_s=(measure_ns() - started_ns) / 1e9, key_map_entries=entries
        )

    def _record(
        self,
        worker: _Worker,
        key: PartitionKey,
        stats: CleanStatsView,
        *,
        elapsed_s: float,
        key_map_entries: int,
    ) -> None:
        if stats.discarded is not None:  # the log set a stale result aside
            log.info("cleaning of %s-%d not swapped in: %s", key[0], key[1], stats.discarded)
            return
        bytes_read = stats.bytes_read
        if stats.end_offset <= stats.first_dirty_offset:
            backoff_ms = self._config().get(broker_keys.LOG_CLEANER_BACKOFF_MS)
            self._stalled[key] = self._clock.monotonic_ms() + backoff_ms
            log.warning(
                "cleaning of %s-%d made no progress (first dirty offset %d; %d keys fit "
                "the key map, log.cleaner.dedupe.buffer.size): retried in %d ms",
                key[0],
                key[1],
                stats.first_dirty_offset,
                key_map_entries,
                backoff_ms,
            )
        self.state.last_cleans[worker.index] = LastClean(
            bytes_read=bytes_read,
            bytes_written=stats.bytes_written,
            elapsed_s=elapsed_s,
            buffer_utilization=stats.keys_mapped / key_map_entries,
        )
        self.state.cleaned_bytes[key] = self.state.cleaned_bytes.get(key, 0) + bytes_read
        self.state.cleans[key] = self.state.cleans.get(key, 0) + 1
        log.info(
            "cleaned %s-%d in %.3f s: %d bytes read, %d written",
            key[0],
            key[1],
            elapsed_s,
            bytes_read,
            stats.bytes_written,
        )

    def _uncleanable(self, key: PartitionKey, reason: str) -> None:
        log.error(
            "partition %s-%d marked uncleanable (no more cleaning until its topic is "
            "deleted or the broker restarts): %s",
            key[0],
            key[1],
            reason,
        )
        self.state.uncleanable.add(key)

    # ---- choosing the partition (on the loop)

    def grab(self) -> tuple[PartitionKey, CleanableLog, PlanView] | None:
        """The filthiest cleanable partition and its plan, marked in progress; None
        when nothing is cleanable now. Updates the state the metrics read."""
        now_wall_ms = self._clock.wall_ms()
        self.state.last_run_wall_ms = now_wall_ms
        candidates = list(self._candidates())
        self.state.max_dirty_ratio = max((c.dirty_ratio for c in candidates), default=0.0)
        self.state.max_compaction_delay_ms = max((c.overdue_ms for c in candidates), default=0)
        candidates.sort(key=lambda c: (c.overdue_ms > 0, c.dirty_ratio), reverse=True)
        for candidate in candidates:
            try:
                plan = candidate.log.clean_plan(now_wall_ms)
            except LogError as exc:
                self._uncleanable(candidate.key, f"planning its clean failed: {exc}")
                continue
            if plan is not None:
                self._in_progress.add(candidate.key)
                return candidate.key, candidate.log, plan
        return None

    def compacted_partitions(self) -> Iterator[tuple[PartitionKey, CleanableLog]]:
        """Every partition whose topic's cleanup.policy holds compact, with its log."""
        config = self._config()
        for info in self._logs.topics():
            policy = effective_topic_config(config, info.configs).get("cleanup.policy", [])
            if "compact" not in policy:
                continue
            for index in range(info.partitions):
                partition_log = self._logs.partition(info.name, index)
                if partition_log is not None:
                    yield (info.name, index), partition_log

    def _candidates(self) -> Iterator[_Candidate]:
        now_ms = self._clock.monotonic_ms()
        for key, partition_log in self.compacted_partitions():
            if key in self._in_progress or key in self.state.uncleanable:
                continue
            if self._stalled.get(key, now_ms) > now_ms:
                continue
            try:
                progress = partition_log.cleaner_progress()
            except LogError as exc:
                self._uncleanable(key, f"reading its cleaner progress failed: {exc}")
                continue
            yield _Candidate(
                key,
                partition_log,
                overdue_ms=partition_log.compaction_delay_ms(self._clock.wall_ms()),
                dirty_ratio=progress.dirty_ratio,
            )


def _discard(plan: PlanView) -> None:
    """Let go of a plan whose result will not be finished (its descriptors)."""
    plan.discard()
