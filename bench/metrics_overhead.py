"""What the metrics cost: broker CPU of share consumption with `metrics.listener` on
and off (the goal: the metrics must add < 2% to share-consume CPU at full load).

Run from the repository root:

    .venv/bin/python -m bench.metrics_overhead            # 3 rounds of 100k x 1 KiB
    .venv/bin/python -m bench.metrics_overhead --quick    # 1 round of 10k, to try it

Each round starts two brokers in turn (tests/support/broker.py), one without and one
with `metrics.listener=http://127.0.0.1:0` (which also turns on the per-request
counters and histograms; without it only the few always-on counters run), the order
alternating between rounds. On each broker: produce R records of V bytes to a topic
of P partitions, then run bench/share_consume.py's share phase (N ShareConsumer
processes, implicit acknowledgement, default settings) under its CPU meter. While the
listener is on, this process scrapes `/metrics` every `--scrape-interval` seconds
(default 1 s, harsher than Prometheus's usual 15 s) for the whole phase, so the
scrapes' own cost counts.

The figure compared is the broker's CPU seconds per 100k records consumed (utime +
stime from /proc over the phase); the overhead is the median "on" over the median
"off", minus one. On a shared machine the noise between rounds is often larger than
the difference: the per-round figures and the load averages are in the JSON
(bench/results/metrics_overhead.json) to judge that.

The cost of a scrape is measured after each "on" phase, with the share-partitions
still loaded: the broker's CPU over 20 scrapes, less its idle CPU (`scrape_cpu_ms`);
at one scrape per second that is `broker_cpu_percent_of_scrapes_every_1s` of the
phase's broker CPU (a 15 s Prometheus interval costs 15 times less).

A second, steadier estimate of the per-request part: the "on" runs' final scrape
says how many requests of each API the phase served; the cost of one request's
metrics (the handler wrapper's timing and count, the observer, the connection's
total time) is measured in this process on a broker built in memory with a
ShareFetch answering 500 records and acknowledging 500 (`per_request_us`); requests
x that cost / the broker CPU of the phase is the share of the broker's CPU the
request metrics took.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.metrics import METRICS_OVERRIDE, metrics_url, scrape

from bench.produce_fetch import CpuMeter, machine, save_result
from bench.share_consume import BROKER_OVERRIDES, produce, share_phase


def _scraping(url: str, interval_s: float, stop: threading.Event, took_s: list[float]) -> None:
    while not stop.wait(interval_s):
        started = time.perf_counter()
        scrape(url)
        took_s.append(time.perf_counter() - started)


SCRAPES_MEASURED = 20


def _scrape_cpu_ms(pid: int, url: str) -> float:
    """Broker CPU ms per scrape, measured right after the phase (the share-partitions
    still loaded): broker CPU over SCRAPES_MEASURED scrapes, less that of as long idle."""
    meter = CpuMeter(pid)
    with meter:
        time.sleep(1.0)
    idle_s_per_s = meter.broker_percent / 100
    with meter:
        for _ in range(SCRAPES_MEASURED):
            scrape(url)
    used_s = meter.broker_percent / 100 * meter.seconds - idle_s_per_s * meter.seconds
    return max(0.0, used_s) * 1000 / SCRAPES_MEASURED


def one_broker(
    args: argparse.Namespace, *, metrics_on: bool, tmp: Path, tag: str
) -> dict[str, Any]:
    overrides = (*BROKER_OVERRIDES, METRICS_OVERRIDE) if metrics_on else BROKER_OVERRIDES
    broker = BrokerProcess(tmp / f"data-{tag}", overrides=overrides).start()
    try:
        bootstrap = broker.bootstrap
        topic = f"bench-metrics-{tag}"
        create_topic(bootstrap, topic, partitions=args.partitions)
        produce(
            bootstrap,
            topic,
            partitions=args.partitions,
            records=args.records,
            value_bytes=args.value_bytes,
        )
        stop = threading.Event()
        scrapes: list[float] = []
        scraper = None
        if metrics_on:
            url = metrics_url(broker)
            scraper = threading.Thread(
                target=_scraping, args=(url, args.scrape_interval, stop, scrapes), daemon=True
            )
            scraper.start()
        load_before = os.getloadavg()[0]
        meter = CpuMeter(broker.pid, include_children=True)
        try:
            phase = share_phase(
                bootstrap,
                topic,
                consumers=args.consumers,
                partitions=args.partitions,
                records=args.records,
                value_bytes=args.value_bytes,
                meter=meter,
            )
        finally:
            stop.set()
            if scraper is not None:
                scraper.join(30)
        broker_cpu_s = meter.broker_percent * meter.seconds / 100
        served = 0.0
        scrape_cpu_ms = None
        if metrics_on:
            scrape_cpu_ms = _scrape_cpu_ms(broker.pid, url)
            final = scrape(url)
            served = sum(
                value
                for (name, _labels), value in final.items()
                if name == "kafka_network_requestmetrics_requests_total"
            )
        return {
            "metrics": "on" if metrics_on else "off",
            "records": args.records,
            "seconds": phase.seconds,
            "records_per_s": phase.records_per_s,
            "broker_cpu_s": broker_cpu_s,
            "broker_cpu_s_per_100k": broker_cpu_s * 100_000 / args.records,
            "broker_cpu_percent": meter.broker_percent,
            "scrapes": len(scrapes),
            "scrape_ms_median": 1000 * statistics.median(scrapes) if scrapes else None,
            "requests_served": served,
            "scrape_cpu_ms": scrape_cpu_ms,
            "broker_cpu_percent_of_scrapes_every_1s": (
                None
                if scrape_cpu_ms is None
                else scrape_cpu_ms / 1000 * 100 * meter.seconds / broker_cpu_s
            ),
            "load_average_1m_before": load_before,
            "load_average_1m_after": os.getloadavg()[0],
        }
    finally:
        broker.kill()


def per_request_us(samples: int = 20_000) -> float:
    """CPU microseconds of one ShareFetch's metrics (500 records acquired, 500
    acknowledged), measured on a broker built in memory."""
    from types import SimpleNamespace as Fake

    from shoal.clock import ManualClock
    from shoal.config import BrokerConfig
    from shoal.server.broker import Broker
    from shoal.server.observability.request_metrics import SHARE_FETCH, _share_fetch

    with tempfile.TemporaryDirectory(prefix="shoal-bench-metrics-cost-") as tmp:
        raw = {"log.dirs": tmp, "metrics.listener": "http://127.0.0.1:0"}
        broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
        try:
            broker.logs.create_topic("t", partitions=1, configs={})
            info = broker.logs.topic("t")
            assert info is not None
            ack = Fake(first_offset=0, last_offset=499, acknowledge_types=[1])
            request = Fake(
                group_id="g",
                topics=[
                    Fake(
                        topic_id=info.topic_id,
                        partitions=[Fake(partition_index=0, acknowledgement_batches=[ack])],
                    )
                ],
            )
            answered = Fake(
                partition_index=0,
                error_code=0,
                acknowledge_error_code=0,
                records=b"x" * 100_000,
                acquired_records=[Fake(first_offset=500, last_offset=999)],
            )
            response = Fake(
                error_code=0, responses=[Fake(topic_id=info.topic_id, partitions=[answered])]
            )
            ctx = Fake(services=broker.services, api_key=SHARE_FETCH, api_version=1)
            metrics = broker.metrics
            frame = SHARE_FETCH.to_bytes(2, "big") + b"\x00\x01"
            started = time.process_time()
            for _ in range(samples):
                metrics.request_handled(SHARE_FETCH, 1, 0.001)
                _share_fetch(metrics, ctx, request, response)  # type: ignore[arg-type]
                metrics.request_done(frame, 0.002)
            return (time.process_time() - started) / samples * 1e6
        finally:
            broker.logs.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-metrics-") as tmp:
        for round_index in range(args.rounds):
            order = (False, True) if round_index % 2 == 0 else (True, False)
            for metrics_on in order:
                result = one_broker(
                    args,
                    metrics_on=metrics_on,
                    tmp=Path(tmp),
                    tag=f"{round_index}-{'on' if metrics_on else 'off'}",
                )
                result["round"] = round_index
                runs.append(result)
                print(
                    f"round {round_index} metrics {result['metrics']:>3}: "
                    f"{result['records_per_s']:>9,.0f} records/s, broker "
                    f"{result['broker_cpu_s_per_100k']:.2f} CPU s per 100k records "
                    f"({result['scrapes']} scrapes of {result['scrape_ms_median'] or 0:.0f} ms, "
                    f"load {result['load_average_1m_before']:.1f})",
                    flush=True,
                )
    cost_us = per_request_us()
    for r in runs:
        if r["metrics"] == "on" and r["broker_cpu_s"] > 0:
            r["request_metrics_cpu_percent"] = (
                100 * r["requests_served"] * cost_us / 1e6 / r["broker_cpu_s"]
            )
    off = statistics.median(r["broker_cpu_s_per_100k"] for r in runs if r["metrics"] == "off")
    on = statistics.median(r["broker_cpu_s_per_100k"] for r in runs if r["metrics"] == "on")
    return {
        "timestamp": stamp,
        "machine": machine(),
        "settings": {
            "records": args.records,
            "value_bytes": args.value_bytes,
            "consumers": args.consumers,
            "partitions": args.partitions,
            "rounds": args.rounds,
            "scrape_interval_s": args.scrape_interval,
            "broker_overrides": list(BROKER_OVERRIDES),
        },
        "runs": runs,
        "median_broker_cpu_s_per_100k": {"off": off, "on": on},
        "overhead_percent": 100 * (on / off - 1) if off > 0 else None,
        "per_request_us": cost_us,
        "request_metrics_cpu_percent": [
            r["request_metrics_cpu_percent"] for r in runs if "request_metrics_cpu_percent" in r
        ],
        "note": "2-core machine shared with other engineers' test runs: see load averages",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.metrics_overhead",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=100_000, help="R (default 100,000)")
    parser.add_argument("--value-bytes", type=int, default=1024, help="V (default 1024)")
    parser.add_argument("--consumers", type=int, default=2, help="N (default 2)")
    parser.add_argument("--partitions", type=int, default=2, help="P (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of off+on (default 3)")
    parser.add_argument(
        "--scrape-interval", type=float, default=1.0, help="seconds between scrapes (1)"
    )
    parser.add_argument("--quick", action="store_true", help="1 round of 10,000 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.rounds = 10_000, 1
    if args.records % args.partitions:
        parser.error("--records must be a multiple of --partitions")
    result = run(args)
    out = save_result("metrics_overhead", result)
    medians = result["median_broker_cpu_s_per_100k"]
    overhead = result["overhead_percent"]
    print(
        f"\nbroker CPU s per 100k records, median: off {medians['off']:.2f}, on "
        f"{medians['on']:.2f}; overhead {overhead:+.1f}%"
    )
    print(
        f"request metrics: {result['per_request_us']:.1f} us CPU per ShareFetch; "
        "share of the broker's CPU in the 'on' runs (requests served x that cost): "
        + ", ".join(f"{p:.2f}%" for p in result["request_metrics_cpu_percent"])
    )
    scrape_ms = [r["scrape_cpu_ms"] for r in result["runs"] if r.get("scrape_cpu_ms") is not None]
    print(
        "scrape: "
        + ", ".join(f"{ms:.1f}" for ms in scrape_ms)
        + " ms broker CPU each; at one per second, of the phase's broker CPU: "
        + ", ".join(
            f"{r['broker_cpu_percent_of_scrapes_every_1s']:.2f}%"
            for r in result["runs"]
            if r.get("broker_cpu_percent_of_scrapes_every_1s") is not None
        )
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
