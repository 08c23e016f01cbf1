"""How long admin changes block the broker's event loop: the loop stalls the stall
watch (`SHOAL_STALL_TRACE`, server/observability/stall_watch.py) sees while topics are created and
share-group configs altered, and how late a Metadata "echo" on another connection is
answered meanwhile. The figures behind docs/performance/latency.md, "Metadata writes off the loop".

Run from the repository root (`--src` picks the sources the broker runs, e.g. the
main worktree's to compare):

    .venv/bin/python -m bench.metadata_stall
    .venv/bin/python -m bench.metadata_stall --src /work/main/src --topics 20

One broker on a temporary data directory next to the repository (the same file
system as a real one), `SHOAL_STALL_TRACE=<--threshold-ms>`. After one warm-up
creation and alteration (the handlers' first use imports code), a client creates
`--topics` topics of `--partitions` partitions one CreateTopics at a time, then sends
`--alters` IncrementalAlterConfigs of a share group; a second connection sends
Metadata of no topic back to back the whole time (`echo_ms`: its latency during the
admin requests, what every other client sees of a stall). The broker is stopped with
SIGTERM, which makes the watch log its stalls; `disk_stalls` are those whose sampled
stacks are in a file write or fsync. Results: stdout and JSON in
bench/results/metadata_stall.json.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess

from bench.produce_fetch import machine, save_result
from shoal.client import requests
from shoal.client.requests import GROUP_RESOURCE, ConfigChange
from shoal.client.sync import Client

_STALLS = re.compile(
    r"stall watch: (\d+) stalls over [\d.]+ ms, ([\d.]+) ms in all; on a CPU ([\d.]+) ms, "
    r"waiting for one ([\d.]+) ms"
)
_ONE = re.compile(r"stall watch: at (\d+) ms: ([\d.]+) ms \(cpu ([\d.]+), wait ([\d.]+)\): (.*)")


def _echo(bootstrap: str, stop: threading.Event, samples: list[tuple[float, float]]) -> None:
    """Metadata of no topic back to back: (sent at, latency ms) each."""
    with Client(bootstrap) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.call(requests.metadata([]))
            samples.append((started, (time.perf_counter() - started) * 1000))


def _alter(admin: Client, value: int) -> float:
    change = ConfigChange("share.record.lock.duration.ms", str(value))
    started = time.perf_counter()
    response = admin.call(requests.incremental_alter_configs({(GROUP_RESOURCE, "g"): [change]}))
    assert response.responses[0].error_code == 0, response
    return (time.perf_counter() - started) * 1000


def _create(admin: Client, name: str, partitions: int) -> float:
    started = time.perf_counter()
    response = admin.call(requests.create_topic(name, partitions=partitions))
    assert response.topics[0].error_code == 0, response
    return (time.perf_counter() - started) * 1000


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["SHOAL_STALL_TRACE"] = str(args.threshold_ms)
    os.environ["PYTHONPATH"] = str(Path(args.src).resolve())
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(dir=root, prefix=".metadata-stall-") as tmp:
        log_path = Path(tmp) / "broker.log"
        broker = BrokerProcess(Path(tmp) / "data", log_path=log_path).start()
        stop = threading.Event()
        echoes: list[tuple[float, float]] = []
        echo = threading.Thread(target=_echo, args=(broker.bootstrap, stop, echoes))
        try:
            echo.start()
            with Client(broker.bootstrap) as admin:
                _create(admin, "warm-up", 1)  # the handlers' first use (imports) is not
                _alter(admin, 60_000)  # what is measured
                time.sleep(0.5)
                window_start = time.perf_counter()
                creates = [_create(admin, f"t{i}", args.partitions) for i in range(args.topics)]
                alters = [_alter(admin, 15_000 + i) for i in range(args.alters)]
                window_end = time.perf_counter()
            time.sleep(0.2)
        finally:
            stop.set()
            echo.join(timeout=10)
            broker.stop()
        text = log_path.read_text()
    in_window = [ms for sent, ms in echoes if window_start <= sent <= window_end]
    summary = _STALLS.findall(text)
    stalls = [
        {"at_ms": int(a), "ms": float(b), "cpu_ms": float(c), "wait_ms": float(d), "stack": e}
        for a, b, c, d, e in _ONE.findall(text)
    ]
    return {
        "src": args.src,
        "topics": args.topics,
        "partitions": args.partitions,
        "alters": args.alters,
        "threshold_ms": args.threshold_ms,
        "machine": machine(),
        "stall_summary": summary[-1] if summary else None,
        "stalls": stalls,
        "longest_stall_ms": max((s["ms"] for s in stalls), default=0.0),
        "disk_stalls": _totals([s for s in stalls if _in_durable_write(s["stack"])]),
        "create_ms": _percentiles(creates),
        "alter_ms": _percentiles(alters),
        "echo_ms": _percentiles(in_window),
        "echoes": len(in_window),
    }


def _in_durable_write(stack: str) -> bool:
    """Whether a stall's sampled stacks show the loop in a file write or fsync (not
    merely handing one to a disk worker: `DiskIO.write_atomic` submits)."""
    return any(name in stack for name in ("fsync", "write_atomic@fileio", "pwritev"))


def _totals(stalls: list[dict[str, Any]]) -> dict[str, float]:
    lengths = [s["ms"] for s in stalls]
    return {
        "count": len(lengths),
        "total_ms": round(sum(lengths), 1),
        "max_ms": max(lengths or [0]),
    }


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {}
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max": round(ordered[-1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default="src", help="the sources the broker runs")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--alters", type=int, default=10)
    parser.add_argument("--threshold-ms", type=int, default=4)
    result = run(parser.parse_args())
    keys = ("src", "stall_summary", "longest_stall_ms", "disk_stalls", "create_ms", "alter_ms")
    for key in (*keys, "echo_ms"):
        print(f"{key:18} {result[key]}")
    for stall in result["stalls"]:
        print(f"  stall at {stall['at_ms']} ms: {stall['ms']} ms: {stall['stack'][:160]}")
    print("saved", save_result("metadata_stall", result))


if __name__ == "__main__":
    main()
