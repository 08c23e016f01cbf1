"""The only source of time in Shoal.

Cores never read the wall clock: they are handed a `Clock`. The server uses
`SystemClock`; tests use `ManualClock` and move time by hand, so every timing
behaviour is deterministic and runs in microseconds.

Two readings exist because Kafka needs both: `monotonic_ms` for timers and
durations (never goes backwards), `wall_ms` for record timestamps and
time-based retention (epoch milliseconds).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic_ms(self) -> int:
        """Milliseconds on a clock that never goes backwards."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """The real clock, used by the running broker."""

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; for tests and simulation."""

    def __init__(self, *, start_ms: int = 0, wall_offset_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = start_ms
        self._wall_offset_ms = wall_offset_ms

    def monotonic_ms(self) -> int:
        return self._now_ms

    def wall_ms(self) -> int:
        return self._wall_offset_ms + self._now_ms

    def advance(self, ms: int) -> None:
        assert ms >= 0, "time never goes backwards"
        self._now_ms += ms


def measure_ns() -> int:
    """A high-resolution monotonic counter in nanoseconds, for measurements only (the
    server's latency trace): never for behaviour, which reads an injected `Clock`."""
    return time.perf_counter_ns()
