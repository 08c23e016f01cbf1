"""Start-up time to the first answered request, and idle resident memory, of `shoal serve`.

Each run spawns `shoal serve --port P --data-dir D` on a fresh (empty) data directory
and polls it with a raw ApiVersions request (a new connection every few milliseconds
until one is answered with error code 0): the start-up time is from the spawn to that
answer. The broker is then left idle for `--idle-s` seconds and its VmRSS read from
/proc. The medians of `--runs` runs are printed and saved to bench/results/startup.json
with the machine's load. docs/startup.md explains the figures.

    PYTHONPATH=src python bench/startup.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.kafka_reference import free_port

from bench.produce_fetch import save_result
from shoal.protocol.codec import decode_response, encode_request, request_class, request_header_for

API_VERSIONS = 18
PROBE_VERSION = 3
POLL_INTERVAL_S = 0.002
START_TIMEOUT_S = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def api_versions_frame() -> bytes:
    body = request_class(API_VERSIONS, PROBE_VERSION)(
        client_software_name="shoal-bench", client_software_version="1"
    )
    return encode_request(request_header_for(API_VERSIONS, PROBE_VERSION, 1, "startup"), body)


def _read_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def probe(port: int, frame: bytes) -> bool:
    """One ApiVersions on a new connection: True when answered without error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(frame)
            size = int.from_bytes(_read_exact(sock, 4), "big")
            _, body = decode_response(_read_exact(sock, size), API_VERSIONS, PROBE_VERSION)
            return int(body.error_code) == 0
    except OSError:
        return False


def wait_answered(port: int, process: subprocess.Popen[bytes], started: float) -> float:
    """Seconds from `started` to the first answered ApiVersions."""
    frame = api_versions_frame()
    deadline = started + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if probe(port, frame):
            return time.monotonic() - started
        if process.poll() is not None:
            raise RuntimeError(f"broker exited with {process.returncode}")
        time.sleep(POLL_INTERVAL_S)
    raise RuntimeError("broker did not answer in time")


def cpu_s(pid: int) -> float:
    """User plus system CPU seconds the process has used (a figure the machine's load
    changes far less than the wall time)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def shoal_command(port: int, data_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shoal.cli.main",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
    ]


def run_once(root: Path, idle_s: float) -> dict[str, float]:
    data_dir = root / f"data-{time.monotonic_ns()}"
    port = free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        shoal_command(port, data_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        startup_s = wait_answered(port, process, started)
        startup_cpu_s = cpu_s(process.pid)
        time.sleep(idle_s)
        rss_kib = vm_rss_kib(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
    return {"startup_s": startup_s, "startup_cpu_s": startup_cpu_s, "idle_rss_mib": rss_kib / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=3.0)
    args = parser.parse_args()
    runs: list[dict[str, float]] = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="shoal-startup-") as tmp:
        for _ in range(args.runs):
            runs.append(run_once(Path(tmp), args.idle_s))
            print(
                f"  start-up {runs[-1]['startup_s']:.3f} s "
                f"({runs[-1]['startup_cpu_s']:.2f} s CPU)  "
                f"idle RSS {runs[-1]['idle_rss_mib']:.1f} MiB"
            )
    result: dict[str, Any] = {
        "runs": runs,
        "startup_s_median": statistics.median(r["startup_s"] for r in runs),
        "startup_cpu_s_median": statistics.median(r["startup_cpu_s"] for r in runs),
        "idle_rss_mib_median": statistics.median(r["idle_rss_mib"] for r in runs),
        "load_1min": [load_before, os.getloadavg()[0]],
    }
    print(
        f"shoal: start-up {result['startup_s_median']:.3f} s (median of {len(runs)}; "
        f"{result['startup_cpu_s_median']:.2f} s CPU), "
        f"idle RSS {result['idle_rss_mib_median']:.1f} MiB; load {result['load_1min']}"
    )
    save_result("startup", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
