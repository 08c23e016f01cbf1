"""The wire fuzzer's long run: millions of fuzzed frames against a real broker process.

Run from the repository root:

    .venv/bin/python -m bench.fuzz --frames 1000000          # the long run
    .venv/bin/python -m bench.fuzz --frames 20000 --seed 7    # a short one

A broker is started on a temporary data directory; the frames come from
tests/support/wire_fuzz.py (structure-aware, from kio's schemas, plus raw bytes) and
are sent by tests/support/fuzz_runner.py over many connections at once, in rounds of
`--round` frames, while a confluent-kafka producer and consumer keep round-tripping a
health topic. The broker's RSS is read after a warm-up round and after each round
(a leak per connection shows as growth with the rounds, not as the warm-up's step).

Bugs: broker log lines with a traceback or "handler of X failed", a dead process, or
a health record delivered and not consumed. Results: a summary on stdout and JSON in
bench/results/fuzz.json (rewritten after every round). The machine is shared: frames/s
are indicative only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support import fuzz_runner
from tests.support.broker import BrokerProcess

from bench.produce_fetch import save_result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000, help="frames to fuzz")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--round", type=int, default=50_000, help="frames per round")
    parser.add_argument("--concurrency", type=int, default=32, help="connections at once")
    parser.add_argument("--warm", type=int, default=5_000, help="warm-up frames")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop early: broker killed, JSON kept
    root = Path(tempfile.mkdtemp(prefix="shoal-fuzz-"))
    broker = BrokerProcess(root / "data").start()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    rounds: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        fuzz_runner.prepare(broker)
        done = 0
        while done < args.frames and broker.alive:
            count = min(args.round, args.frames - done)
            result = fuzz_runner.run(
                broker,
                seed=args.seed + len(rounds),
                frames=count,
                concurrency=args.concurrency,
                warm_frames=args.warm if not rounds else 0,
            )
            done += count
            rounds.append(_round(result))
            print(json.dumps(rounds[-1]), flush=True)
            summary = _summary(args.seed, rounds, time.monotonic() - started, broker.alive)
            # after every round: a long run stopped early keeps its figures
            path = save_result("fuzz", {"timestamp": stamp, **summary})
            if result.problems:
                break
    finally:
        broker.kill()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"frames {summary['frames']} ({summary['frames_per_s']}/s), answered "
        f"{summary['responses']}, connections {summary['connections']}, bugs {summary['bugs']}, "
        f"health lost {summary['health_lost']}/{summary['health_sent']}, "
        f"RSS kB {summary['rss_kb']}; {path}"
    )


def _summary(
    seed: int, rounds: list[dict[str, Any]], elapsed_s: float, alive: bool
) -> dict[str, Any]:
    problems = rounds[-1]["problems"]
    frames = sum(r["frames"] for r in rounds)
    return {
        "bench": "fuzz",
        "seed": seed,
        "frames": frames,
        "responses": sum(r["responses"] for r in rounds),
        "connections": sum(r["connections"] for r in rounds),
        "raw_frames": sum(r["raw_frames"] for r in rounds),
        "elapsed_s": round(elapsed_s, 1),
        "frames_per_s": round(frames / max(elapsed_s, 0.1)),
        "broker_alive": alive,
        "bugs": len(problems),  # log lines with a traceback or a failed handler, a dead broker
        "problems": problems,
        "health_sent": sum(r["health_sent"] for r in rounds),
        "health_lost": sum(r["health_sent"] - r["health_received"] for r in rounds),
        "rss_kb": [rounds[0]["rss_start_kb"], rounds[0]["rss_warm_kb"]]
        + [r["rss_end_kb"] for r in rounds],
        "rounds": rounds,
        "note": "shared 2-core machine (about 7 engineers running tests): frames/s indicative",
    }


def _round(result: fuzz_runner.FuzzResult) -> dict[str, Any]:
    return {
        "seed": result.seed,
        "frames": result.frames,
        "raw_frames": result.raw_frames,
        "responses": result.responses,
        "connections": result.connections,
        "read_timeouts": result.read_timeouts,
        "frames_per_s": round(result.frames_per_s),
        "health_sent": result.health_sent,
        "health_received": result.health_received,
        "rss_start_kb": result.rss_start_kb,
        "rss_warm_kb": result.rss_warm_kb,
        "rss_end_kb": result.rss_end_kb,
        "problems": result.problems[:20],
    }


if __name__ == "__main__":
    main()
