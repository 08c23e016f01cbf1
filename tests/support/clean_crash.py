"""A clean that stops dead at step N: the child side of
tests/unit/log/test_clean_crash.py (forked there, or run as
`python -m tests.support.clean_crash <partition dir> <config json> <wall ms> <N>`).

Opens the partition log, plans a clean at wall time <wall ms>, runs it and finishes it;
step 0 is the end of `run` (the `.cleaned` files written and fsynced), then every durable
step `finish_clean` reports (each rename, each retired segment, the checkpoint). At
step N the process leaves with os._exit (no close, no flush, no atexit: as a SIGKILL
would find it). With N past the last step the clean completes, the log is abandoned
likewise, and the number of steps is returned (printed by the command).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog

CRASHED = 77
"""Exit status of a run that stopped at its step."""


def clean_until(directory: Path, config: dict[str, Any], wall_ms: int, stop: int) -> int:
    clock = ManualClock(wall_offset_ms=wall_ms)
    log = PartitionLog.open(directory=directory, config=config, clock=clock)
    steps = 0

    def step(_name: str) -> None:
        nonlocal steps
        if steps == stop:
            os._exit(CRASHED)
        steps += 1

    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None, "the test log must be due for a clean"
    result = plan.run(key_map_entries=1000)
    assert result.error is None, result.error
    step("run")
    log.finish_clean(result, on_step=step)
    log.abandon()
    return steps


def main() -> None:
    directory, config, wall_ms, stop = sys.argv[1:5]
    steps = clean_until(Path(directory), json.loads(config), int(wall_ms), int(stop))
    print(steps)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
