"""Running seeds: one seed in a fresh directory, or many with figures.

Owns: the directory of a run (a temporary one, removed afterwards), the result of
one seed (`SeedResult`: steps, faults injected, checks, crashes, the virtual time
simulated, the schedule, the violation if any) and the totals over many (`Summary`,
written as JSON by `python -m shoal.sim`).
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from shoal.sim.faults import FaultRates
from shoal.sim.invariants import InvariantViolated
from shoal.sim.shell_world import TICKS_DEFAULT, ShellWorld
from shoal.sim.world import World

STEPS_DEFAULT = 60
SHARE = "share"
"""The share scenario: a producer, share members, the share coordinator (world.py)."""
SHELL = "shell"
"""The real broker (handlers, purgatory, timers, services, coordinators) on the
simulator's loop, network and disk, with consumer-group members and a transactional
producer over the wire (shell_world.py)."""
SCENARIOS = (SHARE, SHELL)


@dataclass(slots=True)
class SeedResult:
    seed: int
    steps: int
    crashes: int
    faults: Counter[str]
    checks: Counter[str]
    schedule: list[str]
    violation: str | None = None
    virtual_ms: int = 0


@dataclass(slots=True)
class Summary:
    seeds: int = 0
    failed: list[int] = field(default_factory=list)
    crashes: int = 0
    virtual_ms: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)

    def add(self, result: SeedResult) -> None:
        self.seeds += 1
        self.crashes += result.crashes
        self.virtual_ms += result.virtual_ms
        self.faults.update(result.faults)
        self.checks.update(result.checks)
        if result.violation is not None:
            self.failed.append(result.seed)


def run_seed(
    seed: int,
    *,
    steps: int | None = None,
    rates: FaultRates | None = None,
    verbose: bool = False,
    scenario: str = SHARE,
) -> SeedResult:
    """Simulate `seed` of `scenario` (SHARE or SHELL) for `steps`
    operations (world ticks for SHELL) then drain; never raises for a violated
    invariant (it is in the result), other exceptions propagate."""
    if steps is None:
        steps = default_steps(scenario)
    if scenario == SHELL:
        return _run_shell_seed(seed, ticks=steps, rates=rates, verbose=verbose)
    with tempfile.TemporaryDirectory(prefix=f"shoal-sim-{seed}-") as name:
        quiet = logging.getLogger("shoal")
        level = quiet.level
        if not verbose:
            quiet.setLevel(logging.ERROR)
        try:
            world = World(seed=seed, directory=Path(name), rates=rates, verbose=verbose)
            violation = None
            try:
                world.run(steps)
            except InvariantViolated as exc:
                violation = str(exc)
                world.note(f"VIOLATED {violation}")
            finally:
                world.broker.crash()  # let go of the files (abandon both logs)
        finally:
            quiet.setLevel(level)
        return SeedResult(
            seed=seed,
            steps=world.step,
            crashes=world.crashes,
            faults=world.faults.injected,
            checks=world.checker.counts,
            schedule=world.schedule,
            violation=violation,
        )


def _run_shell_seed(
    seed: int, *, ticks: int, rates: FaultRates | None, verbose: bool
) -> SeedResult:
    with tempfile.TemporaryDirectory(prefix=f"shoal-sim-shell-{seed}-") as name:
        quiet = logging.getLogger("shoal")
        level, propagate = quiet.level, quiet.propagate
        if not verbose:  # errors are still heard by the world (ShellWorld.broker_errors)
            quiet.setLevel(logging.ERROR)
            quiet.propagate = False
        try:
            world = ShellWorld(seed=seed, directory=Path(name), rates=rates, verbose=verbose)
            violation = None
            try:
                world.run(ticks)
            except InvariantViolated as exc:
                violation = str(exc)
                world.note(f"VIOLATED {violation}")
        finally:
            quiet.setLevel(level)
            quiet.propagate = propagate
        return SeedResult(
            seed=seed,
            steps=world.tick,
            crashes=world.crashes,
            faults=world.faults.injected,
            checks=world.checker.counts,
            schedule=world.schedule,
            violation=violation,
            virtual_ms=world.clock.monotonic_ms(),
        )


def default_steps(scenario: str) -> int:
    """Steps of a seed by default: operations, or world ticks for SHELL."""
    return TICKS_DEFAULT if scenario == SHELL else STEPS_DEFAULT
