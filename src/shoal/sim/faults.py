"""The seeded fault plan of one simulation run.

Owns: the probabilities of each fault, the draws that decide whether a fault fires
(all from the run's one `random.Random`), and the count of faults injected per kind.
`SimCrash` is the simulated process dying: raised at a crash point, it unwinds the
core operation in progress; the world then drops every in-memory structure.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, fields


class SimCrash(Exception):
    """The simulated broker process died at this point."""

    def __init__(self, point: str) -> None:
        super().__init__(point)
        self.point = point


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Probability of each fault at each chance it has to fire."""

    crash_before_state_write: float = 0.01
    crash_after_state_write: float = 0.03
    """State records written, the response not sent."""
    crash_after_append: float = 0.05
    """A produced batch appended, the produce response not sent."""
    torn_write: float = 0.5
    """When a crash follows a write, the share of crashes that tear its batch."""
    crash_idle: float = 0.5
    """At a quiet point between operations (drawn on the world's rare crash step)."""
    clock_jump: float = 0.1
    """A clock advance of one minute to an hour instead of a few seconds."""
    state_append_fails: float = 0.03
    """A `__share_group_state` append fails (storage error): nothing is written."""
    lost_response: float = 0.05
    late_response: float = 0.1
    """Slow disk: the response comes back after later operations ran."""
    power_loss: float = 0.3
    """The share of crashes that are power losses: unflushed writes lost (sim/disk.py)."""
    # The shell scenario (sim/shell_world.py: the real broker over in-memory pipes):
    slow_delivery: float = 0.01
    """A connection's bytes take tens to hundreds of ms to arrive (sim/pipes.py)."""
    slow_disk: float = 0.02
    """A piece of the broker's disk work takes tens to hundreds of ms (sim/shell_disk.py)."""
    shell_crash: float = 0.08
    """At each tick of the world, the broker process dies (no shutdown) and restarts."""
    connection_drop: float = 0.1
    """At each tick of the world, one client connection is reset."""
    clean_restart: float = 0.04
    """At each tick of the world, the broker shuts down cleanly (`Broker.shutdown`, with
    requests in flight) and starts again."""
    client_stall: float = 0.03
    """A client stops for longer than its session or transaction timeout (the
    coordinators' timers expire it) before it goes on."""


NO_FAULTS = FaultRates(**{f.name: 0.0 for f in fields(FaultRates)})


@dataclass(slots=True)
class Faults:
    """Draws faults from `rng` at the given rates and counts the ones that fired."""

    rng: random.Random
    rates: FaultRates = field(default_factory=FaultRates)
    injected: Counter[str] = field(default_factory=Counter)
    enabled: bool = True

    def fires(self, kind: str) -> bool:
        rate: float = getattr(self.rates, kind)
        if not self.enabled or rate <= 0.0:
            return False
        if self.rng.random() >= rate:
            return False
        self.injected[kind] += 1
        return True

    def crash_point(self, kind: str) -> None:
        """Raise `SimCrash` here if the `kind` crash fires."""
        if self.fires(kind):
            raise SimCrash(kind)
