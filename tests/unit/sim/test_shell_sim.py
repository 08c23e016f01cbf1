"""The shell scenario: the real broker on the simulator's loop, network and disk
(shoal.sim.shell_world), and the pieces under it (sim/loop.py, sim/pipes.py,
sim/shell_disk.py, sim/disk.py). The group and transaction checks' tests came from the
retired core-level coordinator scenario, whose copy of the shell's steps this one
replaced."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shoal.client.errors import ErrorCode
from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import validate_produced
from shoal.sim.broker import produced_batch
from shoal.sim.disk import Disk
from shoal.sim.faults import NO_FAULTS, FaultRates, Faults
from shoal.sim.invariants import InvariantViolated
from shoal.sim.loop import SimClock, SimLoop, SimStalled
from shoal.sim.pipes import Network
from shoal.sim.run import SHELL, run_seed
from shoal.sim.shell_disk import SimExecutor
from shoal.sim.shell_world import ShellWorld

SEEDS = (0, 1, 2, 3, 4, 5)
"""The default suite's seeds (a few seconds in all); `python -m shoal.sim --scenario
shell --seeds N` runs many."""
TICKS = 15


def test_fixed_seeds_hold_every_invariant() -> None:
    crashes = 0
    checks: dict[str, int] = {}
    for seed in SEEDS:
        result = run_seed(seed, steps=TICKS, scenario=SHELL)
        assert result.violation is None, (seed, result.violation, result.schedule[-20:])
        crashes += result.crashes
        for name, count in result.checks.items():
            checks[name] = checks.get(name, 0) + count
        assert result.virtual_ms > 10_000, result.virtual_ms  # virtual time passed
    assert crashes > 0
    for name in (
        "committed offsets",
        "read_committed scans",
        "committed transactions checked",
        "recoveries checked",
        "group checks",
        "long polls checked",
        "zombies fenced",
        "share deliveries checked",
        "share final checks",
        "idempotent records checked",
        "final checks",
    ):
        assert checks.get(name, 0) > 0, (name, checks)


def test_a_seed_replays_exactly() -> None:
    first = run_seed(2, steps=TICKS, scenario=SHELL)
    again = run_seed(2, steps=TICKS, scenario=SHELL)
    assert first.schedule == again.schedule
    assert first.checks == again.checks
    assert run_seed(3, steps=TICKS, scenario=SHELL).schedule != first.schedule


def test_the_checker_catches_a_lost_commit(tmp_path: Path) -> None:
    """A confirmed commit the broker does not hold is caught (the checker is not
    vacuous): the oracle is told of one the members never sent."""

    class Tampered(ShellWorld):
        async def _fault(self) -> None:
            if self.tick == 4:
                self.checker.commit_sent({0: 10**9})
                self.checker.commit_confirmed({0: 10**9})

    world = Tampered(seed=1, directory=tmp_path, rates=NO_FAULTS)
    with pytest.raises(InvariantViolated, match="a confirmed offset commit stands"):
        world.run(8)


def test_the_checker_catches_an_aborted_transaction_made_visible(tmp_path: Path) -> None:
    class Tampered(ShellWorld):
        async def _fault(self) -> None:
            committed = [s for s, c in self.checker.outcome.items() if c]
            if committed and self.tick == 6:
                self.checker.outcome[committed[0]] = False

    world = Tampered(seed=1, directory=tmp_path, rates=NO_FAULTS)
    with pytest.raises(InvariantViolated, match="an aborted transaction"):
        world.run(10)


def test_a_broker_task_failing_unobserved_fails_the_run(tmp_path: Path) -> None:
    class Tampered(ShellWorld):
        async def _fault(self) -> None:
            if self.tick == 2:

                async def fails() -> None:
                    raise RuntimeError("a bug in a broker task")

                self.loop.run_in_context(self.process, lambda: self.loop.create_task(fails()))

    world = Tampered(seed=1, directory=tmp_path, rates=NO_FAULTS)
    with pytest.raises(InvariantViolated, match="no broker task fails unobserved"):
        world.run(4)


# ---- the loop


def test_virtual_time_passes_without_waiting() -> None:
    clock = SimClock()
    loop = SimLoop(clock, random.Random(0))
    started = time.monotonic()
    loop.run_until_complete(asyncio.sleep(3_600))
    assert time.monotonic() - started < 1.0
    assert clock.monotonic_ms() == 3_600_000
    assert clock.wall_ms() - clock.monotonic_ms() > 1_600_000_000_000
    loop.close()


def test_a_stuck_world_is_reported_not_waited_for() -> None:
    loop = SimLoop(SimClock(), random.Random(0))
    with pytest.raises(SimStalled):
        loop.run_until_complete(loop.create_future())
    loop.close()


def test_a_killed_process_never_runs_again() -> None:
    loop = SimLoop(SimClock(), random.Random(0))
    ran: list[str] = []

    async def process_body() -> None:
        try:
            while True:
                await asyncio.sleep(1)
                ran.append("tick")
        finally:
            ran.append("finally")  # a crash runs no finally block

    async def world() -> None:
        loop.run_in_context(1, lambda: loop.create_task(process_body()))
        loop.run_in_context(1, lambda: loop.call_later(10, ran.append, "timer"))
        await asyncio.sleep(2.5)
        loop.kill(1)
        await asyncio.sleep(20)

    loop.run_until_complete(world())
    assert ran == ["tick", "tick"]
    assert len(loop.graveyard) == 1
    loop.bury()
    loop.close()


def test_task_steps_run_in_a_seeded_order() -> None:
    def order(seed: int) -> list[int]:
        loop = SimLoop(SimClock(), random.Random(seed))
        seen: list[int] = []

        async def one(index: int) -> None:
            await asyncio.sleep(0)
            seen.append(index)

        async def main() -> None:
            await asyncio.gather(*(one(i) for i in range(8)))

        loop.run_until_complete(main())
        loop.close()
        return seen

    assert order(1) == order(1)
    assert {tuple(order(seed)) for seed in range(5)} != {tuple(range(8))}
    assert sorted(order(2)) == list(range(8))


# ---- the network and the disk


def _network(loop: SimLoop, rates: FaultRates = NO_FAULTS) -> Network:
    rng = random.Random(0)
    return Network(loop, rng, Faults(rng, rates))


def test_pipes_carry_bytes_in_order_and_close_with_an_end_of_file() -> None:
    loop = SimLoop(SimClock(), random.Random(0))
    network = _network(loop, FaultRates(slow_delivery=0.5))
    received: list[bytes] = []
    ended: list[bool] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            received.append(data)
            writer.write(data.upper())
        ended.append(True)  # the client's close reached us as an end of file
        writer.close()

    sent = b"".join(b"%02d," % i for i in range(20))

    async def main() -> bytes:
        await network.serve("h", 1, echo)
        reader, writer = await network.connect("h", 1)
        for index in range(20):
            writer.write(b"%02d," % index)
        await writer.drain()
        answer = await reader.readexactly(len(sent))
        writer.close()
        await asyncio.sleep(1)
        return answer

    answer = loop.run_until_complete(main())
    loop.close()
    assert b"".join(received) == sent
    assert answer == sent.upper()
    assert ended == [True]


def test_a_dropped_connection_is_a_reset_and_nothing_serves_a_dead_address() -> None:
    loop = SimLoop(SimClock(), random.Random(0))
    network = _network(loop)

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)

    async def main() -> None:
        bound = await network.serve("h", 1, server)
        reader, _writer = await network.connect("h", 1)
        assert network.drop_one()
        with pytest.raises(ConnectionResetError):
            await reader.read(100)
        bound.close()
        with pytest.raises(ConnectionRefusedError):
            await network.connect("h", 1)

    loop.run_until_complete(main())
    loop.close()


def test_disk_work_runs_later_on_the_loop_and_not_after_a_crash() -> None:
    loop = SimLoop(SimClock(), random.Random(0))
    rng = random.Random(0)
    executor = SimExecutor(loop, rng, Faults(rng, NO_FAULTS))
    done: list[str] = []

    async def main() -> None:
        first = loop.run_in_executor(executor, done.append, "first")
        assert done == []  # not inline: the work takes virtual time
        await first
        loop.run_in_context(2, lambda: loop.run_in_executor(executor, done.append, "lost"))
        loop.kill(2)
        await asyncio.sleep(1)

    loop.run_until_complete(main())
    assert done == ["first"]
    loop.close()


# ---- the group and transaction checks catch what they are for (ported from the
# retired core-level coordinator scenario)


def _crash_at(tick: int, change: Callable[[ShellWorld], None], **rates: float) -> type[ShellWorld]:
    """A world that crashes at `tick` (and only then) and applies `change` to the files
    while the broker is down."""

    class Changed(ShellWorld):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.flush_per_write = True

        async def _fault(self) -> None:
            self.faults.rates = dataclasses.replace(
                NO_FAULTS, shell_crash=1.0 if self.tick == tick else 0.0, **rates
            )
            await super()._fault()

        def while_down(self) -> None:
            change(self)

    return Changed


def _append(world: ShellWorld, directory: str, batch: bytes) -> None:
    log = PartitionLog.open(directory=world.directory / directory, config={}, clock=ManualClock())
    headers = validate_produced(batch, max_batch_bytes=1 << 20)
    log.append(batch, headers, leader_epoch=0)
    log.close()


def test_fsync_per_write_loses_nothing_confirmed_in_a_power_loss(tmp_path: Path) -> None:
    """Every crash a power loss, every log fsynced per write: every durability check
    holds (none is relaxed) and nothing is lost."""
    rates = dataclasses.replace(FaultRates(), power_loss=1.0, shell_crash=0.3)
    for seed in range(3):

        class FsyncPerWrite(ShellWorld):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                self.flush_per_write = True

        directory = tmp_path / str(seed)
        directory.mkdir()
        world = FsyncPerWrite(seed=seed, directory=directory, rates=rates)
        world.run(12)
        assert world.crashes > 0
        assert world.faults.injected["power_loss"] == world.crashes
        assert world.checker.counts["lossy power losses"] == 0
        assert world.checker.counts["recoveries checked"] >= world.crashes


def test_losing_a_coordinator_log_is_caught(tmp_path: Path) -> None:
    def lose_offsets(world: ShellWorld) -> None:
        for path in world.directory.glob("__consumer_offsets-*"):
            shutil.rmtree(path)

    world = _crash_at(8, lose_offsets)(seed=1, directory=tmp_path)
    with pytest.raises(InvariantViolated, match="a confirmed offset commit stands"):
        world.run(12)


def test_a_hanging_transaction_is_caught(tmp_path: Path) -> None:
    """A transaction open in the log that no coordinator knows: the LSO stays."""

    def open_a_transaction(world: ShellWorld) -> None:
        batch = produced_batch(
            base_sequence=0, count=1, first_value=0, producer_id=77_777, transactional=True
        )
        _append(world, "sim-data-0", batch)

    world = _crash_at(4, open_a_transaction)(seed=1, directory=tmp_path)
    with pytest.raises(InvariantViolated, match="does not know"):
        world.run(6)


def test_a_data_log_ahead_of_the_coordinators_epoch_is_caught(tmp_path: Path) -> None:
    """What a power loss left when it took an epoch bump from `__transaction_state`
    that the data log kept: after the restart the log would refuse the markers."""

    def epoch_ahead(world: ShellWorld) -> None:
        producer = world.producer
        assert producer.producer_id >= 0
        batch = produced_batch(
            base_sequence=0,
            count=1,
            first_value=0,
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch + 1,
            transactional=True,
        )
        _append(world, "sim-data-0", batch)

    world = _crash_at(5, epoch_ahead)(seed=1, directory=tmp_path)
    with pytest.raises(InvariantViolated, match="ahead of the coordinator's producer epoch"):
        world.run(8)


def test_a_zombie_let_through_is_caught(tmp_path: Path) -> None:
    world = ShellWorld(seed=1, directory=tmp_path)
    world.checker.zombie_answered("EndTxn", ErrorCode.producer_fenced)
    with pytest.raises(InvariantViolated, match="zombie"):
        world.checker.zombie_answered("EndTxn", ErrorCode.none)
    world.loop.close()


def test_a_power_loss_drops_only_what_was_not_fsynced(tmp_path: Path) -> None:
    disk = Disk(tmp_path)
    path = tmp_path / "segment.log"
    with disk.installed(), path.open("wb") as file:
        file.write(b"a" * 100)
        file.flush()
        os.fsync(file.fileno())
        file.write(b"b" * 50)
    assert disk.unflushed_bytes() == 50
    sizes = set()
    for seed in range(30):
        data = b"a" * 100 + b"b" * 50
        path.write_bytes(data)
        disk._durable = {(path.stat().st_dev, path.stat().st_ino): 100}
        disk.power_loss(random.Random(seed))
        kept = path.read_bytes()
        assert data.startswith(kept) and len(kept) >= 100
        sizes.add(len(kept))
    assert 100 in sizes and 150 in sizes and len(sizes) > 2  # lost, kept, and cut inside
