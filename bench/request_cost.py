"""The broker's CPU per request, one request at a time over one connection: what the
server shell costs (frame read, decode, dispatch, encode, socket write) around the
handlers, for a trivial request and for a one-record Produce.

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine, alternately):

    PYTHONPATH=src .venv/bin/python -m bench.request_cost [--requests 10000] [--repeats 3]

It starts a broker (tests/support/broker.py) on a temporary data directory, creates
a one-partition topic, and for each kind sends `--requests` identical pre-encoded
requests in a closed loop (the next is sent when the previous answer is read whole):

- `api_versions`: ApiVersions v3 (the broker lists every API it serves);
- `metadata`: Metadata v12 of no topic (brokers and cluster only: the shell's floor);
- `produce`: Produce v10, acks=all, one 1 KiB record in a batch, to the topic;
- `produce6`: the same with six records, as a 2 ms linger makes at 3k records/s.

Per kind: the broker's CPU per request (utime + stime from /proc, the best of
`--repeats`) and the mean round trip. The broker is the only busy process apart from
this client, so the figure moves little with the machine's load; compare trees
alternately all the same. Results: a table and JSON in bench/results/request_cost.json.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.batches import build_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.wire import api_versions_request

from bench.produce_fetch import machine, process_cpu_s, save_result
from shoal.client import requests
from shoal.protocol.codec import encode_request, request_header_for

TOPIC = "request-cost"
WARMUP_REQUESTS = 2000
RECORD_BYTES = 1024


def frame_of(call: Any, version: int) -> bytes:
    request = call.build(version)
    return encode_request(request_header_for(call.api_key, version, 1, "request-cost"), request)


def frames() -> dict[str, bytes]:
    def produce(count: int) -> bytes:
        batch = build_batch([bytes(RECORD_BYTES) for _ in range(count)])
        return frame_of(requests.produce({(TOPIC, 0): batch}, acks=-1), 10)

    api_versions = api_versions_request()
    return {
        "api_versions": encode_request(request_header_for(18, 3, 1, "request-cost"), api_versions),
        "metadata": frame_of(requests.metadata([]), 12),
        "produce": produce(1),
        "produce6": produce(6),
    }


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed response frame from the broker (its body)."""
    (size,) = struct.unpack(">i", _read_exact(sock, 4))
    return _read_exact(sock, size)


def _read_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 16))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data)


def closed_loop(sock: socket.socket, frame: bytes, count: int) -> None:
    for _ in range(count):
        sock.sendall(frame)
        read_frame(sock)


def measure(pid: int, sock: socket.socket, frame: bytes, count: int) -> tuple[float, float]:
    """(broker CPU µs per request, mean round trip µs)."""
    cpu0, t0 = process_cpu_s(pid), time.perf_counter()
    closed_loop(sock, frame, count)
    cpu1, t1 = process_cpu_s(pid), time.perf_counter()
    return 1e6 * (cpu1 - cpu0) / count, 1e6 * (t1 - t0) / count


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-request-cost-") as tmp:
        log_path = Path(tempfile.gettempdir()) / "request-cost-broker.log"  # kept after the run
        broker = BrokerProcess(Path(tmp) / "data", log_path=log_path).start()
        try:
            create_topic(broker.bootstrap, TOPIC, partitions=1)
            assert broker.process is not None
            pid = broker.process.pid
            sock = socket.create_connection(("127.0.0.1", broker.port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for kind, frame in frames().items():
                if args.kinds and kind not in args.kinds:
                    continue
                closed_loop(sock, frame, WARMUP_REQUESTS)
                runs = [measure(pid, sock, frame, args.requests) for _ in range(args.repeats)]
                rows[kind] = {
                    "broker_cpu_us": min(r[0] for r in runs),
                    "broker_cpu_us_all": [round(r[0], 1) for r in runs],
                    "rtt_us": min(r[1] for r in runs),
                }
            sock.close()
        finally:
            broker.stop()
    return {"requests": args.requests, "repeats": args.repeats, "kinds": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", nargs="*", default=[], help="only these kinds")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    result = run(args)
    info = machine()
    print(f"{'kind':<14}{'broker µs/req':>14}{'rtt µs':>9}   all repeats")
    for kind, row in result["kinds"].items():
        print(
            f"{kind:<14}{row['broker_cpu_us']:>14.0f}{row['rtt_us']:>9.0f}   "
            f"{row['broker_cpu_us_all']}"
        )
    load_after = os.getloadavg()[0]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), Python {info['python']}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after"
    )
    out = save_result(
        "request_cost", {**result, "machine": info, "load": [load_before, load_after]}
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
