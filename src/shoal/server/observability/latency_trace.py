"""Where a broker's milliseconds go: per-stage timings and an event-loop lag probe,
on only when the environment variable `SHOAL_LATENCY_TRACE` is set (to the report
interval in seconds, e.g. `SHOAL_LATENCY_TRACE=5`; `1` means every second).

Stages timed (milliseconds, on `shoal.clock.measure_ns`, a counter for measurements only: these
are measurements, not behaviour, and no core sees them):

- `handle <Api>`: a handler's run, from the decoded request to its response (a
  ShareFetch's includes its long poll, whose part is `share-fetch parked`);
- `share-fetch parked`: a ShareFetch waiting in purgatory for records;
- `purgatory wake`: from an append's notify to the woken waiter running again (the
  loop's scheduling delay);
- `state write barrier`: a response waiting for the share state writes it made
  (server/services/state_linger.py; only with an append linger);
- `timer <name>`: one firing of a timer source (server/services/timers.py);
- `gc pause gen<N>`: a garbage collection of generation N (`gc.callbacks`);
- `loop lag`: how late the probe's `sleep(PROBE_INTERVAL_S)` wakes: anything
  blocking the loop (disk I/O, big synchronous work, a long collection, the process
  waiting for a CPU) shows here;
- `serve <api>`: one request on its connection, from its frame read whole to its
  response handed to the socket (`writer.write` returned): the broker's whole part
  of a round trip except the time the frame sat unread in the socket (a ShareFetch's
  includes its park);
- `serve share_fetch from wake`: a woken ShareFetch, from the append's notify to its
  response handed to the socket (the broker's part of a record's path after the
  Produce);
- `client <api> -> <api>`: on one connection, from a response handed to the socket
  to the next request read whole: the client's part of a round trip (its threads,
  its application code between calls, the loopback and scheduling both ways). For a
  ShareConsumer, `client share_fetch -> share_acknowledge` is its poll returning,
  the application's acknowledgements and `commit_sync` sending, and
  `client share_acknowledge -> share_fetch` its next poll's fetch.

The `serve` and `client` stages are per connection, kept in context variables (each
connection is a task with a context of its own).

Every interval one INFO line per stage gives count, p50, p99 and max, and the
samples start again. At most `SAMPLES_PER_STAGE_MAX` samples are kept per stage
and interval (later ones are counted, not kept), so memory stays bounded. With the
variable unset every call is a no-op (`TRACE.enabled` is False).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
from collections.abc import Iterator
from contextvars import ContextVar

from shoal.clock import measure_ns

log = logging.getLogger(__name__)

ENV = "SHOAL_LATENCY_TRACE"
PROBE_INTERVAL_S = 0.001
SAMPLES_PER_STAGE_MAX = 200_000
"""Samples kept per stage and report interval; the rest are only counted."""


class LatencyTrace:
    """Per-stage samples and the loop-lag probe (module docstring)."""

    def __init__(self, interval_s: float | None) -> None:
        self.interval_s = interval_s
        self._samples: dict[str, list[float]] = {}
        self._dropped: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._gc_started_ns = 0

    @classmethod
    def from_environment(cls) -> LatencyTrace:
        raw = os.environ.get(ENV, "").strip()
        if not raw:
            return cls(None)
        try:
            interval_s = float(raw)
        except ValueError:
            log.warning("%s=%r is not a number of seconds; tracing every 5 s", ENV, raw)
            interval_s = 5.0
        return cls(max(interval_s, 0.1))

    @property
    def enabled(self) -> bool:
        return self.interval_s is not None

    def record(self, stage: str, ms: float) -> None:
        if self.interval_s is None:
            return
        samples = self._samples.setdefault(stage, [])
        if len(samples) < SAMPLES_PER_STAGE_MAX:
            samples.append(ms)
        else:
            self._dropped[stage] = self._dropped.get(stage, 0) + 1

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the body as one sample of `name` (a no-op when disabled)."""
        if self.interval_s is None:
            yield
            return
        started = measure_ns()
        try:
            yield
        finally:
            self.record(name, (measure_ns() - started) / 1e6)

    def report(self) -> list[str]:
        """One line per stage, and the samples start again."""
        lines = []
        for stage, samples in sorted(self._samples.items()):
            if not samples:
                continue
            samples.sort()
            count = len(samples) + self._dropped.get(stage, 0)
            lines.append(
                f"{stage}: n={count} p50={_at(samples, 50):.3f} p99={_at(samples, 99):.3f} "
                f"max={samples[-1]:.3f} ms"
            )
        self._samples.clear()
        self._dropped.clear()
        return lines

    def start(self) -> None:
        """Start the loop-lag probe and the periodic report (call inside the loop)."""
        if self.interval_s is None or self._task is not None:
            return
        self._task = asyncio.create_task(self._probe(self.interval_s), name="latency-trace")
        gc.callbacks.append(self._gc)

    async def stop(self) -> None:
        """Stop the probe and log what was sampled since the last report."""
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for line in self.report():
                log.info("latency trace (at stop): %s", line)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started_ns = measure_ns()
        elif self._gc_started_ns:
            self.record(
                f"gc pause gen{info['generation']}", (measure_ns() - self._gc_started_ns) / 1e6
            )

    async def _probe(self, interval_s: float) -> None:
        next_report = measure_ns() / 1e9 + interval_s
        while True:
            before = measure_ns()
            await asyncio.sleep(PROBE_INTERVAL_S)
            late_ms = (measure_ns() - before) / 1e6 - PROBE_INTERVAL_S * 1000
            self.record("loop lag", max(0.0, late_ms))
            if measure_ns() / 1e9 >= next_report:
                next_report += interval_s
                for line in self.report():
                    log.info("latency trace: %s", line)


_last_response: ContextVar[tuple[str, int] | None] = ContextVar("last_response", default=None)
"""This connection's last response: its API and when it was handed to the socket."""
_woken_ns: ContextVar[int] = ContextVar("woken_ns", default=0)
"""When the request in hand was woken from the purgatory (its notify), 0 if never."""


def trace_request_read(api: str, read_ns: int) -> None:
    """A request of `api` was read whole at `read_ns` (call only when enabled)."""
    previous = _last_response.get()
    if previous is not None:
        TRACE.record(f"client {previous[0]} -> {api}", (read_ns - previous[1]) / 1e6)
    _woken_ns.set(0)


def trace_woken(notified_ns: int) -> None:
    """The request in hand was woken by a notify at `notified_ns`."""
    _woken_ns.set(notified_ns)


def trace_response_written(api: str, read_ns: int) -> None:
    """The response to the request of `api` read at `read_ns` is in the socket."""
    now_ns = measure_ns()
    TRACE.record(f"serve {api}", (now_ns - read_ns) / 1e6)
    woken_ns = _woken_ns.get()
    if woken_ns:
        TRACE.record(f"serve {api} from wake", (now_ns - woken_ns) / 1e6)
    _last_response.set((api, now_ns))


def _at(sorted_samples: list[float], q: float) -> float:
    index = min(len(sorted_samples) - 1, max(0, round(q / 100 * len(sorted_samples)) - 1))
    return sorted_samples[index]


TRACE = LatencyTrace.from_environment()
"""The broker's trace: read once from the environment at import."""
