"""The broker's CPU per share consumer cycle at the wire, above all the path of a
record that arrives while a ShareFetch is parked: append -> purgatory notify -> woken
ShareFetch -> acquisition -> response in the socket, then the ShareAcknowledge.

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine, alternately):

    PYTHONPATH=src .venv/bin/python -m bench.share_fetch_cost [--cycles 2000] [--repeats 3]

It starts a broker (tests/support/broker.py) on a temporary data directory, creates a
one-partition topic and a share group (share.auto.offset.reset=earliest) and opens two
connections, one producing and one consuming as a librdkafka ShareConsumer in explicit
mode does (one ShareFetch per poll, one ShareAcknowledge per commit_sync). One cycle:

- `woken`: a ShareFetch (MaxWaitMs 5 s) is sent and left to park (`PARK_S`), then one
  1 KiB record is produced (acks=all); the fetch is answered with it; a
  ShareAcknowledge ACCEPTs it.
- `ready`: the record is produced first, then the ShareFetch answers at once; the
  same ShareAcknowledge (the same requests without the park and the wake).

Per mode: the broker's CPU per cycle (utime + stime from /proc, best of `--repeats`)
and the mean cycle time (it includes the park). The broker is the only busy process
besides this client, so the figure moves little with the machine's load; compare trees
alternately all the same. With `--profile PATH` the broker also runs under cProfile
(SHOAL_PROFILE, cli/serve.py) for a `woken` run of N cycles and one of 2N, and the
Python calls per cycle (the difference over N) are printed: deterministic, so
comparable across trees whatever the load. Results: a table
and JSON in bench/results/share_fetch_cost.json.
"""

from __future__ import annotations

import argparse
import os
import pstats
import socket
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.batches import build_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.share_wire import join, set_group_configs
from tests.support.wire import call1

from bench.produce_fetch import machine, process_cpu_s, save_result
from bench.request_cost import frame_of, read_frame
from shoal.client import requests
from shoal.client.share_requests import (
    AckBatch,
    TopicIdPartition,
    acquired_of,
    share_acknowledge,
    share_fetch,
)
from shoal.client.share_session import next_session_epoch
from shoal.protocol.codec import decode_response, encode_request, request_header_for
from shoal.protocol.share import AcknowledgeType

TOPIC = "share-fetch-cost"
GROUP = "share-fetch-cost"
RECORD_BYTES = 1024
WARMUP_CYCLES = 300
PARK_S = 0.001
"""How long the client waits after sending a ShareFetch before producing, so that the
fetch is parked when the record arrives (a parked fetch costs no CPU meanwhile)."""
FETCH_VERSION = 2
ACK_VERSION = 2
PRODUCE_VERSION = 10


class Consumer:
    """One share session over one socket, as librdkafka's explicit mode drives it."""

    def __init__(self, sock: socket.socket, member_id: str, tp: TopicIdPartition) -> None:
        self.sock = sock
        self.member_id = member_id
        self.tp = tp
        self.epoch = 0
        self.correlation = 0

    def _frame(self, call: Any, version: int) -> bytes:
        self.correlation += 1
        header = request_header_for(call.api_key, version, self.correlation, "share-fetch-cost")
        return encode_request(header, call.build(version))

    def send_fetch(self) -> None:
        call = share_fetch(
            group_id=GROUP,
            member_id=self.member_id,
            session_epoch=self.epoch,
            partitions=[self.tp] if self.epoch == 0 else [],
            max_wait_ms=5_000,
            max_records=500,
        )
        self.sock.sendall(self._frame(call, FETCH_VERSION))
        self.epoch = next_session_epoch(self.epoch)

    def read_fetch(self) -> list[AckBatch]:
        _, response = decode_response(read_frame(self.sock), 78, FETCH_VERSION)
        assert response.error_code == 0, response
        spans = acquired_of(response).get(self.tp, ())
        assert spans, f"the fetch acquired nothing: {response}"
        return [AckBatch(s.first, s.last, (int(AcknowledgeType.ACCEPT),)) for s in spans]

    def acknowledge(self, batches: list[AckBatch]) -> None:
        call = share_acknowledge(
            group_id=GROUP,
            member_id=self.member_id,
            session_epoch=self.epoch,
            acks={self.tp: batches},
        )
        self.sock.sendall(self._frame(call, ACK_VERSION))
        self.epoch = next_session_epoch(self.epoch)
        _, response = decode_response(read_frame(self.sock), 79, ACK_VERSION)
        assert response.error_code == 0, response


def _produce(sock: socket.socket, frame: bytes) -> None:
    sock.sendall(frame)
    read_frame(sock)


def cycles(mode: str, consumer: Consumer, producer: socket.socket, frame: bytes, n: int) -> None:
    for _ in range(n):
        if mode == "woken":
            consumer.send_fetch()
            time.sleep(PARK_S)
            _produce(producer, frame)
        else:
            _produce(producer, frame)
            consumer.send_fetch()
        consumer.acknowledge(consumer.read_fetch())


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _topic_id(bootstrap: str) -> uuid.UUID:
    response = call1(bootstrap, requests.metadata([TOPIC]).build(12))
    return uuid.UUID(str(response.topics[0].topic_id))


def one_broker(args: argparse.Namespace, modes: list[str], profile: Path | None) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-share-fetch-cost-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", log_path=args.broker_log)
        if profile is not None:
            os.environ["SHOAL_PROFILE"] = str(profile)
        try:
            broker.start()
        finally:
            os.environ.pop("SHOAL_PROFILE", None)
        try:
            create_topic(broker.bootstrap, TOPIC, partitions=1)
            set_group_configs(broker.bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
            member_id = join(broker.bootstrap, GROUP, TOPIC)
            tp = TopicIdPartition(_topic_id(broker.bootstrap), 0)
            frame = frame_of(
                requests.produce({(TOPIC, 0): build_batch([bytes(RECORD_BYTES)])}, acks=-1),
                PRODUCE_VERSION,
            )
            producer = _connect(broker.port)
            consumer = Consumer(_connect(broker.port), member_id, tp)
            pid = broker.pid
            for mode in modes:
                cycles(mode, consumer, producer, frame, WARMUP_CYCLES)
                runs = []
                for _ in range(1 if profile is not None else args.repeats):
                    cpu0, t0 = process_cpu_s(pid), time.perf_counter()
                    cycles(mode, consumer, producer, frame, args.cycles)
                    cpu1, t1 = process_cpu_s(pid), time.perf_counter()
                    runs.append((1e6 * (cpu1 - cpu0) / args.cycles, 1e6 * (t1 - t0) / args.cycles))
                rows[mode] = {
                    "broker_cpu_us": min(r[0] for r in runs),
                    "broker_cpu_us_all": [round(r[0], 1) for r in runs],
                    "cycle_us": min(r[1] for r in runs),
                }
            producer.close()
            consumer.sock.close()
        finally:
            broker.stop()
    return rows


def total_calls(path: Path) -> int:
    """Every Python call a cProfile statistics file counted."""
    stats = pstats.Stats(str(path))
    return sum(row[1] for row in stats.stats.values())  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="*", default=["woken", "ready"])
    parser.add_argument(
        "--broker-log",
        type=Path,
        default=None,
        help="keep the broker's log here (with SHOAL_LATENCY_TRACE=<s> set, it has the "
        "per-stage timings at stop: server/observability/latency_trace.py)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="also run the broker under cProfile for one woken run; the stats go here",
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = one_broker(args, args.modes, None)
    result: dict[str, Any] = {"cycles": args.cycles, "repeats": args.repeats, "modes": rows}
    print(f"{'mode':<8}{'broker µs/cycle':>16}{'cycle µs':>10}   all repeats")
    for mode, row in rows.items():
        print(
            f"{mode:<8}{row['broker_cpu_us']:>16.0f}{row['cycle_us']:>10.0f}   "
            f"{row['broker_cpu_us_all']}"
        )
    if args.profile is not None:
        # whole-broker calls of a run of N measured cycles and of one of 2N: the
        # difference over N is the calls per cycle, start-up and set-up cancelled out
        one_broker(args, ["woken"], args.profile)
        once = total_calls(args.profile)
        one_broker(
            argparse.Namespace(**{**vars(args), "cycles": 2 * args.cycles}), ["woken"], args.profile
        )
        twice = total_calls(args.profile)
        result["profile_calls_per_cycle"] = (twice - once) / args.cycles
        print(f"cProfile: {result['profile_calls_per_cycle']:.0f} Python calls per woken cycle")
    load_after = os.getloadavg()[0]
    info = machine()
    print(
        f"\n{info['cores']} cores ({info['cpu']}), Python {info['python']}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after"
    )
    out = save_result(
        "share_fetch_cost", {**result, "machine": info, "load": [load_before, load_after]}
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
