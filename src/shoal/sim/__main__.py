"""`python -m shoal.sim`: simulate seeds and report.

    python -m shoal.sim --seed 17 --verbose   # one seed, its schedule printed
    python -m shoal.sim --seeds 10000         # seeds 0..9999, figures + JSON
    python -m shoal.sim --scenario shell --seeds 1000 --steps 60   # the real broker
    python -m shoal.sim --scenario shell --seeds 500 --rate power_loss=1 --rate shell_crash=0.15
    python -m shoal.sim --scenario shell-keys --seeds 200   # key-ordered share delivery
    python -m shoal.sim --scenario shell-due --seeds 200    # scheduled share delivery
    python -m shoal.sim --scenario shell-keys --order none --seeds 20   # violations counted

Exits 1 if any seed violated an invariant (the failing seeds are listed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from shoal.clock import SystemClock, measure_ns
from shoal.sim.faults import FaultRates
from shoal.sim.run import SCENARIOS, SHARE, Summary, default_steps, run_seed

RESULTS = Path("bench/results")


def result_name(scenario: str) -> str:
    """The results file's name (without `.json`) of a run of `scenario`: `sim` for the
    share scenario, `sim-<scenario>` for the others; one current file per scenario."""
    return "sim" if scenario == SHARE else f"sim-{scenario}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shoal.sim", description=__doc__)
    parser.add_argument("--seed", type=int, help="simulate this one seed")
    parser.add_argument("--seeds", type=int, default=100, help="simulate seeds 0..N-1")
    parser.add_argument("--first", type=int, default=0, help="first seed of --seeds")
    parser.add_argument(
        "--steps", type=int, help="operations a seed (world ticks for shell; default 60 / 40)"
    )
    parser.add_argument("--verbose", action="store_true", help="print the schedule")
    parser.add_argument(
        "--scenario",
        choices=SCENARIOS,
        default=SHARE,
        help="share: producer, share members, share coordinator (the cores); shell: the "
        "real broker (handlers, purgatory, timers, services, coordinators) on virtual "
        "time over in-memory pipes, with consumer-group members, a transactional "
        "producer and share members (docs/design/simulation.md); shell-keys, shell-due: the same "
        "world with a key-ordered or a scheduled share group and their checks",
    )
    parser.add_argument(
        "--order",
        choices=("key", "none"),
        help="shell-keys / shell-due: the share group's shoal.share.delivery.order (default: "
        "key; shell-due: key on odd seeds); under none the key-order checks count "
        "violations instead of failing",
    )
    parser.add_argument("--json", type=Path, help="where to write figures (default bench/results)")
    parser.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="FAULT=P",
        help="override one fault's probability (shoal.sim.faults.FaultRates), repeatable",
    )
    args = parser.parse_args(argv)
    try:
        rates = _rates(args.rate)
    except ValueError as exc:
        parser.error(str(exc))
    if args.steps is None:
        args.steps = default_steps(args.scenario)
    if args.seed is not None:
        result = run_seed(
            args.seed,
            steps=args.steps,
            verbose=args.verbose,
            scenario=args.scenario,
            rates=rates,
            order=args.order,
        )
        if result.violation is not None:
            print(f"seed {args.seed}: VIOLATED {result.violation}")
            return 1
        virtual = f", {result.virtual_ms / 1000:.0f} s virtual" if result.virtual_ms else ""
        print(f"seed {args.seed}: ok ({result.steps} steps, {result.crashes} crashes{virtual})")
        return 0
    summary = Summary()
    started_ns = measure_ns()
    for seed in range(args.first, args.first + args.seeds):
        result = run_seed(
            seed,
            steps=args.steps,
            verbose=args.verbose,
            scenario=args.scenario,
            rates=rates,
            order=args.order,
        )
        summary.add(result)
        if result.violation is not None:
            print(f"seed {seed}: VIOLATED {result.violation}", flush=True)
    elapsed = max(1e-9, (measure_ns() - started_ns) / 1e9)
    now = datetime.fromtimestamp(SystemClock().wall_ms() / 1000, UTC)
    figures = {
        "scenario": args.scenario,
        "seeds": summary.seeds,
        "first_seed": args.first,
        "steps_per_seed": args.steps,
        "rates_overridden": dict(item.split("=", 1) for item in args.rate),
        "order": args.order,
        "elapsed_s": round(elapsed, 2),
        "seeds_per_s": round(summary.seeds / elapsed, 2),
        "ms_per_seed": round(1000 * elapsed / max(1, summary.seeds), 2),
        "crashes": summary.crashes,
        "virtual_hours": round(summary.virtual_ms / 3_600_000, 2),
        "faults": dict(sorted(summary.faults.items())),
        "faults_total": sum(summary.faults.values()),
        "checks": dict(sorted(summary.checks.items())),
        "checks_total": sum(summary.checks.values()),
        "failed_seeds": summary.failed,
        "note": "measured on a 2-core machine shared with other engineers' test runs",
        "timestamp": f"{now:%Y-%m-%dT%H:%M:%SZ}",
    }
    print(json.dumps(figures, indent=2))
    # The current run only (its date inside), replacing the scenario's last one.
    path = args.json or RESULTS / f"{result_name(args.scenario)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {path}")
    return 1 if summary.failed else 0


def _rates(overrides: list[str]) -> FaultRates | None:
    """FaultRates with `NAME=P` overrides (None: the defaults)."""
    if not overrides:
        return None
    known = {f.name for f in dataclasses.fields(FaultRates)}
    values: dict[str, float] = {}
    for item in overrides:
        name, _, value = item.partition("=")
        if name not in known:
            raise ValueError(f"--rate {item}: no fault {name!r} (one of {sorted(known)})")
        values[name] = float(value)
    return dataclasses.replace(FaultRates(), **values)


if __name__ == "__main__":
    sys.exit(main())
