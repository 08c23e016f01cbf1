"""The coordinator scenario of the simulation (group and transaction coordinators,
power losses): a short run holds every invariant, a seed replays exactly, fsync per
write loses nothing confirmed, and the checkers fire when the broker breaks them."""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
from pathlib import Path

import pytest

from shoal.log.transactions import ControlType
from shoal.protocol.errors import ErrorCode
from shoal.sim.broker import produced_batch
from shoal.sim.coord_world import CoordWorld
from shoal.sim.disk import Disk
from shoal.sim.faults import NO_FAULTS, FaultRates
from shoal.sim.invariants import InvariantViolated
from shoal.sim.run import COORDINATORS, run_seed

SHORT_RUN_SEEDS = 20


def test_a_short_run_holds_every_invariant() -> None:
    failed = []
    crashes = power_losses = 0
    checks: dict[str, int] = {}
    for seed in range(SHORT_RUN_SEEDS):
        result = run_seed(seed, scenario=COORDINATORS)
        crashes += result.crashes
        power_losses += result.faults["power_loss"]
        for name, count in result.checks.items():
            checks[name] = checks.get(name, 0) + count
        if result.violation is not None:
            failed.append((seed, result.violation))
    assert not failed, failed
    assert crashes > SHORT_RUN_SEEDS
    assert power_losses > 0
    for name in ("replay equals live", "group checks", "read_committed scans", "final checks"):
        assert checks.get(name, 0) > 0, (name, checks)


def test_a_seed_replays_exactly() -> None:
    first = run_seed(5, scenario=COORDINATORS)
    again = run_seed(5, scenario=COORDINATORS)
    assert first.schedule == again.schedule
    assert first.checks == again.checks
    assert run_seed(6, scenario=COORDINATORS).schedule != first.schedule


def test_fsync_per_write_loses_nothing_confirmed_in_a_power_loss(tmp_path: Path) -> None:
    """Every crash a power loss, every log fsynced per write: every durability
    check holds (none is relaxed) and nothing unflushed is ever lost."""
    rates = dataclasses.replace(FaultRates(), power_loss=1.0, crash_idle=0.9)
    for seed in range(4):
        directory = tmp_path / str(seed)
        directory.mkdir()
        world = CoordWorld(seed=seed, directory=directory, rates=rates, flush_per_write=True)
        world.run(40)
        world.broker.crash()
        assert world.crashes > 0
        assert world.checker.counts["lossy power losses"] == 0
        assert not any("lost unflushed: " in line and ".log:" in line for line in world.schedule)


def _quiet_world(tmp_path: Path, steps: int = 40) -> CoordWorld:
    world = CoordWorld(seed=11, directory=tmp_path, rates=NO_FAULTS, flush_per_write=True)
    with world.disk.installed():
        for _ in range(steps):
            world.step += 1
            world._one_step()
    return world


def test_losing_a_coordinator_log_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path)
    assert world.broker.offsets_logs[0].log_end_offset + world.broker.offsets_logs[1].log_end_offset
    world.checker.before_crash()
    world.broker.crash()
    for name in ("__consumer_offsets-0", "__consumer_offsets-1"):
        shutil.rmtree(tmp_path / name)
    world.broker = world._start()
    with pytest.raises(InvariantViolated, match="recovery equals a state after"):
        world.checker.after_recovery(lossy=False)


def test_a_hanging_transaction_is_caught(tmp_path: Path) -> None:
    """A transaction open in the log that no coordinator knows (the LSO stuck)."""
    world = _quiet_world(tmp_path)
    batch = produced_batch(
        base_sequence=0, count=1, first_value=0, producer_id=77_777, transactional=True
    )
    world.broker.append(batch)
    with pytest.raises(InvariantViolated, match="does not know"):
        world.checker.check_step()


def test_an_aborted_transaction_made_visible_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path, steps=60)
    producer = world.producer
    assert producer.producer_id >= 0
    serial = max(world.checker.acked) + 1
    world.checker.txn_begun(serial)
    first = serial * 10_000
    batch = produced_batch(
        base_sequence=producer.sequence,
        count=2,
        first_value=first,
        producer_id=producer.producer_id,
        producer_epoch=producer.epoch,
        transactional=True,
    )
    world.broker.append(batch)
    world.checker.txn_acked(serial, [first, first + 1])
    world.checker.txn_ended(serial, committed=False)
    world.broker.data_log.append_control(  # a COMMIT where the client was told ABORT
        producer_id=producer.producer_id,
        producer_epoch=producer.epoch,
        control=ControlType.COMMIT,
        coordinator_epoch=0,
        timestamp_ms=world.clock.wall_ms(),
    )
    with pytest.raises(InvariantViolated, match="aborted transaction is never visible"):
        world.checker.check_step(replay=False)


def test_a_data_log_ahead_of_the_coordinators_epoch_is_caught(tmp_path: Path) -> None:
    """What a power loss left when it took an epoch bump from `__transaction_state`
    that the data log kept: after the restart the log would refuse the markers."""
    world = _quiet_world(tmp_path, steps=60)
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
    world.broker.append(batch)
    world.checker.before_crash()
    world.broker.crash()
    world.broker = world._start()
    with pytest.raises(InvariantViolated, match="ahead of the coordinator's producer epoch"):
        world.checker.after_recovery(lossy=True)


def test_a_zombie_let_through_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path, steps=1)
    world.checker.zombie_refused("EndTxn", ErrorCode.producer_fenced)
    with pytest.raises(InvariantViolated, match="zombie"):
        world.checker.zombie_refused("EndTxn", ErrorCode.none)


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
