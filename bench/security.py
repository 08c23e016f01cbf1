"""What TLS and SASL cost: produce and share-consume throughput of one Shoal broker
over PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512), with confluent-kafka on loopback.

Run from the repository root:

    .venv/bin/python -m bench.security            # 300k x 1 KiB per protocol
    .venv/bin/python -m bench.security --quick    # 5k x 1 KiB, to try it

The script starts its own broker (tests/support/broker.py) with three listeners on
one temporary data directory: PLAINTEXT, SSL (server certificate only) and SASL_SSL
(SCRAM-SHA-512; the user is created with AlterUserScramCredentials, 4096 iterations
as Kafka's default). Certificates come from tests/support/certs.py (EC P-256, TLS 1.2+,
whatever cipher OpenSSL negotiates, normally TLS 1.3 AES-GCM). No authorizer: this
measures the transport and authentication, not ACL checks (bench/acl_authorize.py).

For each protocol, on a topic of its own with one partition:

(a) produce: one Producer writes R records of V random bytes (acks=all, linger.ms=5,
    batch.size=1 MB, no compression); seconds from the first produce() to flush()
    returning (the connection and authentication are made before the clock starts,
    by a Metadata request).
(b) share-consume: one ShareConsumer (implicit acknowledgement, default settings) in
    a new share group (share.auto.offset.reset=earliest) reads all R records; seconds
    from subscribe to the last record (so the join and authentication are included;
    "start s" is the part before the first record).

records/s = R / seconds; MB/s counts value bytes. Broker CPU is from /proc, client CPU
is this process. Results: a table on stdout and JSON in
bench/results/security.json with machine information and the load average
before and after (the machine may be shared: compare protocols within one run).
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

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from confluent_kafka.admin import ResourceType as AdminResourceType
from tests.support.broker import BrokerProcess
from tests.support.certs import make_pki

from bench.produce_fetch import CpuMeter, machine, save_result

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
USER = "bench"
PASSWORD = "bench-scram-password"
SCRAM_ITERATIONS = 4096
PHASE_TIMEOUT_S = 600.0


@dataclass
class Phase:
    protocol: str
    name: str
    records: int
    value_bytes: int
    seconds: float
    start_seconds: float
    broker_cpu_percent: float
    client_cpu_percent: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("inf")

    @property
    def mb_per_s(self) -> float:
        return self.records_per_s * self.value_bytes / 1e6


def client_config(protocol: str, ports: dict[str, int], ca: Path) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{ports[protocol]}"}
    if protocol != "PLAINTEXT":
        config |= {"security.protocol": protocol, "ssl.ca.location": str(ca)}
    if protocol == "SASL_SSL":
        config |= {
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
        }
    return config


def prepare(plaintext: dict[str, Any], topics: list[str]) -> None:
    """Topics, the SCRAM user, and earliest reset for the share groups (over PLAINTEXT)."""
    admin = AdminClient(plaintext)
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(timeout=60)
    upsert = UserScramCredentialUpsertion(
        USER,
        ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS),
        PASSWORD.encode(),
    )
    admin.alter_user_scram_credentials([upsert])[USER].result(timeout=60)
    for topic in topics:
        resource = ConfigResource(
            AdminResourceType.GROUP,
            f"group-{topic}",
            incremental_configs=[
                ConfigEntry(
                    "share.auto.offset.reset",
                    "earliest",
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=60)


def produce_phase(
    protocol: str, config: dict[str, Any], topic: str, args: argparse.Namespace, meter: CpuMeter
) -> Phase:
    producer = Producer(
        {
            **config,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "message.timeout.ms": 300_000,
        }
    )
    producer.list_topics(topic, timeout=60)  # connected and authenticated before the clock
    value = os.urandom(args.value_bytes)
    with meter:
        for _ in range(args.records):
            try:
                producer.produce(topic, value)
            except BufferError:
                producer.poll(0.01)
                producer.produce(topic, value)
        if producer.flush(PHASE_TIMEOUT_S):
            raise RuntimeError(f"{protocol}: records not delivered")
    return Phase(
        protocol,
        "produce",
        args.records,
        args.value_bytes,
        meter.seconds,
        0.0,
        meter.broker_percent,
        meter.client_percent,
    )


def share_phase(
    protocol: str, config: dict[str, Any], topic: str, args: argparse.Namespace, meter: CpuMeter
) -> Phase:
    consumer = ShareConsumer(
        {**config, "group.id": f"group-{topic}", "share.acknowledgement.mode": "implicit"}
    )
    seen: set[int] = set()
    first = last = 0.0
    with meter:
        subscribed = time.monotonic()
        consumer.subscribe([topic])
        deadline = subscribed + PHASE_TIMEOUT_S
        try:
            while len(seen) < args.records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{protocol}: stalled at {len(seen)} of {args.records}")
                batch = consumer.poll(0.1)
                if not batch:
                    continue
                last = time.monotonic()
                first = first or last
                for message in batch:
                    if message.error() is not None:
                        raise RuntimeError(f"{protocol}: {message.error()}")
                    seen.add(int(message.offset() or 0))
            consumer.commit_sync(60)
        finally:
            consumer.close()
    return Phase(
        protocol,
        "share",
        args.records,
        args.value_bytes,
        last - subscribed,
        first - subscribed,
        meter.broker_percent,
        meter.client_percent,
    )


HEADER = (
    f"{'protocol':<10} {'phase':<8} {'records':>9} {'seconds':>8} {'records/s':>11} "
    f"{'MB/s':>7} {'start s':>8} {'broker CPU':>10} {'client CPU':>10}"
)


def row(p: Phase) -> str:
    return (
        f"{p.protocol:<10} {p.name:<8} {p.records:>9,} {p.seconds:>8.2f} "
        f"{p.records_per_s:>11,.0f} {p.mb_per_s:>7.1f} {p.start_seconds:>8.2f} "
        f"{p.broker_cpu_percent:>9.0f}% {p.client_cpu_percent:>9.0f}%"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        pki = make_pki(Path(tmp) / "pki")
        overrides = (
            "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            f"ssl.keystore.location={pki.server.keystore}",
            f"ssl.truststore.location={pki.ca}",
            "sasl.enabled.mechanisms=SCRAM-SHA-512",
            "group.share.min.heartbeat.interval.ms=100",
            "group.share.heartbeat.interval.ms=500",
        )
        broker = BrokerProcess(Path(tmp) / "data", overrides=overrides).start()
        try:
            ports = broker.listener_ports()
            configs = {p: client_config(p, ports, pki.ca) for p in PROTOCOLS}
            topics = {p: f"bench-security-{p.lower()}" for p in PROTOCOLS}
            prepare(configs["PLAINTEXT"], list(topics.values()))
            meter = CpuMeter(broker.pid)
            print(HEADER, flush=True)
            for protocol in PROTOCOLS:
                phases.append(
                    produce_phase(protocol, configs[protocol], topics[protocol], args, meter)
                )
                print(row(phases[-1]), flush=True)
            for protocol in PROTOCOLS:
                phases.append(
                    share_phase(protocol, configs[protocol], topics[protocol], args, meter)
                )
                print(row(phases[-1]), flush=True)
        finally:
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {
            **machine(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "settings": {
            "records": args.records,
            "value_bytes": args.value_bytes,
            "sasl": f"SCRAM-SHA-512, {SCRAM_ITERATIONS} iterations",
            "producer": "acks=all linger.ms=5 batch.size=1MB compression=none, no keys",
            "share_consumer": "one, in this process, implicit mode, default settings",
        },
        "phases": [
            {**asdict(p), "records_per_s": p.records_per_s, "mb_per_s": p.mb_per_s} for p in phases
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.security",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=300_000, help="R (default 300,000)")
    parser.add_argument("--value-bytes", type=int, default=1024, help="V (default 1024)")
    parser.add_argument("--quick", action="store_true", help="a tiny run (5,000 records)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records = 5_000
    result = run(args)
    out = save_result("security", result)
    info = result["machine"]
    before, after = info["load_average_before"], info["load_average_after"]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), Python {info['python']}, librdkafka "
        f"{info['librdkafka']}; load average (1/5/15 min) "
        f"{before[0]:.1f}/{before[1]:.1f}/{before[2]:.1f} before, "
        f"{after[0]:.1f}/{after[1]:.1f}/{after[2]:.1f} after"
    )
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
