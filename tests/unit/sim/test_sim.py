"""The deterministic simulation: a short run of seeds holds every invariant, a seed
replays exactly, and each invariant checker fires when the broker breaks it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.share.acknowledge import AckBatch
from shoal.share.acquire import AcquiredRecords
from shoal.share.persister import StateWrite
from shoal.share_coordinator import ShareCoordinator
from shoal.sim.__main__ import main
from shoal.sim.broker import GROUP, KEY, TP, produced_batch
from shoal.sim.faults import NO_FAULTS
from shoal.sim.invariants import InvariantViolated
from shoal.sim.run import run_seed
from shoal.sim.world import MEMBERS, World

SHORT_RUN_SEEDS = 200
ACCEPT = int(AcknowledgeType.ACCEPT)


def test_a_short_run_holds_every_invariant() -> None:
    failed = []
    crashes = torn = 0
    for seed in range(SHORT_RUN_SEEDS):
        result = run_seed(seed)
        crashes += result.crashes
        torn += result.faults["torn_write"]
        if result.violation is not None:
            failed.append((seed, result.violation))
    assert not failed, failed
    # The run injected what it claims to.
    assert crashes > SHORT_RUN_SEEDS
    assert torn > 0


def test_a_seed_replays_exactly() -> None:
    first = run_seed(1)
    again = run_seed(1)
    assert first.schedule == again.schedule
    assert first.checks == again.checks
    assert any("CRASH" in line for line in first.schedule)
    assert run_seed(2).schedule != first.schedule


def _quiet_world(tmp_path: Path, steps: int = 40) -> World:
    """Seed 3 run for `steps` operations without faults (and no drain)."""
    world = World(seed=3, directory=tmp_path, rates=NO_FAULTS)
    for _ in range(steps):
        world.step += 1
        world._one_step()
    assert world.broker.data_log.log_end_offset > 0
    return world


def test_losing_the_state_log_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path)
    world.broker.states_after_writes.clear()
    world.checker.before_crash()
    world.broker.crash()
    shutil.rmtree(tmp_path / "__share_group_state-0")
    world.broker = world._start()
    with pytest.raises(InvariantViolated, match="recovery equals"):
        world.checker.after_recovery()


def test_a_confirmed_record_delivered_again_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path)
    world.clock.advance(world.share_config.record_lock_duration_ms + 1)
    world.broker.manager.expire_locks(now_ms=world.clock.monotonic_ms())
    sp = world.broker.manager.get(KEY)
    assert sp is not None
    first, end = sp.next_fetch_offset(), world.broker.data_log.log_end_offset
    assert first < end, "the run left records to deliver"
    # The client believes these were accepted; the broker never heard of it.
    world.checker.confirmed([AckBatch(first, end - 1, (ACCEPT,))])
    fetched = world.broker.manager.acquire(
        group_id=GROUP,
        member_id=MEMBERS[0],
        partitions=[TP],
        max_records=500,
        batch_size=500,
        max_bytes=1 << 20,
    )
    with pytest.raises(InvariantViolated, match="never delivered again"):
        world.checker.check_acquired(fetched.partitions[0].acquired)


def test_a_confirmed_ack_not_durable_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path)
    sp = world.broker.manager.get(KEY)
    assert sp is not None
    end = world.broker.data_log.log_end_offset
    world.checker.confirmed([AckBatch(end - 1, end - 1, (ACCEPT,))])
    with pytest.raises(InvariantViolated, match="confirmed acknowledgement"):
        world.checker.check_step()


def test_an_acked_record_missing_from_the_log_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path)
    key = (world.producer.producer_id, world.producer.next_sequence + 1)
    world.producer.acked[key] = world.broker.data_log.log_end_offset
    with pytest.raises(InvariantViolated, match="every acked record is in the log"):
        world.checker.check_step()


def test_a_record_written_twice_is_caught(tmp_path: Path) -> None:
    """A new producer epoch restarts sequences at 0: the log takes the batch, and the
    sequences it carries are then in the log twice."""
    world = World(seed=3, directory=tmp_path, rates=NO_FAULTS)
    for _ in range(3):
        world.produce()
    world.checker.check_step()
    world.broker.append(produced_batch(base_sequence=0, count=1, first_value=0, producer_epoch=1))
    with pytest.raises(InvariantViolated, match="in the log once"):
        world.checker.check_step()


def test_a_delivery_count_above_the_limit_is_caught(tmp_path: Path) -> None:
    world = World(seed=3, directory=tmp_path, rates=NO_FAULTS)
    world.produce()
    limit = world.share_config.delivery_count_limit
    world.checker.check_acquired([AcquiredRecords(0, 0, limit)])
    with pytest.raises(InvariantViolated, match="delivery count within the limit"):
        world.checker.check_acquired([AcquiredRecords(0, 0, limit + 1)])


def test_an_spso_moving_back_is_caught(tmp_path: Path) -> None:
    world = _quiet_world(tmp_path)
    sp = world.broker.manager.get(KEY)
    assert sp is not None
    world.checker.spso = sp.start_offset + 1
    with pytest.raises(InvariantViolated, match="the SPSO never moves back"):
        world.checker.check_step()


def test_the_command_line_writes_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "sim.json"
    assert main(["--seeds", "3", "--first", "1", "--json", str(path)]) == 0
    figures = json.loads(path.read_text())
    assert figures["seeds"] == 3
    assert figures["failed_seeds"] == []
    assert figures["faults_total"] == sum(figures["faults"].values()) > 0
    assert figures["checks"]["replay equals live"] > 0
    assert main(["--seed", "1", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "CRASH" in out and "seed 1: ok" in out


def test_a_coordinator_that_drops_writes_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A share coordinator answering success for a write it never made: the simulation
    finds it within a few seeds (the checkers are not vacuous end to end)."""
    honest = ShareCoordinator.write
    calls = [0]

    def lying(self: ShareCoordinator, *, write: StateWrite) -> ErrorCode | None:
        calls[0] += 1
        if calls[0] % 3 == 0:
            return None
        return honest(self, write=write)

    monkeypatch.setattr(ShareCoordinator, "write", lying)
    violations = [run_seed(seed).violation for seed in range(10)]
    assert any(v is not None for v in violations), violations


@pytest.mark.parametrize(
    ("kwargs", "size", "sha256"),
    [
        (
            {"base_sequence": 0, "count": 1, "first_value": 0},
            69,
            "c5bd4fc12e0a8d3bb3ff9ce67a157a5ef38c4eb1cdc1e4fdc71e79537b34858f",
        ),
        (
            {
                "base_sequence": 40,
                "count": 130,
                "first_value": 40,
                "producer_epoch": 3,
                "transactional": True,
            },
            1367,
            "30406a7b8fb52322fa7bf99a9064d99ebe14462699f0f7e2c9136f7c714ca733",
        ),
        (
            {"base_sequence": 2**31 - 5, "count": 7, "first_value": 10**6, "producer_id": 2**40},
            159,
            "c0a2d7e774d8593894fb54d37ed4421900ead3def52cfff2e8db1dbc5c9ca34c",
        ),
    ],
)
def test_produced_batches_are_unchanged(kwargs: dict[str, Any], size: int, sha256: str) -> None:
    """The simulator's batches, now from the shared batch writer, are the bytes kio's
    writer made before (their digests, recorded): a seed replays the same log."""
    data = produced_batch(**kwargs)
    assert (len(data), hashlib.sha256(data).hexdigest()) == (size, sha256)
