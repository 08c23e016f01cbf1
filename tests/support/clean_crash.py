"""A clean that stops dead at step N: the child of tests/unit/log/test_clean_crash.py.

    python -m tests.support.clean_crash <partition dir> <config json> <wall ms> <N>

Opens the partition log, plans a clean at wall time <wall ms>, runs it and finishes it;
step 0 is the end of `run` (the `.cleaned` files written and fsynced), then every durable
step `finish_clean` reports (each rename, each retired segment, the checkpoint). At
step N the process leaves with os._exit (no close, no flush, no atexit: as a SIGKILL
would find it). A run with N past the last step prints the number of steps and exits
normally, the log abandoned likewise.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog

CRASHED = 77
"""Exit status of a run that stopped at its step."""


def main() -> None:
    directory, config, wall_ms, stop = sys.argv[1:5]
    clock = ManualClock(wall_offset_ms=int(wall_ms))
    log = PartitionLog.open(directory=Path(directory), config=json.loads(config), clock=clock)
    steps = 0
    target = int(stop)

    def step(_name: str) -> None:
        nonlocal steps
        if steps == target:
            os._exit(CRASHED)
        steps += 1

    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None, "the test log must be due for a clean"
    result = plan.run(key_map_entries=1000)
    assert result.error is None, result.error
    step("run")
    log.finish_clean(result, on_step=step)
    print(steps)
    sys.stdout.flush()
    log.abandon()
    os._exit(0)


if __name__ == "__main__":
    main()
