"""What an idle connection costs the broker: broker RSS per idle connection.

Run from the repository root:

    .venv/bin/python -m bench.connections                 # 10,000 idle connections
    .venv/bin/python -m bench.connections --connections 2000

Starts a broker (tests/support/broker.py) with `max.connections` above N, raises this
process's RLIMIT_NOFILE (the broker inherits it), reads the broker's VmRSS from /proc,
opens N TCP connections that send nothing, waits for the broker to have accepted them
all (one ApiVersions on the last one answers), reads VmRSS again, and reports
(after - before) / N. It then sends one ApiVersions on every connection (so each has
served a request, as a real client's would) and measures again. Also reported: the
time to open them all. Results: bench/results/connections.json. On a shared
machine the times are noisy; RSS is steadier.
"""

from __future__ import annotations

import argparse
import resource
import socket
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess

from bench.produce_fetch import machine, save_result

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, -1)
FRAME = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def _read_response(sock: socket.socket) -> None:
    size_bytes = sock.recv(4, socket.MSG_WAITALL)
    (size,) = struct.unpack(">i", size_bytes)
    sock.recv(size, socket.MSG_WAITALL)


def run(connections: int) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 1_000
    if hard != resource.RLIM_INFINITY and hard < wanted:
        raise SystemExit(f"RLIMIT_NOFILE hard limit {hard} is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    with tempfile.TemporaryDirectory(prefix="shoal-bench-conn-") as tmp:
        broker = BrokerProcess(
            Path(tmp) / "data", overrides=[f"max.connections={connections + 10}"]
        ).start()
        held: list[socket.socket] = []
        try:
            time.sleep(2.0)  # the warm-up (schemas loaded, gc.freeze) is done
            host, _, port = broker.bootstrap.rpartition(":")
            before = rss_kib(broker.pid)
            started = time.monotonic()
            for _ in range(connections):
                held.append(socket.create_connection((host, int(port)), timeout=60))
            open_s = time.monotonic() - started
            held[-1].sendall(FRAME)
            _read_response(held[-1])
            time.sleep(1.0)
            idle = rss_kib(broker.pid)
            started = time.monotonic()
            for sock in held:
                sock.sendall(FRAME)
            for sock in held:
                _read_response(sock)
            serve_s = time.monotonic() - started
            time.sleep(1.0)
            served = rss_kib(broker.pid)
        finally:
            for sock in held:
                sock.close()
            broker.kill()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return {
        "timestamp": time.strftime("%Y%m%d-%H%M%S"),
        "machine": machine(),
        "connections": connections,
        "open_s": round(open_s, 2),
        "one_request_each_s": round(serve_s, 2),
        "broker_rss_kib_before": before,
        "broker_rss_kib_idle": idle,
        "broker_rss_kib_after_one_request_each": served,
        "rss_bytes_per_idle_connection": round((idle - before) * 1024 / connections),
        "rss_bytes_per_connection_after_one_request": round((served - before) * 1024 / connections),
        "note": "2-core machine shared with other engineers' test runs: times are noisy",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.connections",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--connections", type=int, default=10_000, help="N (default 10,000)")
    args = parser.parse_args(argv)
    result = run(args.connections)
    out = save_result("connections", result)
    print(
        f"{result['connections']} idle connections opened in {result['open_s']} s; broker RSS "
        f"{result['broker_rss_kib_before']} -> {result['broker_rss_kib_idle']} KiB: "
        f"{result['rss_bytes_per_idle_connection']} bytes per idle connection "
        f"({result['rss_bytes_per_connection_after_one_request']} after one request each, "
        f"served in {result['one_request_each_s']} s)"
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
