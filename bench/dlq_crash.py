"""Dead-letter queue copies under SIGKILLs, long: a `shoal serve` broker SIGKILLed
`--kills` times (default 20) while a ShareConsumer REJECTs every
record of a topic whose group has a DLQ topic (KIP-1191).

Run from the repository root:

    .venv/bin/python -m bench.dlq_crash --kills 20

The loop and its checks are tests/support/dlq_crash.py's (the default suite runs it
with 3 kills, tests/e2e/test_share_dlq_crash.py): every offset of the source topic
must have exactly one DLQ record. Printed and saved (bench/results/dlq_crash.json):
kills, records, DLQ records, rejects sent (more than the records when a kill lost
acknowledgements and the records came back), recovered copies found already written
(`dedupe_hits`), the wall time and the machine's load.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from tests.support.broker import BrokerProcess
from tests.support.dlq_crash import run_dlq_crash_loop
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES

from bench.produce_fetch import machine, save_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=30)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    print(f"dlq crash: {args.kills} kills, seed {seed}", flush=True)
    before = machine()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="shoal-dlq-crash-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", overrides=SHARE_TEST_BROKER_OVERRIDES)
        broker.start()
        try:
            figures = run_dlq_crash_loop(broker, kills=args.kills, chunk=args.chunk, seed=seed)
        finally:
            broker.kill()
    result = {
        "bench": "dlq_crash",
        "timestamp": stamp,
        "seed": seed,
        "summary": {**figures, "lost": 0, "duplicated": 0},
        "wall_s": round(time.monotonic() - started, 1),
        "machine": {**machine(), "load_average_1m_before": before.get("load_average_1m")},
        "note": "2 cores shared with other engineers' test runs: timings are noisy",
    }
    print(result["summary"], f"in {result['wall_s']} s", flush=True)
    print("saved", save_result("dlq_crash", result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
