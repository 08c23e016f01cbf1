"""Client quotas under a producer flood: how close a 1 MiB/s `producer_byte_rate`
holds a confluent-kafka producer that sends as fast as it can, and whether a producer
on another client-id is slowed meanwhile.

Run from the repository root:

    .venv/bin/python -m bench.quota_flood               # 20 s flood, 11 x 1 s window
    .venv/bin/python -m bench.quota_flood --quick       # 6 s flood, 3 x 1 s window

The script starts its own broker (tests/support/broker.py), sets the quota on
client-id `flood` with AlterClientQuotas, and floods topic `flooded` with 10 kB
records (tests/support/quota_flood.py). After `--warmup` seconds (the window lets a
first burst through) a second producer on client-id `quiet` writes 8 MiB to another
topic. Reported: the flood's acknowledged value bytes per second over the measured
seconds (quota = 1.00), the largest throttle time librdkafka saw, and the quiet
producer's MiB/s and throttle. JSON goes to bench/results/quota_flood.json with
machine information and the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.quota_flood import Flood

from bench.produce_fetch import machine, save_result
from shoal.client import Client
from shoal.client.quota_requests import alter_client_quotas

QUOTA = 1 << 20
QUIET_BYTES = 8 << 20


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        broker = BrokerProcess(
            Path(tmp) / "data", overrides=(f"quota.window.num={args.window_num}",)
        ).start()
        try:
            b = broker.bootstrap
            with Client(b) as client:
                (entry,) = client.call(
                    alter_client_quotas([([("client-id", "flood")], {"producer_byte_rate": QUOTA})])
                ).entries
                assert entry.error_code == 0, entry
            create_topic(b, "flooded", partitions=1)
            create_topic(b, "quiet", partitions=1)
            flood, quiet = Flood(b, "flooded", "flood"), Flood(b, "quiet", "quiet")
            started = time.monotonic()
            thread = threading.Thread(target=flood.run, args=(args.warmup + args.seconds,))
            thread.start()
            time.sleep(args.warmup)
            quiet_started = time.monotonic()
            quiet.run(120.0, bytes_max=QUIET_BYTES)
            quiet_s = time.monotonic() - quiet_started
            thread.join()
        finally:
            broker.kill()
    measured = flood.bytes_between(started + args.warmup, started + args.warmup + args.seconds)
    result = {
        "timestamp": stamp,
        "machine": {
            **machine(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "settings": {
            "quota_bytes_per_s": QUOTA,
            "window": f"{args.window_num} x 1 s",
            "warmup_s": args.warmup,
            "measured_s": args.seconds,
            "record_bytes": 10_000,
        },
        "flood_rate_over_quota": measured / args.seconds / QUOTA,
        "flood_throttle_max_ms": flood.throttle_max_ms,
        "quiet_mib_per_s": QUIET_BYTES / quiet_s / (1 << 20),
        "quiet_throttle_max_ms": quiet.throttle_max_ms,
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.quota_flood",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="measured flood seconds")
    parser.add_argument("--warmup", type=float, default=12.0, help="seconds before measuring")
    parser.add_argument("--window-num", type=int, default=11, help="quota.window.num")
    parser.add_argument("--quick", action="store_true", help="6 s flood, 3 x 1 s window")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.warmup, args.window_num = 4.0, 2.0, 3
    result = run(args)
    out = save_result("quota_flood", result)
    print(
        f"flood {result['flood_rate_over_quota']:.2f} x quota "
        f"(throttle max {result['flood_throttle_max_ms']} ms); quiet "
        f"{result['quiet_mib_per_s']:.1f} MiB/s (throttle max {result['quiet_throttle_max_ms']} ms)"
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
