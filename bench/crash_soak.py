"""The crash soak, long: a `shoal serve` broker SIGKILLed `--kills` times (default
100) under a mixed load, everything the clients were told checked after each restart.

Run from the repository root:

    .venv/bin/python -m bench.crash_soak --kills 100
    .venv/bin/python -m bench.crash_soak --kills 10 --seed 42     # replay a seed's schedule

The load and the checks are tests/support/crash_soak.py's (the default suite runs the
same soak with 5 kills, tests/e2e/test_crash_soak.py): an idempotent producer in
bursts, a consumer-group fetcher, three ShareConsumers acknowledging with ACCEPT /
RELEASE / REJECT and commit_sync, `shoal share-groups --reset-offsets` on an empty
second group; kills after a random delay, mid-produce-burst or mid-acknowledgement.
The seed fixes the kill schedule and the burst sizes; thread timing is not seeded, so
a seed replays the schedule, not the exact interleaving.

Printed: one line per kill (moment, restart time, check time, records acknowledged so
far), the final share drain's progress every 30 s (records left, the group's lag per
partition), then the totals: kills survived, records produced and acknowledged, lost and
duplicated (both must be 0; any violation stops the run with the seed). JSON in
bench/results/crash_soak.json with every round.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from tests.support.broker import BrokerProcess
from tests.support.crash_soak import Soak
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES

from bench.produce_fetch import machine, save_result

DRAIN_TIMEOUT_S = 900.0
"""Bound of the share consumers' final drain. With each consumer on its own thread
(crash_load.Sharing says why) the backlog left at the end is small (3.6k records after
10 kills, drained in 4.4 s at load 12); the bound is for a machine far busier."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    # SIGTERM ends the run through the `finally` below, so the broker is killed too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    print(f"crash soak: {args.kills} kills, seed {seed}", flush=True)
    before = machine()
    with tempfile.TemporaryDirectory(prefix="shoal-crash-soak-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", overrides=SHARE_TEST_BROKER_OVERRIDES)
        broker.start()
        try:
            soak = Soak(
                broker,
                kills=args.kills,
                seed=seed,
                topic="crash-soak",
                log=lambda line: print(line, flush=True),
                drain_timeout_s=DRAIN_TIMEOUT_S,
            )
            report = soak.run()
        except AssertionError:
            kept = Path(tempfile.gettempdir()) / f"crash_soak-{stamp}-broker.log"
            shutil.copyfile(broker.log_path, kept)
            print(f"broker log kept in {kept}", flush=True)
            raise
        finally:
            broker.kill()
    summary = report.summary()
    result = {
        "bench": "crash_soak",
        "timestamp": stamp,
        "summary": summary,
        "rounds": [dataclasses.asdict(r) for r in report.rounds],
        "machine": {**machine(), "load_average_1m_before": before.get("load_average_1m")},
        "note": "2 cores shared with other engineers' test runs: timings are noisy",
    }
    out = save_result("crash_soak", result)
    print()
    for name, value in summary.items():
        print(f"{name:32s} {value}")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
