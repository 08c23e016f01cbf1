"""Consumer-group costs of a Shoal broker, measured with confluent-kafka on loopback.

Run from the repository root:

    .venv/bin/python -m bench.consumer_groups            # the full run (a few minutes)
    .venv/bin/python -m bench.consumer_groups --quick    # a short run, to try it
    .venv/bin/python -m bench.consumer_groups --profile  # + cProfile of the broker

Three measurements, each repeated `--runs` times (3 by default; the table shows the
median, the JSON every run), for `group.protocol=classic` and `consumer` (KIP-848):

- rebalance: members join one at a time, 1 -> `--members` (10), to a topic of 20
  partitions. For each join, the time from the new member's `subscribe()` to the
  group's assignment being stable: every member owns at least one partition and the
  members' assignments are disjoint and cover every partition. Members are
  Consumers polled by one thread each. The heartbeat is 500 ms on both protocols
  (classic: the client's heartbeat.interval.ms; consumer: the broker's
  group.consumer.heartbeat.interval.ms) and the classic first-join delay is 0, so
  the figures are the protocol's round trips, not Kafka's default 3-5 s waits.
- commit: one member of a group owning a 100-partition topic commits synchronously,
  either all 100 offsets in one OffsetCommit per call or one partition per call;
  offsets committed per second, calls per second and the broker's CPU per call.
- consume: `--records` x 100 B in 3 partitions, read from offset 0 by a Consumer that
  `assign()`s the partitions and by one that `subscribe()`s in a group (same
  settings, auto-commit off): records/s over the last four fifths of the records
  (so connecting, joining and finding the start offsets are left out of the rate:
  the group's consumer looks up committed offsets and resets each partition to the
  earliest, which assign() with explicit offsets skips), and the time to its partitions
  (assign(), or the group's on_assign callback: the join) and to its first record;
  and the broker's and the client's CPU time per 100k records over the whole run
  (less sensitive to a shared machine than wall time: they say whether either side
  works harder for a group's consumer).

Results: an aligned table on stdout and JSON in bench/results/consumer_groups.json
with machine information (the load average says how shared the machine was). With
--profile the broker runs under cProfile (SHOAL_PROFILE, see shoal.cli.serve) and the
hottest functions of the whole run are printed and saved in the JSON (the whole profile
in bench/results/consumer_groups-profile.pstats).
"""

from __future__ import annotations

import argparse
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import CpuMeter, machine, produce, result_path, save_result
from shoal.cli.serve import PROFILE_ENV

PROTOCOLS = ("classic", "consumer")
HEARTBEAT_MS = 500
BROKER_OVERRIDES = (
    "group.initial.rebalance.delay.ms=0",
    f"group.consumer.heartbeat.interval.ms={HEARTBEAT_MS}",
)
REBALANCE_PARTITIONS = 20
COMMIT_PARTITIONS = 100
CONSUME_PARTITIONS = 3
VALUE_BYTES = 100
STEP_TIMEOUT_S = 120.0


def consumer_config(bootstrap: str, group: str, protocol: str) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "classic":
        config["heartbeat.interval.ms"] = HEARTBEAT_MS
        config["session.timeout.ms"] = 10_000
    return config


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = STEP_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.002)


# ---- rebalance


class Member:
    """A subscribed Consumer polled by its own thread; `owned` is its assignment as
    the rebalance callbacks report it."""

    def __init__(self, config: dict[str, Any], topic: str) -> None:
        self.consumer = Consumer(config)
        self.owned: frozenset[int] = frozenset()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.topic = topic
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.owned = self.owned | {p.partition for p in partitions}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.owned = self.owned - {p.partition for p in partitions}

    def subscribe(self) -> None:
        self.consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.01)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()


def stable(members: list[Member], partitions: int) -> bool:
    owned = [m.owned for m in members]
    if any(not o for o in owned):
        return False
    return sum(len(o) for o in owned) == partitions and len(frozenset().union(*owned)) == (
        partitions
    )


def rebalance_run(bootstrap: str, protocol: str, run: int, members_max: int) -> list[float]:
    """Seconds from each join's subscribe() to a stable assignment, 1..members_max."""
    topic = f"bench-rebalance-{protocol}-{run}"
    create_topic(bootstrap, topic, partitions=REBALANCE_PARTITIONS)
    config = consumer_config(bootstrap, f"bench-rebalance-{protocol}-{run}", protocol)
    members: list[Member] = []
    seconds = []
    try:
        for _ in range(members_max):
            member = Member(config, topic)
            started = time.perf_counter()
            member.subscribe()
            members.append(member)
            _wait(lambda: stable(members, REBALANCE_PARTITIONS), f"{len(members)} members")
            seconds.append(time.perf_counter() - started)
    finally:
        for member in members:
            member.close()
    return seconds


# ---- commit


def commit_run(
    bootstrap: str, broker_pid: int, protocol: str, run: int, seconds: float
) -> dict[str, float]:
    """Offsets committed per second, all partitions per call and one per call, and
    the broker's CPU time per call."""
    topic = f"bench-commit-{protocol}-{run}"
    create_topic(bootstrap, topic, partitions=COMMIT_PARTITIONS)
    consumer = Consumer(consumer_config(bootstrap, f"bench-commit-{protocol}-{run}", protocol))
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while len(consumer.assignment()) < COMMIT_PARTITIONS:
            consumer.poll(0.05)
            if time.monotonic() > deadline:
                raise RuntimeError(f"commit member owns {len(consumer.assignment())} partitions")
        out = {}
        for mode in ("all", "single"):
            calls = offsets = 0
            meter = CpuMeter(broker_pid).__enter__()
            started = time.perf_counter()
            while time.perf_counter() - started < seconds:
                calls += 1
                if mode == "all":
                    batch = [TopicPartition(topic, p, calls) for p in range(COMMIT_PARTITIONS)]
                else:
                    batch = [TopicPartition(topic, calls % COMMIT_PARTITIONS, calls)]
                for result in consumer.commit(offsets=batch, asynchronous=False) or []:
                    if result.error is not None:
                        raise RuntimeError(f"commit failed: {result.error}")
                offsets += len(batch)
            elapsed = time.perf_counter() - started
            meter.__exit__()
            broker_cpu_us = 1e4 * meter.broker_percent * meter.seconds
            out[f"{mode}_broker_cpu_us_per_call"] = broker_cpu_us / calls
            out[f"{mode}_offsets_per_s"] = offsets / elapsed
            out[f"{mode}_calls_per_s"] = calls / elapsed
        return out
    finally:
        consumer.close()


# ---- consume


def consume_run(
    bootstrap: str, topic: str, records: int, *, protocol: str | None, group: str
) -> dict[str, float]:
    """Read `records` from offset 0: assign() when `protocol` is None, else subscribe()
    in a fresh group of that protocol."""
    config = consumer_config(bootstrap, group, protocol or "classic")
    # librdkafka's fetch sizes (1 MB a partition): ~55 Fetch requests a run rather
    # than a handful of 10 MB ones, so the broker's fetch path is exercised; a queue
    # large enough that librdkafka does not pause fetching (see bench.produce_fetch).
    config.update({"queued.min.messages": 5_000_000, "fetch.queue.backoff.ms": 10})
    consumer = Consumer(config)
    assigned: list[float] = []

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.append(time.perf_counter())

    try:
        started = time.perf_counter()
        if protocol is None:
            consumer.assign([TopicPartition(topic, p, 0) for p in range(CONSUME_PARTITIONS)])
            assigned.append(started)
        else:
            consumer.subscribe([topic], on_assign=on_assign)
        seen = fifth_seen = 0
        first = fifth = 0.0
        deadline = time.monotonic() + 600
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consume stalled at {seen} of {records}")
            batch = consumer.consume(num_messages=10_000, timeout=0.05)
            for message in batch:
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
            if batch and not seen:
                first = time.perf_counter()
            if seen < records // 5 <= seen + len(batch):
                fifth, fifth_seen = time.perf_counter(), seen + len(batch)
            seen += len(batch)
        last = time.perf_counter()
        return {
            "assigned_s": assigned[0] - started,
            "first_record_s": first - started,
            "records_per_s": (records - fifth_seen) / (last - fifth),
            "total_s": last - started,
        }
    finally:
        consumer.close()


# ---- the run


def _median(values: list[float]) -> float:
    return statistics.median(values)


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    result: dict[str, Any] = {"timestamp": stamp}
    profile_path = result_path("consumer_groups-profile.pstats")
    if args.profile:  # the broker subprocess inherits the environment
        os.environ[PROFILE_ENV] = str(profile_path)
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", overrides=BROKER_OVERRIDES).start()
        os.environ.pop(PROFILE_ENV, None)
        try:
            bootstrap = broker.bootstrap
            if "rebalance" in args.only:
                result["rebalance"] = _rebalance(bootstrap, args)
            if "commit" in args.only:
                result["commit"] = _commit(bootstrap, broker.pid, args)
            if "consume" in args.only:
                result["consume"] = _consume(bootstrap, broker.pid, args)
        finally:
            if args.profile:
                broker.stop()
            else:
                broker.kill()
    if args.profile and profile_path.exists():
        result["profile"] = _profile_top(profile_path)
    result["machine"] = {**machine(), "load_average_1m_before": load_before}
    result["settings"] = {
        "runs": args.runs,
        "broker_overrides": list(BROKER_OVERRIDES),
        "classic_heartbeat_interval_ms": HEARTBEAT_MS,
        "rebalance_partitions": REBALANCE_PARTITIONS,
        "commit_partitions": COMMIT_PARTITIONS,
        "consume": f"{args.records} x {VALUE_BYTES} B in {CONSUME_PARTITIONS} partitions",
    }
    return result


def _rebalance(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"\nrebalance: seconds from subscribe() to a stable assignment (median of {args.runs})")
    print(f"{'members':>7} " + " ".join(f"{p:>9}" for p in args.protocols), flush=True)
    runs = {
        p: [rebalance_run(bootstrap, p, r, args.members) for r in range(args.runs)]
        for p in args.protocols
    }
    medians = {
        p: [_median([run[i] for run in done]) for i in range(args.members)]
        for p, done in runs.items()
    }
    for i in range(args.members):
        print(f"{i + 1:>7} " + " ".join(f"{medians[p][i]:>9.3f}" for p in args.protocols))
    return {"runs_s": runs, "median_s": medians}


def _commit(bootstrap: str, broker_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    print(f"\ncommit: {COMMIT_PARTITIONS} partitions, synchronous commits, median of {args.runs}")
    print(
        f"{'protocol':<9} {'all/call offsets/s':>18} {'calls/s':>8} {'broker us/call':>14} "
        f"{'one/call offsets/s':>18} {'broker us/call':>14}"
    )
    out: dict[str, Any] = {}
    for protocol in args.protocols:
        runs = [
            commit_run(bootstrap, broker_pid, protocol, r, args.commit_seconds)
            for r in range(args.runs)
        ]
        median = {k: _median([r[k] for r in runs]) for k in runs[0]}
        out[protocol] = {"runs": runs, "median": median}
        print(
            f"{protocol:<9} {median['all_offsets_per_s']:>18,.0f} "
            f"{median['all_calls_per_s']:>8,.0f} {median['all_broker_cpu_us_per_call']:>14,.0f} "
            f"{median['single_offsets_per_s']:>18,.0f} "
            f"{median['single_broker_cpu_us_per_call']:>14,.0f}",
            flush=True,
        )
    return out


def _consume(bootstrap: str, broker_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    topic = "bench-consume"
    create_topic(bootstrap, topic, partitions=CONSUME_PARTITIONS)
    produce(bootstrap, topic, records=args.records, value_bytes=VALUE_BYTES, acks="1")
    print(f"\nconsume: {args.records:,} x {VALUE_BYTES} B, median of {args.runs}")
    print(
        f"{'mode':<20} {'records/s':>11} {'assigned after s':>16} {'first record s':>14} "
        f"{'vs assign()':>11} {'broker CPU ms/100k':>18} {'client CPU ms/100k':>18}"
    )
    cases: list[tuple[str, str | None]] = [("assign()", None)]
    cases += [(f"subscribe() {p}", p) for p in args.protocols]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in cases}
    for r in range(args.runs):  # interleaved and rotated, so load and order hit all alike
        for name, protocol in cases[r % len(cases) :] + cases[: r % len(cases)]:
            group = f"bench-consume-{r}-{protocol or 'assign'}"
            meter = CpuMeter(broker_pid)
            with meter:
                run = consume_run(bootstrap, topic, args.records, protocol=protocol, group=group)
            broker_cpu_s = meter.broker_percent * meter.seconds / 100
            client_cpu_s = meter.client_percent * meter.seconds / 100
            run["broker_cpu_ms_per_100k"] = 1e8 * broker_cpu_s / args.records
            run["client_cpu_ms_per_100k"] = 1e8 * client_cpu_s / args.records
            runs[name].append(run)
    medians = {
        name: {k: _median([x[k] for x in runs[name]]) for k in runs[name][0]} for name in runs
    }
    base = medians["assign()"]["records_per_s"]
    for name, median in medians.items():
        print(
            f"{name:<20} {median['records_per_s']:>11,.0f} {median['assigned_s']:>16.3f} "
            f"{median['first_record_s']:>14.3f} "
            f"{100 * median['records_per_s'] / base:>10.0f}% "
            f"{median['broker_cpu_ms_per_100k']:>18.1f} "
            f"{median['client_cpu_ms_per_100k']:>18.1f}",
            flush=True,
        )
    return {"runs": runs, "median": medians}


def _profile_top(path: Path, top: int = 20) -> list[tuple[str, float, float]]:
    stats = pstats.Stats(str(path))
    rows = []
    for (file, line, name), (_, _, self_s, cumulative_s, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((f"{Path(file).name}:{line}:{name}", self_s, cumulative_s))
    rows.sort(key=lambda r: r[1], reverse=True)
    return rows[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.consumer_groups",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=3, help="repetitions of each case (3)")
    parser.add_argument("--members", type=int, default=10, help="members to grow to (10)")
    parser.add_argument(
        "--commit-seconds", type=float, default=3.0, help="seconds per commit mode (3)"
    )
    parser.add_argument("--records", type=int, default=500_000, help="records to consume (500,000)")
    parser.add_argument(
        "--only",
        default="rebalance,commit,consume",
        help="comma-separated measurements to run (rebalance,commit,consume)",
    )
    parser.add_argument(
        "--protocols", default=",".join(PROTOCOLS), help="group.protocol values (both)"
    )
    parser.add_argument("--quick", action="store_true", help="1 run, 4 members, 50,000 records")
    parser.add_argument("--profile", action="store_true", help="cProfile the broker")
    args = parser.parse_args(argv)
    args.only = set(args.only.split(","))
    args.protocols = tuple(args.protocols.split(","))
    if args.quick:
        args.runs, args.members, args.commit_seconds, args.records = 1, 4, 1.0, 50_000
    result = run(args)
    out = save_result("consumer_groups", result)
    info = result["machine"]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), {info['ram_gib']} GiB RAM, "
        f"Python {info['python']}, librdkafka {info['librdkafka']}; load average "
        f"{info['load_average_1m_before']:.1f} before, {info['load_average_1m']:.1f} after "
        "(a shared machine makes every figure noisy)"
    )
    for name, self_s, cumulative_s in result.get("profile", []):
        print(f"  {self_s:8.3f}s self {cumulative_s:8.3f}s cumulative  {name}")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
