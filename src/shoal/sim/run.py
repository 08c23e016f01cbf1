"""Running seeds: one seed in a fresh directory, or many with figures.

Owns: the directory of a run (a temporary one, removed afterwards), the result of
one seed (`SeedResult`: steps, faults injected, checks, crashes, the virtual time
simulated, the schedule, the violation if any) and the totals over many (`Summary`,
written as JSON by `python -m shoal.sim`).
"""

from __future__ import annotations

import functools
import logging
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from shoal.sim.faults import FaultRates
from shoal.sim.invariants import InvariantViolated
from shoal.sim.shell_share_ext import ExtWorld
from shoal.sim.shell_world import TICKS_DEFAULT, ShellWorld
from shoal.sim.world import World

STEPS_DEFAULT = 60
SHARE = "share"
"""The share scenario: a producer, share members, the share coordinator (world.py)."""
SHELL = "shell"
"""The real broker (handlers, purgatory, timers, services, coordinators) on the
simulator's loop, network and disk, with consumer-group members and a transactional
producer over the wire (shell_world.py)."""
SHELL_KEYS = "shell-keys"
"""The shell world with a key-ordered share group (shoal.share.delivery.order=key) and
the key-order checks (shell_share_ext.py)."""
SHELL_DUE = "shell-due"
"""The shell world with scheduled delivery (shoal.share.delivery.delay.max.ms, a cap
drawn from the seed; key order on odd seeds) and the due-time checks."""
SCENARIOS = (SHARE, SHELL, SHELL_KEYS, SHELL_DUE)
SHELL_SCENARIOS = (SHELL, SHELL_KEYS, SHELL_DUE)
DELAY_CAPS_MS = (5_000, 15_000, 30_000)
"""The scheduled scenario's `shoal.share.delivery.delay.max.ms`, by seed."""


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
    order: str | None = None,
) -> SeedResult:
    """Simulate `seed` of `scenario` (one of SCENARIOS) for `steps` operations (world
    ticks for the shell scenarios) then drain; never raises for a violated invariant
    (it is in the result), other exceptions propagate. `order` sets the share group's
    `shoal.share.delivery.order` of SHELL_KEYS and SHELL_DUE (None: the scenario's
    own); the key-order checks fail the run only under `key`, else they count."""
    if steps is None:
        steps = default_steps(scenario)
    if scenario in SHELL_SCENARIOS:
        make = _shell_world(seed, scenario, order)
        return _run_shell_seed(seed, ticks=steps, rates=rates, verbose=verbose, make=make)
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


def _shell_world(seed: int, scenario: str, order: str | None) -> Callable[..., ShellWorld]:
    """The world class of a shell scenario, with its share settings."""
    if scenario == SHELL_KEYS:
        return functools.partial(ExtWorld, order=order or "key")
    if scenario == SHELL_DUE:
        chosen = order or ("key" if seed % 2 else "none")
        return functools.partial(
            ExtWorld, order=chosen, delay_max_ms=DELAY_CAPS_MS[seed % len(DELAY_CAPS_MS)]
        )
    return ShellWorld


def _run_shell_seed(
    seed: int,
    *,
    ticks: int,
    rates: FaultRates | None,
    verbose: bool,
    make: Callable[..., ShellWorld] = ShellWorld,
) -> SeedResult:
    with tempfile.TemporaryDirectory(prefix=f"shoal-sim-shell-{seed}-") as name:
        quiet = logging.getLogger("shoal")
        level, propagate = quiet.level, quiet.propagate
        if not verbose:  # errors are still heard by the world (ShellWorld.broker_errors)
            quiet.setLevel(logging.ERROR)
            quiet.propagate = False
        try:
            world = make(seed=seed, directory=Path(name), rates=rates, verbose=verbose)
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
    """Steps of a seed by default: operations, or world ticks for the shell scenarios."""
    return TICKS_DEFAULT if scenario in SHELL_SCENARIOS else STEPS_DEFAULT
