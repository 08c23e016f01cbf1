"""Shoal side by side with Apache Kafka 4.2 and Redis Streams: the same workloads, one run.

Run from the repository root (on a quiet machine: other load skews every figure):

    .venv/bin/python -m bench.side_by_side                 # 3 reps, ~11 min on 2 quiet cores
    .venv/bin/python -m bench.side_by_side --quick         # tiny sizes, 1 rep, ~2-4 min
    .venv/bin/python -m bench.side_by_side --reps 5 --only kafka shoal
    .venv/bin/python -m bench.side_by_side --only shoal --old-src /tmp/old/src  # before/after
    .venv/bin/python -m bench.side_by_side --only kafka shoal \
        --skip paced_3000 paced_10000 first_record_p1 first_record_p4 recovery  # throughput

The brokers (bench/peers/runners.py, bench/peers/redis.py):

- kafka: Apache Kafka 4.2 (the reference broker of tests/support/kafka_reference.py)
  as a user runs it: single-node KRaft, only the settings a single node needs, Kafka's
  defaults otherwise, the JVM of kafka-server-start.sh / kafka-run-class.sh
  (-Xmx1G -Xms1G, G1 with its MaxGCPauseMillis=20 options).
- shoal: `shoal serve` with default settings but one: group.initial.rebalance.delay.ms
  is 0 as Kafka's own config/server.properties (and so the kafka runner) sets it; with
  Shoal's default (3 s, Kafka's code default) every consumer-group join would wait 3 s
  more than Kafka's (`SHOAL_OVERRIDES`).
- redis: Redis from Debian's packages, AOF fsynced every second (bench/peers/redis.py).
- shoal-old (with `--old-src DIR`): `shoal serve` of another tree, DIR (its src
  directory) first on the server's PYTHONPATH, with the same settings: a before/after
  pair in one run (`git worktree add --detach /tmp/old REV`, then
  `--old-src /tmp/old/src`; remove the worktree after). It runs just before shoal in
  each rep; the table gains its column and the ratio shoal/shoal-old.

Order: reps are interleaved (rep 1: kafka, shoal, redis; rep 2: kafka, shoal, redis;
...), and only one broker runs at a time. For each rep and broker (a "session"):

1. start on a fresh temporary data directory: start-up = seconds from spawning the
   process to its first answered request (ApiVersions; Redis: PING).
2. idle RSS: one topic (stream) made, `SETTLE_S` seconds of nothing, then VmRSS
   (bench/peers/ops.py).
3. warm-up, untimed: a few hundred records produced, consumed by a consumer group and
   drained by a share group, so the internal topics exist (__consumer_offsets,
   __share_group_state on Kafka) as on any broker that has served groups before;
   otherwise the first group of a fresh Kafka waits seconds for them and the
   throughput figures would measure that.
4. the workloads (bench/peers/kafka_protocol.py; Redis: bench/peers/redis_streams.py,
   whose docstrings say exactly what each does), each on a fresh topic or group:
   produce `records` x 1 KiB, produce `small_records` x 100 B (acks=all, idempotent);
   consume_group of the 1 KiB topic (one consumer, new group), and again without
   librdkafka's fetch-queue backoff (kafka_protocol.NO_BACKOFF; Kafka protocol
   only: "consume_group_nobackoff"); share_drain of the
   1 KiB topic (four ShareConsumers, explicit ACCEPT of each record; peak RSS is
   sampled during it: "RSS under load"); end_to_end of `e2e_records` x 1 KiB (producer
   and four share consumers at once, latency from a send stamp in the value).
   Topics have `--partitions` partitions (default 1). `--batch-records N` sets the
   Kafka-protocol producers' batch.num.messages: log batches of at most N records
   (many small batches for the drain and end to end).
5. paced latency at 3k and 10k records/s (bench/peers/paced.py; Redis:
   redis_streams.paced): p50, p99, p99.9, max of send-to-receive.
6. first record of a new share group after its members join, on 1 and 4 partitions:
   the time until every member has had one
   (bench/peers/first_record.py; Kafka protocol only).
7. stop (SIGTERM); then recovery (ops.py, on a broker of its own): fill `recovery_mib`
   MiB of log, kill -9, start again: seconds to the first answer and to the last
   acknowledged record readable.

For each workload of step 4 the broker's CPU seconds over it (from /proc, its worker
processes included) and the clients' (user + system of their processes) are divided
by its records: the table's "CPU per record" rows, in microseconds. On a 2-core
machine the clients compete with the broker, so these move far less with the
machine's load than the rates do. /proc counts CPU in clock ticks (10 ms), so at
`--quick` sizes a broker's figure moves in steps of 10 ms / records (2 us at 5,000).

A part whose module is missing or that fails is "not run" (the error is kept in the
JSON), never the end of the run; `--skip` leaves parts out (`PARTS`). The table
gives, per metric, the median over the reps of each broker, the ratios shoal/kafka
and shoal/redis, and the goal:
share drain and end-to-end >= 1.0x Kafka's rate; consume_group >= 0.9x; p99 at 3k and
10k <= Kafka's; idle RSS <= 0.25x; start-up <= 0.1x; every member's first record <= 100 ms;
share drain >= 5x Redis's. The machine (cores, RAM, CPU model, load average before
and after) and versions are printed and saved; results go to
bench/results/side_by_side.json (every session's raw results too).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.peers import kafka_protocol
from bench.peers.procs import unique_name
from bench.peers.runners import KafkaRunner, Runner, ShoalRunner
from bench.produce_fetch import machine, save_result

BROKERS = ("kafka", "shoal", "redis")
OLD = "shoal-old"
"""The Shoal of another tree (`--old-src`): a before/after pair in the same run."""
COLUMNS = ("kafka", OLD, "shoal", "redis")
"""The brokers' columns in the table, in this order, those that ran (BROKERS always)."""
RATIOS = (("shoal", "kafka"), ("shoal", "redis"), ("shoal", OLD))
SHOAL_OVERRIDES = ("group.initial.rebalance.delay.ms=0",)
"""The one setting Shoal runs with that is not its default: Kafka's shipped
config/server.properties sets it, and the kafka runner does too."""
SETTLE_S = 5.0
WARMUP_RECORDS = 200
MIB = 1 << 20


@dataclass(frozen=True)
class Sizes:
    records: int  # produce 1 KiB, consume_group, share_drain
    small_records: int  # produce 100 B
    e2e_records: int
    paced_seconds: float  # measured records per paced rate = rate x this
    recovery_mib: int
    settle_s: float
    first_record_groups: int | None  # new groups per partition count (None: its default)
    batch_records: int | None = None  # log batches of at most this many records (Kafka protocol)


FULL = Sizes(
    records=200_000,
    small_records=500_000,
    e2e_records=100_000,
    paced_seconds=5.0,
    recovery_mib=1024,
    settle_s=SETTLE_S,
    first_record_groups=None,
)
QUICK = Sizes(
    records=5_000,
    small_records=10_000,
    e2e_records=5_000,
    paced_seconds=0.5,
    recovery_mib=32,
    settle_s=2.0,
    first_record_groups=1,
)
PACED_RATES = (3_000, 10_000)
CPU_PER_RECORD = (
    ("produce_1k", "produce 1 KiB"),
    ("produce_100", "produce 100 B"),
    ("consume_group", "consume_group"),
    ("consume_group_nobackoff", "consume_group, no backoff"),
    ("share_drain", "share drain"),
    ("end_to_end", "end to end"),
)
"""The workloads whose broker and client CPU seconds per record are rows of the table
(the figure that moves least with the machine's load: on 2 cores the clients compete
with the broker, and a rate measures the scheduler as much as the broker)."""
PARTS = (
    "idle_rss",
    "warm_up",
    *(key for key, _ in CPU_PER_RECORD),
    *(f"paced_{rate}" for rate in PACED_RATES),
    "first_record_p1",
    "first_record_p4",
    "recovery",
)
"""The parts `--skip` can leave out (consume_group and share_drain read produce_1k's
topic; start-up is always measured)."""


def _optional(name: str) -> ModuleType | None:
    """bench.peers.<name>, or None when it is not there (its rows are "not run")."""
    try:
        return importlib.import_module(f"bench.peers.{name}")
    except ImportError as exc:
        print(f"bench.peers.{name} not available ({exc}): its rows are not run", file=sys.stderr)
        return None


# --- metrics and goals (pure) --------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str  # how values print: "rate", "ms", "s", "MiB"
    goal: str = ""  # e.g. "shoal/kafka >= 1.0", "shoal/redis >= 5", "shoal <= 100"


METRICS = (
    Metric("startup_s", "start-up to first answer", "s", "shoal/kafka <= 0.1"),
    Metric("idle_rss_mib", "RSS idle", "MiB", "shoal/kafka <= 0.25"),
    Metric("load_rss_mib", "RSS peak under load (share drain)", "MiB"),
    Metric("produce_1k_rps", "produce 1 KiB acks=all idempotent", "rate"),
    Metric("produce_100_rps", "produce 100 B acks=all idempotent", "rate"),
    Metric("consume_group_rps", "consume_group (1 consumer)", "rate", "shoal/kafka >= 0.9"),
    Metric("consume_group_nobackoff_rps", "consume_group, no librdkafka fetch backoff", "rate"),
    Metric(
        "share_drain_rps",
        "share drain (4 consumers, explicit ack)",
        "rate",
        "shoal/kafka >= 1.0; shoal/redis >= 5",
    ),
    Metric("e2e_rps", "end to end (1 producer, 4 share consumers)", "rate", "shoal/kafka >= 1.0"),
    Metric("e2e_p50_ms", "end to end p50", "ms"),
    Metric("e2e_p99_ms", "end to end p99", "ms"),
    *(
        metric
        for rate in PACED_RATES
        for metric in (
            Metric(f"paced_{rate}_p50_ms", f"paced {rate // 1000}k/s p50", "ms"),
            Metric(
                f"paced_{rate}_p99_ms", f"paced {rate // 1000}k/s p99", "ms", "shoal/kafka <= 1"
            ),
            Metric(f"paced_{rate}_p999_ms", f"paced {rate // 1000}k/s p99.9", "ms"),
            Metric(f"paced_{rate}_max_ms", f"paced {rate // 1000}k/s max", "ms"),
        )
    ),
    Metric("first_record_p1_ms", "first record, every member, 1 partition", "ms", "shoal <= 100"),
    Metric("first_record_p4_ms", "first record, every member, 4 partitions", "ms", "shoal <= 100"),
    Metric("recovery_answer_s", "recovery: kill -9 to first answer", "s"),
    Metric("recovery_readable_s", "recovery: kill -9 to last record readable", "s"),
    *(
        Metric(f"{key}_{side}_us", f"{label}: {side} CPU per record", "us")
        for key, label in CPU_PER_RECORD
        for side in ("broker", "client")
    ),
)


def median_of(values: Sequence[float | None]) -> float | None:
    """The median of the values that were measured (None: not run or failed)."""
    present = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(present) if present else None


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def goal_met(goal: str, medians: dict[str, float | None]) -> bool | None:
    """Whether every clause of `goal` ("shoal/kafka >= 1.0; shoal <= 100") holds for
    the brokers' medians; None when a value it needs is missing (or no goal)."""
    if not goal:
        return None
    verdicts = []
    for clause in goal.split(";"):
        left, op, bound_text = clause.split()
        bound = float(bound_text)
        if "/" in left:
            top, bottom = left.split("/")
            value = ratio(medians.get(top), medians.get(bottom))
        else:
            value = medians.get(left)
        if value is None:
            return None
        verdicts.append(value >= bound if op == ">=" else value <= bound)
    return all(verdicts)


def columns(sessions: list[dict[str, Any]]) -> list[str]:
    """The brokers of the table: BROKERS always, the others of COLUMNS if they ran."""
    ran = {s["broker"] for s in sessions}
    return [b for b in COLUMNS if b in BROKERS or b in ran]


def summarise(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per metric: each broker's median over the reps, the ratios, the goal."""
    brokers = columns(sessions)
    rows = []
    for metric in METRICS:
        medians = {
            broker: median_of(
                [s["metrics"].get(metric.key) for s in sessions if s["broker"] == broker]
            )
            for broker in brokers
        }
        rows.append(
            {
                "key": metric.key,
                "metric": metric.label,
                "unit": metric.unit,
                **medians,
                **{
                    f"{top}/{bottom}": ratio(medians[top], medians[bottom])
                    for top, bottom in RATIOS
                    if bottom in medians
                },
                "goal": metric.goal,
                "met": goal_met(metric.goal, medians),
            }
        )
    return rows


def _format(value: float | None, unit: str) -> str:
    if value is None:
        return "not run"
    if unit == "rate":
        return f"{value:,.0f}/s"
    if unit == "ms":
        return f"{value:,.1f} ms"
    if unit == "s":
        return f"{value:,.2f} s"
    if unit == "us":
        return f"{value:,.2f} us"
    return f"{value:,.0f} {unit}"


def table(rows: list[dict[str, Any]]) -> str:
    """The aligned table: metric | kafka | (shoal-old) | shoal | redis | shoal/kafka |
    shoal/redis | (shoal/shoal-old) | goal | met?"""
    brokers = [b for b in COLUMNS if b in rows[0]]
    ratios = [f"{top}/{bottom}" for top, bottom in RATIOS if f"{top}/{bottom}" in rows[0]]
    header = ["metric", *brokers, *ratios, "goal", "met?"]
    lines = [header]
    for row in rows:
        lines.append(
            [
                f"{row['metric']} ({'records/s' if row['unit'] == 'rate' else row['unit']})",
                *(_format(row[b], row["unit"]) for b in brokers),
                *("-" if row[r] is None else f"{row[r]:.2f}x" for r in ratios),
                row["goal"] or "-",
                {True: "yes", False: "NO", None: "-" if not row["goal"] else "?"}[row["met"]],
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        cells = [
            cell.ljust(w) if i in (0, len(header) - 2) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


# --- one session ---------------------------------------------------------------------


class Session:
    """One broker for one rep: runs each part, keeping its result, its metrics and
    its error (a failed part is reported, the next part still runs)."""

    def __init__(self, broker: str, rep: int, skip: Sequence[str] = ()) -> None:
        self.broker = broker
        self.rep = rep
        self.skip = frozenset(skip)
        self.metrics: dict[str, float] = {}
        self.raw: dict[str, Any] = {}
        self.errors: dict[str, str] = {}

    def part(self, name: str, fn: Callable[[], Any]) -> Any:
        """`fn()`, or None if it failed or `name` is skipped."""
        if name in self.skip:
            return None
        began = time.monotonic()
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - reported in the table and the JSON
            self.errors[name] = f"{type(exc).__name__}: {exc}"
            print(
                f"  {self.broker} rep {self.rep}: {name} failed: {exc}\n"
                + "".join(traceback.format_exc(limit=-3)),
                file=sys.stderr,
            )
            return None
        self.raw[name] = result
        print(
            f"  {self.broker} rep {self.rep}: {name} ({time.monotonic() - began:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        return result

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "rep": self.rep,
            "metrics": self.metrics,
            "errors": self.errors,
            "raw": self.raw,
        }


def _metered(runner: Runner, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`fn()`'s result with the broker's CPU seconds over it."""
    before = runner.cpu_seconds()
    result = fn()
    return {**result, "broker_cpu_s": runner.cpu_seconds() - before}


def workload_metrics(m: dict[str, float], key: str, result: dict[str, Any] | None) -> None:
    """A workload's records/s, and its broker and client CPU per record (us), into the
    session's metrics as `{key}_rps` (end_to_end: `e2e_rps`), `{key}_broker_us` and
    `{key}_client_us`."""
    if result is None:
        return
    m[f"{'e2e' if key == 'end_to_end' else key}_rps"] = result["records_per_s"]
    records = result["records"]
    for side in ("broker", "client"):
        if records and result.get(f"{side}_cpu_s") is not None:
            m[f"{key}_{side}_us"] = 1e6 * result[f"{side}_cpu_s"] / records


def _first_record_ms(result: dict[str, Any]) -> float | None:
    """The time until EVERY member has had a record (the stricter figure: the first
    record of any member hides a member left waiting a heartbeat interval)."""
    for key in ("all_members_ms", "ms", "first_record_ms", "median_ms"):
        if isinstance(result.get(key), int | float):
            return float(result[key])
    return None


class Peers:
    """The modules of the parts other than the Kafka-protocol workloads (any may be
    missing) and how to make each broker's runner."""

    def __init__(self, old_src: Path | None = None) -> None:
        self.old_src = old_src
        # Any: modules of other parts, their interfaces fixed by agreement, not by types
        self.ops: Any = _optional("ops")
        self.paced: Any = _optional("paced")
        self.first_record: Any = _optional("first_record")
        self.redis: Any = _optional("redis")
        self.redis_streams: Any = _optional("redis_streams")

    def make_runner(self, broker: str) -> Callable[[Path], Runner] | None:
        if broker == "kafka":
            return KafkaRunner
        if broker == "shoal":
            return lambda data_dir: ShoalRunner(data_dir, overrides=SHOAL_OVERRIDES)
        if broker == OLD:
            old_src = self.old_src
            assert old_src is not None, "shoal-old runs with --old-src"
            return lambda data_dir: ShoalRunner(
                data_dir, overrides=SHOAL_OVERRIDES, src=old_src, name=OLD
            )
        if self.redis is None or self.redis_streams is None:
            return None
        runner: Callable[[Path], Runner] = self.redis.RedisRunner
        return runner

    def workloads(self, broker: str) -> Any:
        return self.redis_streams if broker == "redis" else kafka_protocol


def run_session(
    broker: str,
    rep: int,
    sizes: Sizes,
    partitions: int,
    peers: Peers,
    scratch: Path,
    skip: Sequence[str] = (),
) -> Session:
    """One broker for one rep (the module docstring's steps 1-7)."""
    session = Session(broker, rep, skip)
    make_runner = peers.make_runner(broker)
    if make_runner is None:
        session.errors["all"] = "its modules are missing"
        return session
    data_dir = scratch / f"{broker}-{rep}" / "data"
    runner = make_runner(data_dir)
    started = session.part("startup", runner.start)
    if started is None:
        return session
    session.metrics["startup_s"] = started
    try:
        _measure(session, runner, sizes, partitions, peers)
    finally:
        session.part("stop", runner.stop)
        shutil.rmtree(data_dir.parent, ignore_errors=True)
    ops = peers.ops
    if ops is not None and "recovery" not in session.skip:
        root = scratch / "recovery"
        result = session.part(
            "recovery", partial(ops.recovery, make_runner, sizes.recovery_mib * MIB, root=root)
        )
        shutil.rmtree(root, ignore_errors=True)
        if result is not None:
            session.metrics["recovery_answer_s"] = result["answered_s"]
            if result.get("readable_s") is not None:
                session.metrics["recovery_readable_s"] = result["readable_s"]
    return session


def _measure(session: Session, runner: Runner, sizes: Sizes, partitions: int, peers: Peers) -> None:
    """Steps 2-6 on a started broker."""
    m = session.metrics
    redis = session.broker == "redis"
    wl = peers.workloads(session.broker)
    address = runner.address
    kwargs: dict[str, Any] = {} if redis else {"partitions": partitions}
    if sizes.batch_records is not None and not redis:
        kwargs["settings"] = {"batch.num.messages": sizes.batch_records}
    ops = peers.ops
    if ops is not None:
        idle = session.part("idle_rss", partial(ops.idle_rss, runner, settle_s=sizes.settle_s))
        if idle is not None:
            m["idle_rss_mib"] = idle["rss_bytes"] / MIB

    def warm_up() -> dict[str, Any]:
        topic = unique_name("warmup")
        wl.produce(address, topic, WARMUP_RECORDS, 100, **kwargs)
        wl.consume_group(address, topic, WARMUP_RECORDS)
        return dict(wl.share_drain(address, topic, WARMUP_RECORDS))

    session.part("warm_up", warm_up)
    big, size, n = unique_name("bench-1k"), 1024, sizes.records
    for key, topic, count, width in (
        ("produce_1k", big, n, size),
        ("produce_100", unique_name("bench-100"), sizes.small_records, 100),
    ):
        work = partial(wl.produce, address, topic, count, width, **kwargs)
        workload_metrics(m, key, session.part(key, partial(_metered, runner, work)))
    work = partial(wl.consume_group, address, big, n)
    key = "consume_group"
    workload_metrics(m, key, session.part(key, partial(_metered, runner, work)))
    if not redis:
        work = partial(wl.consume_group, address, big, n, settings=kafka_protocol.NO_BACKOFF)
        key = "consume_group_nobackoff"
        workload_metrics(m, key, session.part(key, partial(_metered, runner, work)))
    drain = partial(_metered, runner, partial(wl.share_drain, address, big, n))
    if ops is not None:
        loaded = session.part("share_drain", partial(ops.rss_under_load, runner, drain))
        if loaded is not None:
            m["load_rss_mib"] = loaded["peak_rss_bytes"] / MIB
            workload_metrics(m, "share_drain", loaded["result"])
    else:
        workload_metrics(m, "share_drain", session.part("share_drain", drain))
    work = partial(
        wl.end_to_end, address, unique_name("bench-e2e"), sizes.e2e_records, size, **kwargs
    )
    result = session.part("end_to_end", partial(_metered, runner, work))
    workload_metrics(m, "end_to_end", result)
    if result is not None:
        m["e2e_p50_ms"] = result["p50_ms"]
        m["e2e_p99_ms"] = result["p99_ms"]
    paced = wl if redis else peers.paced
    if paced is not None:
        for rate in PACED_RATES:
            count = max(100, int(rate * sizes.paced_seconds))
            work = partial(paced.paced, address, rate=rate, n=count, size=size)
            result = session.part(f"paced_{rate}", partial(_metered, runner, work))
            if result is not None:
                for q in ("p50", "p99", "p999", "max"):
                    m[f"paced_{rate}_{q}_ms"] = result[f"{q}_ms"]
    first_record = None if redis else peers.first_record
    if first_record is not None:
        groups = {}
        if sizes.first_record_groups is not None and "groups" in _parameters(first_record):
            groups = {"groups": sizes.first_record_groups}
        for p in (1, 4):
            result = session.part(
                f"first_record_p{p}",
                partial(first_record.first_record, address, partitions=p, **groups),
            )
            ms = _first_record_ms(result) if result is not None else None
            if ms is not None:
                m[f"first_record_p{p}_ms"] = ms


def _parameters(module: Any) -> Any:
    return inspect.signature(module.first_record).parameters


# --- the run -------------------------------------------------------------------------


def versions(peers: Peers, host: dict[str, Any]) -> dict[str, str]:
    """Kafka's and Redis's versions, and the clients' and Python's from `host` (machine())."""
    from tests.support.kafka_reference import KAFKA_VERSION

    found = {
        "kafka": KAFKA_VERSION,
        **{key: str(host[key]) for key in ("confluent_kafka", "librdkafka", "python")},
    }
    if peers.redis is not None:
        found["redis"] = str(getattr(peers.redis, "REDIS_VERSION", "?"))
    return found


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = QUICK if args.quick else FULL
    if args.records:
        sizes = Sizes(**{**sizes.__dict__, "records": args.records})
    if args.recovery_mib is not None:
        sizes = Sizes(**{**sizes.__dict__, "recovery_mib": args.recovery_mib})
    if args.batch_records is not None:
        sizes = Sizes(**{**sizes.__dict__, "batch_records": args.batch_records})
    peers = Peers(args.old_src)
    brokers = list(args.only)
    if args.old_src is not None:  # just before this tree's Shoal
        brokers.insert(brokers.index("shoal") if "shoal" in brokers else len(brokers), OLD)
    load_before = os.getloadavg()
    began = time.monotonic()
    sessions: list[Session] = []
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        for rep in range(1, args.reps + 1):
            for broker in brokers:
                print(f"rep {rep}: {broker}", file=sys.stderr, flush=True)
                sessions.append(
                    run_session(broker, rep, sizes, args.partitions, peers, Path(tmp), args.skip)
                )
    load_after = os.getloadavg()
    dicts = [s.as_dict() for s in sessions]
    host = machine()
    return {
        "machine": {**host, "load_average_before": load_before, "load_average_after": load_after},
        "versions": versions(peers, host),
        "settings": {
            "reps": args.reps,
            "brokers": brokers,
            "old_src": None if args.old_src is None else str(args.old_src),
            "old_git_commit": None if args.old_src is None else _commit_of(args.old_src),
            "skipped": list(args.skip),
            "quick": args.quick,
            "partitions": args.partitions,
            "sizes": sizes.__dict__,
            "paced_rates": list(PACED_RATES),
            "shoal_overrides": list(SHOAL_OVERRIDES),
        },
        "seconds": time.monotonic() - began,
        "rows": summarise(dicts),
        "sessions": dicts,
    }


def _commit_of(src: Path) -> str:
    """The commit of the tree `src` is in (the Shoal that ran as shoal-old)."""
    found = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or "?"


def report(result: dict[str, Any]) -> str:
    info = result["machine"]
    ver = result["versions"]
    before = " ".join(f"{v:.1f}" for v in info["load_average_before"])
    after = " ".join(f"{v:.1f}" for v in info["load_average_after"])
    lines = [
        table(result["rows"]),
        "",
        f"medians of {result['settings']['reps']} rep(s); {result['seconds']:.0f} s in all",
        f"{info['cores']} cores ({info['cpu']}), {info['ram_gib']} GiB RAM; "
        f"load average {before} before, {after} after",
        "Kafka {kafka}, Redis {redis}, confluent-kafka {confluent_kafka} "
        "(librdkafka {librdkafka}), Python {python}; Shoal {shoal}".format(
            **{"redis": "-", **ver}, shoal=info["git_commit"]
        ),
    ]
    settings = result["settings"]
    if settings.get("old_src"):
        lines.append(f"shoal-old: {settings['old_src']} at {settings['old_git_commit']}")
    failed = [
        f"  {s['broker']} rep {s['rep']}: {part}: {error}"
        for s in result["sessions"]
        for part, error in s["errors"].items()
    ]
    if failed:
        lines += ["", "not run or failed:", *failed]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.side_by_side",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to try it")
    parser.add_argument("--reps", type=int, default=None, help="reps (default 3; --quick 1)")
    parser.add_argument("--only", nargs="+", choices=BROKERS, default=list(BROKERS))
    parser.add_argument("--partitions", type=int, default=1, help="partitions per topic")
    parser.add_argument(
        "--records", type=int, default=None, help="records of the 1 KiB produce, consume, drain"
    )
    parser.add_argument(
        "--recovery-mib", type=int, default=None, help="log filled before kill -9 (MiB)"
    )
    parser.add_argument(
        "--batch-records",
        type=int,
        default=None,
        help="the producers' batch.num.messages (log batches of at most this many records; "
        "Kafka protocol only)",
    )
    parser.add_argument(
        "--old-src",
        type=Path,
        default=None,
        help="also run the Shoal of another tree's src directory, as broker shoal-old "
        "(before/after: git worktree add --detach /tmp/old REV; --old-src /tmp/old/src)",
    )
    parser.add_argument("--skip", nargs="+", choices=PARTS, default=[], help="parts to leave out")
    args = parser.parse_args(argv)
    if args.old_src is not None and not (args.old_src / "shoal" / "__init__.py").exists():
        parser.error(f"--old-src {args.old_src}: no shoal package there")
    if args.reps is None:
        args.reps = 1 if args.quick else 3
    result = run(args)
    out = save_result("side_by_side", result)
    print(report(result))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
