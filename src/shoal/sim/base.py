"""What every simulated world shares: the seeded run loop, the schedule notes, the
weighted choice of a step, and the answers in flight.

Owns: a run's generator, fault drawer, manual clock, simulated disk and schedule
(`note`: one line per event, stamped with the step and the clock); the loop of `run`
(each step delivers the late answers due, then takes one operation; then faults stop,
the world drains and the final checks run); `choose` (one operation drawn by weight);
`respond` (an answer on time, late by a few steps as from a slow disk, or lost, when
the client retries) and the idle crash. A scenario subclasses `SimWorld` with its
clients, its broker and its checker (`world.py`: share groups). Nothing here draws
from the generator but the calls a scenario makes, so a seed's schedule is the
scenario's alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from shoal.clock import ManualClock
from shoal.sim.disk import Disk
from shoal.sim.faults import FaultRates, Faults, SimCrash

LATE_STEPS_MAX = 4
"""A late answer arrives 1 to this many steps after it was sent."""

Operation = Callable[[], None]


@dataclass(slots=True)
class Late:
    """An answer delayed by a slow disk, delivered at `due_step`."""

    due_step: int
    deliver: Callable[[], None]
    what: str


class FinalCheck(Protocol):
    def check_final(self) -> None: ...


class SimWorld:
    """A run of `steps` operations from `seed` in `directory` (module docstring).
    Subclasses set `DRAIN_NOTE` and `checker`, and define `_one_step` and `_drain`."""

    DRAIN_NOTE: ClassVar[str]
    checker: FinalCheck

    def __init__(
        self, *, seed: int, directory: Path, rates: FaultRates | None, verbose: bool
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = Faults(self.rng, rates or FaultRates())
        self.clock = ManualClock()
        self.directory = directory
        self.verbose = verbose
        self.schedule: list[str] = []
        self.disk = Disk(directory)
        self.late: list[Late] = []
        self.step = 0
        self.crashes = 0

    def note(self, text: str) -> None:
        line = f"[{self.step:4d} t={self.clock.monotonic_ms():>8d}] {text}"
        self.schedule.append(line)
        if self.verbose:
            print(line)

    # ---- the run

    def run(self, steps: int) -> None:
        with self.disk.installed():
            for _ in range(steps):
                self.step += 1
                self._deliver_late()
                self._one_step()
            self.faults.enabled = False
            self.note(self.DRAIN_NOTE)
            self._drain()
            self.checker.check_final()

    def _one_step(self) -> None:
        raise NotImplementedError

    def _drain(self) -> None:
        raise NotImplementedError

    def choose(self, weighted: Sequence[tuple[int, Operation]]) -> Operation:
        """One operation, drawn by weight."""
        operations = [operation for _, operation in weighted]
        return self.rng.choices(operations, weights=[weight for weight, _ in weighted])[0]

    # ---- answers

    def _respond(self, what: str, deliver: Callable[[], None], *, retry: Operation) -> None:
        """Send an answer: on time, late (slow disk), or lost (the client retries)."""
        if self.faults.fires("lost_response"):
            self.note(f"  lost response: {what}")
            retry()
        elif self.faults.fires("late_response"):
            due = self.step + self.rng.randint(1, LATE_STEPS_MAX)
            self.note(f"  late response: {what} (due at step {due})")
            self.late.append(Late(due, deliver, what))
        else:
            deliver()

    def _deliver_late(self) -> None:
        due = [late for late in self.late if late.due_step <= self.step]
        self.late = [late for late in self.late if late.due_step > self.step]
        for late in due:
            self.note(f"late response arrives: {late.what}")
            late.deliver()

    def _deliver_all_late(self) -> None:
        """At the drain: every answer still in flight arrives."""
        late, self.late = self.late, []
        for item in late:
            item.deliver()

    # ---- crashes

    def crash_now(self) -> None:
        if self.faults.fires("crash_idle"):
            raise SimCrash("crash_idle")
