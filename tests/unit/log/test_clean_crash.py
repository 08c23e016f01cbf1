"""A clean killed at every one of its steps loses nothing and duplicates nothing
(docs/design/compaction.md, "The swap"): tests/support/clean_crash.py runs the clean in a
forked child process that os._exit()s at step N, for every N; the log reopened here must hold,
at each offset, the original record or nothing (what the clean removed), the same log
end offset, the latest value of every key, the same producer state, no leftover
`.cleaned` or `.swap` file, and a clean run to its end afterwards must leave exactly
what an uninterrupted clean leaves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog
from shoal.log.transactions import ControlType
from tests.support.clean_crash import CRASHED, clean_until
from tests.unit.log.cleaning import append_batch, clean, keyed, put, read_all

MIXED = {
    "cleanup.policy": ["compact"],
    "segment.bytes": 600,
    "min.cleanable.dirty.ratio": 0.0,
}
SPLIT = {**MIXED, "segment.bytes": 1000}
REPO = Path(__file__).resolve().parents[3]


def _build_mixed(directory: Path, clock: ManualClock) -> None:
    """Overwritten keys, tombstones, an aborted transaction, an idempotent producer."""
    log = PartitionLog.open(directory=directory, config=MIXED, clock=clock)
    for i in range(40):
        put(log, clock, (b"k%d" % (i % 7), b"value %d" % i))
        if i % 9 == 0:
            put(log, clock, (b"k%d" % (i % 5), None))
        if i == 12:  # an aborted transaction and an idempotent producer among them
            for seq in range(2):
                batch = keyed(
                    clock, (b"t%d" % seq, b"aborted"), producer_id=6, producer_epoch=0,
                    base_sequence=seq, transactional=True,
                )  # fmt: skip
                append_batch(log, batch)
            log.append_control(
                producer_id=6, producer_epoch=0, control=ControlType.ABORT, coordinator_epoch=0,
                timestamp_ms=clock.wall_ms(),
            )  # fmt: skip
        if i in (20, 30):
            append_batch(
                log,
                keyed(clock, (b"k1", b"idem %d" % i), producer_id=2, producer_epoch=0,
                      base_sequence=i // 10 - 2),
            )  # fmt: skip
    log.close()


def _build_split(directory: Path, clock: ManualClock) -> None:
    """Batches of tombstones, which grow when their delete horizon is set: each source
    segment is rewritten into two (their swap renames the second one first)."""
    log = PartitionLog.open(directory=directory, config=SPLIT, clock=clock)
    for batch_number in range(4):
        pairs = [(b"k%03d" % (batch_number * 39 + i), None) for i in range(39)]
        append_batch(log, keyed(clock, *pairs))
    put(log, clock, (b"k000", b"back"))
    segments = len(log.segment_base_offsets())
    while len(log.segment_base_offsets()) == segments:
        put(log, clock, (b"filler", b"x"))
    log.close()


def _build_regroup(directory: Path, clock: ManualClock) -> None:
    """The mixed log cleaned once, then written on: the next clean rewrites several
    small cleaned segments into one (a group of sources per new segment)."""
    _build_mixed(directory, clock)
    log = PartitionLog.open(directory=directory, config=MIXED, clock=clock)
    clean(log, clock)
    for i in range(20):
        put(log, clock, (b"k%d" % (i % 4), b"again %d" % i))
    log.close()


CASES = {
    "mixed": (_build_mixed, MIXED),
    "split": (_build_split, SPLIT),
    "regroup": (_build_regroup, MIXED),
}


def _view(log: PartitionLog) -> dict[int, tuple[bytes | None, bytes | None]]:
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    for record in read_all(log):
        assert record.offset not in out, f"offset {record.offset} read twice"
        out[record.offset] = (record.key, record.value)
    return out


def _latest(view: dict[int, tuple[bytes | None, bytes | None]]) -> dict[bytes, bytes | None]:
    """What a consumer ends with for each produced key (b"k..."; aborted records and
    markers, which the clean removes, left out)."""
    latest: dict[bytes, bytes | None] = {}
    for offset in sorted(view):
        key, value = view[offset]
        if key is not None and key.startswith(b"k"):
            latest[key] = value
    return latest


def _producers(log: PartitionLog) -> list[tuple[int, int, int, int]]:
    return [
        (e.producer_id, e.epoch, e.batches[-1].last_sequence, e.batches[-1].last_offset)
        for e in log.producers()
    ]


def _child(directory: Path, config: dict[str, Any], wall_ms: int, stop: int) -> tuple[int, int]:
    """Fork a child that cleans `directory` and dies at step `stop`: (exit status, steps
    it counted when it did not die)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            steps = clean_until(directory, config, wall_ms, stop)
            os.write(write_end, str(steps).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    _, wait_status = os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as pipe:
        steps = int(pipe.read() or b"-1")
    return os.waitstatus_to_exitcode(wait_status), steps


def test_the_child_runs_as_a_command(tmp_path: Path) -> None:
    """The helper also runs as its own interpreter (`python -m`), as documented."""
    clock = ManualClock()
    directory = tmp_path / "topic-0"
    _build_split(directory, clock)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.clean_crash", str(directory),
         json.dumps(SPLIT), str(clock.wall_ms()), "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == CRASHED, done.stderr
    assert list(directory.glob("*.swap")) or list(directory.glob("*.cleaned"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_clean_killed_at_any_step_loses_and_duplicates_nothing(tmp_path: Path, case: str) -> None:
    build, config = CASES[case]
    clock = ManualClock()
    template = tmp_path / "template" / "topic-0"
    build(template, clock)
    original = PartitionLog.open(directory=template, config=config, clock=clock)
    before = _view(original)
    end = original.log_end_offset
    producers = _producers(original)
    original.abandon()

    # the uninterrupted clean, for reference; it also counts the steps
    reference_dir = tmp_path / "reference" / "topic-0"
    shutil.copytree(template, reference_dir)
    status, steps = _child(reference_dir, config, clock.wall_ms(), 10**9)
    assert status == 0
    assert steps > 10
    reference = PartitionLog.open(directory=reference_dir, config=config, clock=clock)
    cleaned = _view(reference)
    assert len(cleaned) < len(before)
    reference.abandon()

    for stop in range(steps):
        directory = tmp_path / f"crash-{stop}" / "topic-0"
        shutil.copytree(template, directory)
        status, _ = _child(directory, config, clock.wall_ms(), stop)
        assert status == CRASHED, stop
        log = PartitionLog.open(directory=directory, config=config, clock=clock)
        view = _view(log)
        assert all(before[offset] == record for offset, record in view.items()), stop
        assert set(cleaned) <= set(view), f"step {stop}: a record the clean keeps is lost"
        assert _latest(view) == _latest(before), stop
        assert log.log_end_offset == end
        assert _producers(log) == producers, stop
        leftovers = [p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap"))]
        assert not leftovers, (stop, leftovers)
        # cleaning on from whatever the crash left ends where an uninterrupted clean does
        while log.clean_plan(clock.wall_ms()) is not None:
            if clean(log, clock).end_offset >= log.segment_base_offsets()[-1]:
                break
        assert _view(log) == cleaned, stop
        log.abandon()
        shutil.rmtree(directory.parent)
