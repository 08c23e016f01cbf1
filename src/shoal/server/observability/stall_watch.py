"""What the event loop was doing when it stalled: a diagnostic, on only when the
environment variable `SHOAL_STALL_TRACE` is set (to a threshold in milliseconds,
e.g. `SHOAL_STALL_TRACE=5`).

The loop-lag probe of `latency_trace` says how late the loop was, not why. This
watch answers the why for each stall: a loop task touches a tick every
`TICK_INTERVAL_S`; a daemon thread wakes every `WATCH_INTERVAL_S`, and while the
tick is older than the threshold it samples the main thread's stack
(`sys._current_frames`) and, at the stall's start and end, the main thread's
scheduler counters (`/proc/self/task/<tid>/schedstat`: time on a CPU, time
runnable but waiting for one); each sample also names where the thread is in the
kernel, when `/proc/self/task/<tid>/stack` is readable (root). A stall whose time
was spent on a CPU is work the loop did (the stacks say which); one spent waiting
is the machine (other processes had the cores); one spent neither is the thread
sleeping in the kernel (blocking I/O, page faults). The thread needs the GIL to
sample, so a stall inside one long C call that holds it (a collection) is seen at
its end; the `gc pause` stages of the latency trace cover collections. System
calls release the GIL, so a sample can land inside one (or just after it, the
main thread then waiting for the GIL: `futex` in the kernel stack).

At stop, every stall (at most `STALLS_KEPT`, the longest kept) is logged with its
start (ms since the watch began), length, CPU and wait split and its most frequent
stack tops. Measurement only: nothing here changes what the broker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from types import FrameType

from shoal.clock import measure_ns

log = logging.getLogger(__name__)

ENV = "SHOAL_STALL_TRACE"
TICK_INTERVAL_S = 0.001
WATCH_INTERVAL_S = 0.001
STALLS_KEPT = 200
"""Stalls remembered per run; past it a shorter one is dropped for a longer one."""
FRAMES_KEPT = 6
"""Innermost frames of a sample that identify it."""
KERNEL_FRAMES_KEPT = 5


@dataclass
class Stall:
    started_ms: float
    """Since the watch started."""
    length_ms: float = 0.0
    on_cpu_ms: float = 0.0
    waiting_ms: float = 0.0
    stacks: Counter[str] = field(default_factory=Counter)


def _schedstat(tid: int) -> tuple[int, int]:
    """(ns on a CPU, ns runnable and waiting) of thread `tid`; zeros if unreadable."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            fields = f.read().split()
        return int(fields[0]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _stack_key(frame: FrameType) -> str:
    """The innermost `FRAMES_KEPT` frames under `frame`, innermost first."""
    frames = traceback.extract_stack(frame)[-FRAMES_KEPT:]
    return " < ".join(f"{f.name}@{os.path.basename(f.filename)}:{f.lineno}" for f in frames[::-1])


def _kernel_stack(tid: int) -> str:
    """Where thread `tid` sleeps in the kernel (`/proc/self/task/<tid>/stack`, its
    innermost `KERNEL_FRAMES_KEPT` functions; readable by root only), or ''."""
    try:
        with open(f"/proc/self/task/{tid}/stack") as f:
            lines = f.read().split("\n")
    except OSError:
        return ""
    names = [line.split("] ", 1)[-1].split("+", 1)[0] for line in lines if line.strip()]
    return f" [kernel: {' < '.join(names[:KERNEL_FRAMES_KEPT])}]" if names else ""


class StallWatch:
    """The tick task and the watching thread (module docstring)."""

    def __init__(self, threshold_ms: float | None) -> None:
        self.threshold_ms = threshold_ms
        self.stalls: list[Stall] = []
        self._tick_ns = 0
        self._started_ns = 0
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    def from_environment(cls) -> StallWatch:
        raw = os.environ.get(ENV, "").strip()
        if not raw:
            return cls(None)
        try:
            return cls(max(float(raw), 1.0))
        except ValueError:
            log.warning("%s=%r is not a number of milliseconds; watching for 5 ms", ENV, raw)
            return cls(5.0)

    def start(self) -> None:
        """Start the tick task and the thread (call inside the loop, on the main thread)."""
        if self.threshold_ms is None or self._task is not None:
            return
        self._started_ns = self._tick_ns = measure_ns()
        self._task = asyncio.create_task(self._tick(), name="stall-watch")
        self._thread = threading.Thread(
            target=self._watch,
            args=(threading.get_ident(), threading.get_native_id()),
            name="stall-watch",
            daemon=True,
        )
        self._thread.start()

    async def stop(self) -> None:
        """Stop both and log the stalls seen."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        for line in self.report():
            log.info("stall watch: %s", line)

    def report(self) -> list[str]:
        lines = []
        total = sum(s.length_ms for s in self.stalls)
        lines.append(
            f"{len(self.stalls)} stalls over {self.threshold_ms} ms, {total:.1f} ms in all; "
            f"on a CPU {sum(s.on_cpu_ms for s in self.stalls):.1f} ms, "
            f"waiting for one {sum(s.waiting_ms for s in self.stalls):.1f} ms"
        )
        for s in sorted(self.stalls, key=lambda s: s.started_ms):
            tops = "; ".join(f"{n}x {stack}" for stack, n in s.stacks.most_common(3))
            lines.append(
                f"at {s.started_ms:.0f} ms: {s.length_ms:.1f} ms (cpu {s.on_cpu_ms:.1f}, "
                f"wait {s.waiting_ms:.1f}): {tops or 'no sample'}"
            )
        return lines

    async def _tick(self) -> None:
        while True:
            self._tick_ns = measure_ns()
            await asyncio.sleep(TICK_INTERVAL_S)

    def _watch(self, ident: int, tid: int) -> None:
        threshold_ns = int((self.threshold_ms or 0) * 1e6)
        current: Stall | None = None
        stall_tick = 0
        cpu0 = wait0 = 0
        while not self._stop.is_set():
            time.sleep(WATCH_INTERVAL_S)
            now = measure_ns()
            tick = self._tick_ns
            if current is not None and tick != stall_tick:
                cpu1, wait1 = _schedstat(tid)
                current.length_ms = (tick - stall_tick) / 1e6
                current.on_cpu_ms = (cpu1 - cpu0) / 1e6
                current.waiting_ms = (wait1 - wait0) / 1e6
                self._keep(current)
                current = None
            if now - tick < threshold_ns:
                continue
            if current is None:
                stall_tick = tick
                cpu0, wait0 = _schedstat(tid)
                current = Stall(started_ms=(tick - self._started_ns) / 1e6)
            frame = sys._current_frames().get(ident)
            if frame is not None:
                current.stacks[_stack_key(frame) + _kernel_stack(tid)] += 1

    def _keep(self, stall: Stall) -> None:
        if len(self.stalls) < STALLS_KEPT:
            self.stalls.append(stall)
            return
        shortest = min(range(len(self.stalls)), key=lambda i: self.stalls[i].length_ms)
        if self.stalls[shortest].length_ms < stall.length_ms:
            self.stalls[shortest] = stall


WATCH = StallWatch.from_environment()
"""The broker's watch: read once from the environment at import."""
