"""Produce and fetch throughput of a Shoal broker, measured with confluent-kafka on loopback.

Run from the repository root:

    .venv/bin/python -m bench.produce_fetch            # ~1M x 100 B and 300k x 1 KiB
    .venv/bin/python -m bench.produce_fetch --quick    # a few seconds, to try it
    .venv/bin/python -m bench.produce_fetch --profile  # + py-spy of the broker while producing

The script starts its own broker (tests/support/broker.py) on a temporary data
directory. For each value size it produces with acks=1 and with acks=all (linger.ms=5,
batch.size=1 MB, no compression, no keys, no delivery callbacks), then consumes the
acks=all topic from offset 0 with an assigned Consumer. MB/s counts value bytes only.
The broker's CPU use per phase (from /proc) tells whether a phase was broker-bound
(~100% of one core: the broker's single event loop is saturated) or client-bound.

Results: an aligned table on stdout and JSON in bench/results/produce_fetch.json with
the date and machine information. With --profile, py-spy samples the broker during the
produce phases into bench/results/produce_fetch-profile.svg (flame graph) and
produce_fetch-profile.txt (collapsed stacks), and the hottest functions are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

import shoal

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def result_path(name: str) -> Path:
    """`bench/results/<name>`: a benchmark's one current file (its JSON, or an artefact
    such as `<bench>-profile.svg`); names carry no date, a new run replaces the last."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    return RESULTS_DIR / name


def save_result(bench: str, result: dict[str, Any]) -> Path:
    """Write a bench's result as `bench/results/<bench>.json`, replacing the previous run's
    (one current file per benchmark, not a diary); returns the path. The date and the
    machine stay inside: a result without a "timestamp" gets one (UTC)."""
    out = result_path(f"{bench}.json")
    document = {"timestamp": time.strftime("%Y%m%d-%H%M%S", time.gmtime()), **result}
    out.write_text(json.dumps(document, indent=2, default=str) + "\n")
    return out


PARTITIONS = 3
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Phase:
    name: str
    value_bytes: int
    records: int
    seconds: float
    broker_cpu_percent: float
    client_cpu_percent: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.records * self.value_bytes / self.seconds / 1e6


def process_cpu_s(pid: int) -> float:
    """A process's CPU seconds so far (utime + stime from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class CpuMeter:
    """CPU over a phase: the broker process (from /proc) and the client, which is this
    process, plus its finished child processes when `include_children` (consumers run
    as subprocesses in the share benchmark)."""

    def __init__(self, broker_pid: int, *, include_children: bool = False) -> None:
        self.broker_pid = broker_pid
        self._who = [resource.RUSAGE_SELF]
        if include_children:
            self._who.append(resource.RUSAGE_CHILDREN)

    def _broker_cpu_s(self) -> float:
        return process_cpu_s(self.broker_pid)

    def _client_cpu_s(self) -> float:
        total = 0.0
        for who in self._who:
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    def __enter__(self) -> CpuMeter:
        self.started = time.perf_counter()
        self.broker_start = self._broker_cpu_s()
        self.client_start = self._client_cpu_s()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
        self.broker_percent = 100 * (self._broker_cpu_s() - self.broker_start) / self.seconds
        self.client_percent = 100 * (self._client_cpu_s() - self.client_start) / self.seconds


def produce(
    bootstrap: str,
    topic: str,
    *,
    records: int,
    value_bytes: int,
    acks: str,
    partitions: int | None = None,
) -> None:
    """`partitions`: spread the records evenly over that many partitions (round robin)
    instead of leaving it to the producer's sticky partitioner."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "batch.num.messages": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "message.timeout.ms": 300_000,
        }
    )
    value = os.urandom(value_bytes)
    send = producer.produce
    for i in range(records):
        extra = {} if partitions is None else {"partition": i % partitions}
        try:
            send(topic, value, **extra)
        except BufferError:
            producer.poll(0.01)
            send(topic, value, **extra)
    remaining = producer.flush(300)
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered")


def fetch(bootstrap: str, topic: str, *, records: int) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.max.messages.kbytes": 262_144,
            # librdkafka pauses fetching for fetch.queue.backoff.ms (1 s) once more than
            # queued.min.messages (100k) wait in its queue: with small records that is
            # one fetch response, and the phase would measure the pauses.
            "queued.min.messages": 5_000_000,
            "fetch.queue.backoff.ms": 10,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        seen = 0
        deadline = time.monotonic() + 600
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fetch stalled at {seen} of {records}")
            batch = consumer.consume(num_messages=10_000, timeout=0.05)
            for message in batch:
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
            seen += len(batch)
    finally:
        consumer.close()


class Profiler:
    """py-spy on the broker: a flame graph and collapsed stacks of the same period."""

    def __init__(self, pid: int) -> None:
        self.svg = result_path("produce_fetch-profile.svg")
        self.raw = result_path("produce_fetch-profile.txt")
        common = [_py_spy(), "record", "--pid", str(pid), "--rate", "200", "--nonblocking"]
        self.processes = [
            subprocess.Popen([*common, "-o", str(self.svg)], stdout=subprocess.DEVNULL),
            subprocess.Popen(
                [*common, "--format", "raw", "-o", str(self.raw)], stdout=subprocess.DEVNULL
            ),
        ]
        time.sleep(1.0)  # py-spy attaches before the phase starts

    def stop(self) -> None:
        for process in self.processes:
            process.send_signal(signal.SIGINT)
        for process in self.processes:
            process.wait(60)


def _py_spy() -> str:
    """py-spy from this virtualenv, else from PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise SystemExit("py-spy not found: pip install py-spy")
    return found


def hot_spots(raw: Path, top: int = 15) -> dict[str, list[tuple[str, float]]]:
    """Self and inclusive time per function from py-spy's collapsed stacks."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        total += count
        frames = [_function_of(frame) for frame in stack.split(";")]
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    if not total:
        return {"self": [], "inclusive": []}
    return {
        "self": [(f, 100 * c / total) for f, c in own.most_common(top)],
        "inclusive": [(f, 100 * c / total) for f, c in inclusive.most_common(top)],
    }


def _function_of(frame: str) -> str:
    """'handle (shoal/server/handlers/produce.py:40)' -> 'handle (shoal/.../produce.py)'."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("/site-packages/", "/src/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


def machine() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().split()
    cpu_model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model,
        "ram_gib": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "confluent_kafka": str(confluent_kafka.__version__),
        "librdkafka": str(confluent_kafka.libversion()[0]),
        "git_commit": commit + ("+uncommitted src changes" if dirty else ""),
        "shoal_src": str(Path(shoal.__file__).resolve().parent.parent),  # the tree measured
        "load_average_1m": os.getloadavg()[0],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    sizes = [(100, args.records_100), (1024, args.records_1k)]
    phases: list[Phase] = []
    profile: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            bootstrap = broker.bootstrap
            meter = CpuMeter(broker.pid)
            for size, _ in sizes:
                for acks in ("1", "all"):
                    create_topic(bootstrap, f"bench-{size}-acks{acks}", partitions=PARTITIONS)
            profiler = Profiler(broker.pid) if args.profile else None
            for size, count in sizes:
                for acks in ("1", "all"):
                    topic = f"bench-{size}-acks{acks}"
                    with meter:
                        produce(bootstrap, topic, records=count, value_bytes=size, acks=acks)
                    phases.append(_phase(f"produce acks={acks}", size, count, meter))
                    print(_row(phases[-1]), flush=True)
            if profiler is not None:
                profiler.stop()
                profile = {
                    "svg": str(profiler.svg),
                    "raw": str(profiler.raw),
                    **hot_spots(profiler.raw),
                }
            for size, count in sizes:
                with meter:
                    fetch(bootstrap, f"bench-{size}-acksall", records=count)
                phases.append(_phase("fetch", size, count, meter))
                print(_row(phases[-1]), flush=True)
        finally:
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "partitions": PARTITIONS,
            "producer": "linger.ms=5 batch.size=1MB compression=none, no keys",
        },
        "phases": [
            {**asdict(p), "records_per_s": p.records_per_s, "mb_per_s": p.mb_per_s} for p in phases
        ],
        "profile": profile,
    }


def _phase(name: str, size: int, count: int, meter: CpuMeter) -> Phase:
    return Phase(name, size, count, meter.seconds, meter.broker_percent, meter.client_percent)


HEADER = (
    f"{'phase':<17} {'value':>6} {'records':>9} {'seconds':>8} {'records/s':>11} "
    f"{'MB/s':>7} {'broker CPU':>10} {'client CPU':>10}"
)


def _row(p: Phase) -> str:
    return (
        f"{p.name:<17} {p.value_bytes:>5}B {p.records:>9,} {p.seconds:>8.2f} "
        f"{p.records_per_s:>11,.0f} {p.mb_per_s:>7.1f} {p.broker_cpu_percent:>9.0f}% "
        f"{p.client_cpu_percent:>9.0f}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.produce_fetch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--records-100",
        type=int,
        default=1_000_000,
        help="records of 100-byte values (default 1,000,000)",
    )
    parser.add_argument(
        "--records-1k", type=int, default=300_000, help="records of 1 KiB values (default 300,000)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a tiny run (20,000 x 100 B and 5,000 x 1 KiB)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the broker with py-spy during the produce phases",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.records_100, args.records_1k = 20_000, 5_000

    print(HEADER, flush=True)
    result = run(args)
    out = save_result("produce_fetch", result)
    info = result["machine"]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), {info['ram_gib']} GiB RAM, "
        f"Python {info['python']}, librdkafka {info['librdkafka']}; load average "
        f"{info['load_average_1m_before']:.1f} before, {info['load_average_1m']:.1f} after"
    )
    if result["profile"]:
        print(f"\nbroker profile during the produce phases: {result['profile']['svg']}")
        for kind in ("self", "inclusive"):
            print(f"  top {kind} time:")
            for function, percent in result["profile"][kind]:
                print(f"    {percent:5.1f}%  {function}")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
