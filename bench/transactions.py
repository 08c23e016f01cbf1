"""Transaction throughput of a Shoal broker, measured with confluent-kafka on loopback.

Run from the repository root:

    .venv/bin/python -m bench.transactions            # defaults below
    .venv/bin/python -m bench.transactions --quick    # a few seconds, to try it

The script starts its own broker (tests/support/broker.py) on a temporary data
directory and a topic of 3 partitions per phase; records have 100-byte values, no
keys, and go round robin over the partitions (so a transaction of 3 or more records
touches every partition). Phases:

- produce idempotent: `--records` records with enable.idempotence (the baseline);
- produce transactional, 1 / 10 / 100 records per transaction: `begin_transaction`,
  the records, `commit_transaction`, repeated; each phase runs at most
  `--transactions` transactions (so 1 record per transaction is a short phase);
- fetch read_uncommitted and fetch read_committed of the 100-per-transaction topic
  (its log holds a commit marker per partition per transaction) with an assigned
  Consumer from offset 0.

Results: an aligned table on stdout (records/s, transactions/s, broker and client CPU)
and JSON in bench/results/transactions.json with machine information and load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import CpuMeter, machine, save_result

PARTITIONS = 3
VALUE_BYTES = 100
PER_TRANSACTION = (1, 10, 100)


@dataclass
class Phase:
    name: str
    records: int
    transactions: int
    seconds: float
    broker_cpu_percent: float
    client_cpu_percent: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def transactions_per_s(self) -> float:
        return self.transactions / self.seconds


def _producer(bootstrap: str, **extra: Any) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "message.timeout.ms": 300_000,
            **extra,
        }
    )


def produce_idempotent(bootstrap: str, topic: str, *, records: int) -> None:
    producer = _producer(bootstrap, **{"enable.idempotence": True})
    value = os.urandom(VALUE_BYTES)
    for i in range(records):
        try:
            producer.produce(topic, value, partition=i % PARTITIONS)
        except BufferError:
            producer.poll(0.01)
            producer.produce(topic, value, partition=i % PARTITIONS)
    remaining = producer.flush(300)
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered")


def transactional_producer(bootstrap: str, transactional_id: str) -> Producer:
    """A producer past init_transactions (not part of the timed phase: the first one
    also creates __transaction_state)."""
    producer = _producer(
        bootstrap, **{"transactional.id": transactional_id, "transaction.timeout.ms": 300_000}
    )
    producer.init_transactions(60)
    return producer


def produce_transactional(
    producer: Producer, topic: str, *, per_transaction: int, transactions: int
) -> None:
    value = os.urandom(VALUE_BYTES)
    i = 0
    for _ in range(transactions):
        producer.begin_transaction()
        for _ in range(per_transaction):
            producer.produce(topic, value, partition=i % PARTITIONS)
            i += 1
        producer.commit_transaction(60)  # flushes the transaction's records first


def fetch(bootstrap: str, topic: str, *, records: int, isolation_level: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "isolation.level": isolation_level,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.min.messages": 5_000_000,  # see bench/produce_fetch.py
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    phases: list[Phase] = []

    def record(name: str, records: int, transactions: int, meter: CpuMeter) -> None:
        phases.append(
            Phase(
                name,
                records,
                transactions,
                meter.seconds,
                meter.broker_percent,
                meter.client_percent,
            )
        )
        print(row(phases[-1]), flush=True)

    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            bootstrap = broker.bootstrap
            meter = CpuMeter(broker.pid)
            create_topic(bootstrap, "bench-idempotent", partitions=PARTITIONS)
            for k in PER_TRANSACTION:
                create_topic(bootstrap, f"bench-tx{k}", partitions=PARTITIONS)
            with meter:
                produce_idempotent(bootstrap, "bench-idempotent", records=args.records)
            record("produce idempotent", args.records, 0, meter)
            counts: dict[int, int] = {}
            for k in PER_TRANSACTION:
                transactions = max(1, min(args.transactions, args.records // k))
                counts[k] = transactions * k
                producer = transactional_producer(bootstrap, f"bench-tx{k}")
                with meter:
                    produce_transactional(
                        producer, f"bench-tx{k}", per_transaction=k, transactions=transactions
                    )
                record(f"produce tx x{k}", counts[k], transactions, meter)
                del producer  # closed before the broker stops
            fetched = PER_TRANSACTION[-1]
            for level in ("read_uncommitted", "read_committed"):
                with meter:
                    topic = f"bench-tx{fetched}"
                    fetch(bootstrap, topic, records=counts[fetched], isolation_level=level)
                record(f"fetch {level}", counts[fetched], 0, meter)
        finally:
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "partitions": PARTITIONS,
            "value_bytes": VALUE_BYTES,
            "producer": "linger.ms=5 batch.size=1MB compression=none, no keys, round robin",
            "max_transactions_per_phase": args.transactions,
            "fetched_topic": f"bench-tx{PER_TRANSACTION[-1]}",
        },
        "phases": [
            {
                **asdict(p),
                "records_per_s": p.records_per_s,
                "transactions_per_s": p.transactions_per_s,
            }
            for p in phases
        ],
    }


HEADER = (
    f"{'phase':<24} {'records':>9} {'txns':>7} {'seconds':>8} {'records/s':>11} "
    f"{'txns/s':>8} {'broker CPU':>10} {'client CPU':>10}"
)


def row(p: Phase) -> str:
    txns = f"{p.transactions_per_s:>8,.0f}" if p.transactions else f"{'-':>8}"
    return (
        f"{p.name:<24} {p.records:>9,} {p.transactions:>7,} {p.seconds:>8.2f} "
        f"{p.records_per_s:>11,.0f} {txns} {p.broker_cpu_percent:>9.0f}% "
        f"{p.client_cpu_percent:>9.0f}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.transactions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--records", type=int, default=200_000, help="records per phase (default 200,000)"
    )
    parser.add_argument(
        "--transactions",
        type=int,
        default=2_000,
        help="at most this many transactions per transactional phase (default 2,000)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a tiny run (10,000 records, 100 transactions)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.transactions = 10_000, 100

    print(HEADER, flush=True)
    result = run(args)
    out = save_result("transactions", result)
    info = result["machine"]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), {info['ram_gib']} GiB RAM, "
        f"Python {info['python']}, librdkafka {info['librdkafka']}; load average "
        f"{info['load_average_1m_before']:.1f} before, {info['load_average_1m']:.1f} after"
    )
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
