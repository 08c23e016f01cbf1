"""First-record latency of a new share group: how long after its members subscribe
the first records arrive, measured with confluent-kafka ShareConsumers against any
Kafka-protocol broker (Shoal or Apache Kafka 4.2), unchanged.

Run from the repository root:

    .venv/bin/python -m bench.peers.first_record --shoal          # Shoal only
    .venv/bin/python -m bench.peers.first_record --kafka --shoal  # both, same run

For each partition count (1 and 4) and each of `--groups` new share groups:

1. a topic of P partitions gets `RECORDS_PER_PARTITION` records in every
   partition, in log batches of `BATCH_RECORDS` (so that one acquisition cannot
   take a whole partition and every member can get some);
2. the group gets share.auto.offset.reset=earliest (IncrementalAlterConfigs on the
   GROUP resource) before any member exists;
3. `consumers` ShareConsumers, each in a process of its own (spawned; they have
   imported confluent_kafka and wait on a barrier before the clock starts), create
   their consumer, subscribe and poll (implicit acknowledgement) until every member
   has a record and every partition has delivered one, or `DEADLINE_S`.

Times are from the earliest subscribe() of the group's members (CLOCK_MONOTONIC is
one clock for every process): "first" to the first record any member received,
"all members" to the last member's first record, "all partitions" to the last
partition's first delivery. Each figure is the median over the groups; a group in
which some member or partition got nothing by the deadline counts as missing.

The brokers run with their default settings (the share heartbeat interval,
group.share.heartbeat.interval.ms, is 5 s on both), each on a fresh temporary data
directory, started and stopped by the side-by-side harness's runners
(bench/peers/runners.py: `ShoalRunner` with no overrides, `KafkaRunner`: Kafka 4.2 as
its start scripts run it).

Results: a table on stdout and bench/results/first_record.json (machine, load).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import ShareConsumer
from tests.support.clients import create_topic
from tests.support.share_consumers import alter_group_configs, produce_values

from bench.produce_fetch import machine, save_result

RECORDS_PER_PARTITION = 2000
BATCH_RECORDS = 50
MAX_POLL_RECORDS = 100
DEADLINE_S = 30.0
"""How long a group's members poll for their first records (six heartbeats)."""
SPAWN_WAIT_S = 120.0
GROUPS = 3
PARTITION_COUNTS = (1, 4)


def _member(
    index: int,
    address: str,
    group: str,
    topic: str,
    partitions: int,
    ready: Any,  # multiprocessing.Barrier
    got_member: Any,  # multiprocessing.Array("b"), one flag per member
    got_partition: Any,  # multiprocessing.Array("b"), one flag per partition
    results: Any,  # multiprocessing.Queue
) -> None:
    """One ShareConsumer: subscribe, then poll until it has a record and every
    partition has delivered one, then wait (without acquiring more, so that the
    others' records are not drained by it) until every member has one, or the
    deadline; reports its subscribe time, its first record's time and each
    partition's first delivery to it."""
    ready.wait(SPAWN_WAIT_S)
    consumer = ShareConsumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "share.acknowledgement.mode": "implicit",
            "max.poll.records": MAX_POLL_RECORDS,
            "log_level": 3,  # not the "Preview" warning
        }
    )
    subscribed = time.monotonic()
    consumer.subscribe([topic])
    first: float | None = None
    by_partition: dict[int, float] = {}
    error: str | None = None
    deadline = subscribed + DEADLINE_S
    try:
        while time.monotonic() < deadline:
            if all(got_partition[:]) and first is not None:
                if all(got_member[:]):
                    break
                time.sleep(0.005)
                continue
            batch = consumer.poll(0.01)
            if not batch:
                continue
            now = time.monotonic()
            for message in batch:
                if message.error() is not None:
                    error = str(message.error())
                    continue
                partition = int(message.partition() or 0)
                by_partition.setdefault(partition, now)
                got_partition[partition] = 1
                if first is None:
                    first = now
                    got_member[index] = 1
    finally:
        consumer.close()
    results.put(
        {"subscribed": subscribed, "first": first, "partitions": by_partition, "error": error}
    )


def _ms(value: float | None, origin: float) -> float | None:
    return None if value is None else round((value - origin) * 1000, 1)


def one_group(address: str, *, partitions: int, consumers: int) -> dict[str, Any]:
    """One new topic and share group; the times of its first records (ms)."""
    stamp = time.monotonic_ns()
    topic, group = f"first-record-{partitions}p-{stamp}", f"first-record-{partitions}p-{stamp}"
    create_topic(address, topic, partitions=partitions)
    for partition in range(partitions):
        produce_values(
            address,
            topic,
            (b"%d" % i for i in range(RECORDS_PER_PARTITION)),
            partition=partition,
            flush_every=BATCH_RECORDS,
        )
    alter_group_configs(address, group, {"share.auto.offset.reset": "earliest"})
    context = mp.get_context("spawn")  # never fork a process with librdkafka threads
    ready = context.Barrier(consumers + 1)
    got_member = context.Array("b", consumers)
    got_partition = context.Array("b", partitions)
    results = context.Queue()
    workers = [
        context.Process(
            target=_member,
            args=(i, address, group, topic, partitions, ready, got_member, got_partition, results),
            daemon=True,
        )
        for i in range(consumers)
    ]
    for worker in workers:
        worker.start()
    try:
        ready.wait(SPAWN_WAIT_S)  # every member has imported confluent_kafka
        outcomes = [results.get(timeout=DEADLINE_S + 60) for _ in workers]
    finally:
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
    origin = min(o["subscribed"] for o in outcomes)
    firsts = [o["first"] for o in outcomes]
    partition_firsts: dict[int, float] = {}
    for outcome in outcomes:
        for partition, at in outcome["partitions"].items():
            partition_firsts[partition] = min(at, partition_firsts.get(partition, at))
    got = [f for f in firsts if f is not None]
    return {
        "first_ms": _ms(min(got), origin) if got else None,
        "all_members_ms": _ms(max(got), origin) if len(got) == consumers else None,
        "all_partitions_ms": (
            _ms(max(partition_firsts.values()), origin)
            if len(partition_firsts) == partitions
            else None
        ),
        "members_ms": [_ms(f, origin) for f in firsts],
        "errors": [o["error"] for o in outcomes if o["error"]],
    }


def _median(values: list[float | None]) -> float | None:
    """The median, a missing value counting as infinitely late (None if most are)."""
    ordered = sorted(values, key=lambda v: float("inf") if v is None else v)
    middle = ordered[(len(ordered) - 1) // 2 : len(ordered) // 2 + 1]
    if any(v is None for v in middle):
        return None
    return round(statistics.fmean(v for v in middle if v is not None), 1)


def first_record(
    address: str, *, partitions: int, consumers: int = 4, groups: int = GROUPS
) -> dict[str, Any]:
    """Medians over `groups` new share groups of `consumers` members on a topic of
    `partitions` partitions at `address`: ms from subscribe() to the first record
    of any member ("first_ms", also as "first_record_ms", the figure
    bench/side_by_side.py reads), of every member ("all_members_ms"), from every
    partition ("all_partitions_ms"); "runs" has each group's figures."""
    runs = [one_group(address, partitions=partitions, consumers=consumers) for _ in range(groups)]
    first_ms = _median([r["first_ms"] for r in runs])
    return {
        "first_record_ms": first_ms,
        "partitions": partitions,
        "consumers": consumers,
        "groups": groups,
        "first_ms": first_ms,
        "all_members_ms": _median([r["all_members_ms"] for r in runs]),
        "all_partitions_ms": _median([r["all_partitions_ms"] for r in runs]),
        "runs": runs,
    }


# ---- entry ---------------------------------------------------------------------------


@contextmanager
def _started(name: str, tmp: Path) -> Iterator[str]:
    """Broker `name` ("kafka" or "shoal") running on a fresh data directory: its address."""
    from bench.peers.runners import KafkaRunner, ShoalRunner

    data_dir = tmp / name / "data"
    runner = KafkaRunner(data_dir) if name == "kafka" else ShoalRunner(data_dir)
    runner.start()
    try:
        yield runner.address
    finally:
        runner.stop()


def _cell(value: float | None) -> str:
    return f"{value:>10.1f}" if value is not None else f"{'-':>10}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--shoal", action="store_true", help="measure Shoal")
    parser.add_argument("--kafka", action="store_true", help="measure Apache Kafka 4.2")
    parser.add_argument("--groups", type=int, default=GROUPS)
    parser.add_argument("--consumers", type=int, nargs="+", default=[4])
    args = parser.parse_args(argv)
    brokers = [name for name in ("kafka", "shoal") if getattr(args, name)] or ["shoal"]
    load_before = os.getloadavg()
    table: list[dict[str, Any]] = []
    print(f"{'broker':<7}{'P':>3}{'N':>3}{'first ms':>10}{'members':>10}{'parts':>10}")
    with tempfile.TemporaryDirectory(prefix="first-record-") as tmp:
        for name in brokers:
            with _started(name, Path(tmp)) as address:
                for partitions in PARTITION_COUNTS:
                    for consumers in args.consumers:
                        row = first_record(
                            address, partitions=partitions, consumers=consumers, groups=args.groups
                        )
                        table.append({"broker": name, **row})
                        print(
                            f"{name:<7}{partitions:>3}{consumers:>3}{_cell(row['first_ms'])}"
                            f"{_cell(row['all_members_ms'])}{_cell(row['all_partitions_ms'])}",
                            flush=True,
                        )
    result = {
        "machine": machine(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "results": table,
    }
    print(f"load average before {load_before}, after {result['load_after']}")
    print(f"wrote {save_result('first_record', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
