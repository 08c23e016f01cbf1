"""Start-up time to the first answered request, and idle resident memory, of `shoal serve`.

Shoal alone, measured as the side-by-side benchmark measures every broker (its
start-up and idle-memory rows; bench/side_by_side.py), by bench/peers/ops.py
`startup`: each run starts `shoal serve` with its default settings on a fresh (empty)
data directory (bench/peers/runners.py `ShoalRunner`; a thread polls ApiVersions from
the spawn on, and start-up is the seconds from the spawn to the first answer), reads
the CPU seconds the broker used up to then (a figure the machine's load changes far
less than the wall time), then makes one topic and leaves the broker idle for
`--idle-s` seconds before reading its VmRSS (ops.py `idle_rss`). The medians of
`--runs` runs are printed and saved to bench/results/startup.json with the machine's
load. docs/performance/startup.md explains the figures.

    PYTHONPATH=src .venv/bin/python -m bench.startup --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any

from bench.peers.ops import startup
from bench.peers.runners import ShoalRunner
from bench.produce_fetch import save_result

MIB = 1 << 20


def _figures(run: dict[str, float]) -> dict[str, float]:
    return {
        "startup_s": run["startup_s"],
        "startup_cpu_s": run["startup_cpu_s"],
        "idle_rss_mib": run["idle_rss_bytes"] / MIB,
    }


def _show(run: dict[str, float]) -> None:
    shown = _figures(run)
    print(
        f"  start-up {shown['startup_s']:.3f} s ({shown['startup_cpu_s']:.2f} s CPU)  "
        f"idle RSS {shown['idle_rss_mib']:.1f} MiB",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.startup",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=3.0)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    measured = startup(ShoalRunner, args.runs, settle_s=args.idle_s, each=_show)
    runs = [_figures(run) for run in measured["runs"]]
    result: dict[str, Any] = {
        "runs": runs,
        "startup_s_median": statistics.median(r["startup_s"] for r in runs),
        "startup_cpu_s_median": statistics.median(r["startup_cpu_s"] for r in runs),
        "idle_rss_mib_median": statistics.median(r["idle_rss_mib"] for r in runs),
        "load_1min": [load_before, os.getloadavg()[0]],
    }
    print(
        f"shoal: start-up {result['startup_s_median']:.3f} s (median of {len(runs)}; "
        f"{result['startup_cpu_s_median']:.2f} s CPU), "
        f"idle RSS {result['idle_rss_mib_median']:.1f} MiB; load {result['load_1min']}"
    )
    save_result("startup", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
