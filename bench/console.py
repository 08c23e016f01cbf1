"""Answer times of the web console's pages on a broker with 1,000 topics and 100
share groups (the goal: < 100 ms each).

Run from the repository root:

    .venv/bin/python -m bench.console            # 1,000 topics, 100 share groups
    .venv/bin/python -m bench.console --quick    # 100 topics, 10 groups, to try it

The broker runs in this process with the HTTP app on uvicorn in its event loop
(tests/support/http_broker.py, with its HTTP listener). Set-up through the Kafka
protocol with Shoal's client: `--topics` one-partition topics, 20 records in each of
the topics the groups use; `--groups` share groups (share.auto.offset.reset=earliest),
each with one member subscribed to 10 topics (group i: topics 10i..10i+9 modulo the
topic count), every group's share-partitions initialised; the first 10 groups also
ShareFetch once, so their share-partitions are loaded with 20 acquired records each
(the in-flight window the group page draws).

Each page is then fetched `--requests` times over HTTP (a new connection each, like a
browser's first load; urllib on loopback), one at a time: the answer time is from
sending the request to the last byte. Pages: the index, topics, share groups, one
share group with in-flight records (`share-groups/<g>`), consumer groups, charts, and
the chart sampler's own work, timed in the broker's loop where it runs every 5 s
(`sample`: the lag over every group; `sample-block`: its longest stretch between
two yields of the loop, i.e. what a Kafka request may wait for it; not pages, so
outside the target).
Figures: median, p95 and max in ms.

Results: an aligned table on stdout and JSON in bench/results/console.json with
machine information (the load average says how shared the machine was).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.batches import values_batch
from tests.support.http_broker import InProcessBroker, running_in_process
from tests.support.share_groups import Member
from tests.support.share_wire import fetch_now, set_group_configs
from tests.support.topics import produce
from tests.support.wire import open_connection, send, with_connection

from bench.produce_fetch import machine, save_result
from shoal.client.aio import Connection
from shoal.client.share_requests import IdPartition

TOPICS_PER_GROUP = 10
RECORDS_PER_TOPIC = 20
LOADED_GROUPS = 10
TARGET_MS = 100.0


def _topic(i: int) -> str:
    return f"console-bench-{i:04d}"


def _create_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for start in range(0, len(names), 200):
        chunk = [
            NewTopic(name, num_partitions=1, replication_factor=1)
            for name in names[start : start + 200]
        ]
        for future in admin.create_topics(chunk, operation_timeout=60, request_timeout=60).values():
            future.result(timeout=60)


def set_up(broker: InProcessBroker, *, topics: int, groups: int) -> Holder:
    """Topics, records and groups; the returned holder keeps the first groups' share
    sessions open (and their members heartbeating) until it is stopped, so their
    share-partitions stay loaded with acquired records."""
    _create_topics(broker.bootstrap, [_topic(i) for i in range(topics)])
    used = sorted(
        {
            (g * TOPICS_PER_GROUP + k) % topics
            for g in range(groups)
            for k in range(TOPICS_PER_GROUP)
        }
    )
    for i in used:
        produce(broker.bootstrap, _topic(i), values_batch(RECORDS_PER_TOPIC))
    plan = []
    for g in range(groups):
        group_id = f"console-bench-group-{g:03d}"
        set_group_configs(broker.bootstrap, group_id, {"share.auto.offset.reset": "earliest"})
        names = [_topic((g * TOPICS_PER_GROUP + k) % topics) for k in range(TOPICS_PER_GROUP)]
        plan.append((group_id, names))
    for group_id, names in plan[LOADED_GROUPS:]:
        with_connection(broker.bootstrap, lambda conn, gid=group_id, n=names: _join(conn, gid, n))
    return Holder(broker.bootstrap, plan[:LOADED_GROUPS]).start()


async def _join(conn: Connection, group_id: str, topics: list[str]) -> Member:
    member = Member(group_id)
    await member.join(conn, topics)
    deadline = time.monotonic() + 30
    while not member.assignment:  # initialisation lands with a later heartbeat
        assert time.monotonic() < deadline, f"{group_id}: no assignment"
        await asyncio.sleep(0.05)
        await member.beat(conn)
    return member


class Holder:
    """Members that joined, fetched once and hold their records on open connections."""

    def __init__(self, bootstrap: str, plan: list[tuple[str, list[str]]]) -> None:
        self.bootstrap = bootstrap
        self.plan = plan
        self.ready = threading.Event()
        self.stop_event = threading.Event()
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="console-bench-holder", daemon=True)

    def start(self) -> Holder:
        self.thread.start()
        assert self.ready.wait(120), "the holding members never got their records"
        if self.failed is not None:
            raise self.failed
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(60)

    def _run(self) -> None:
        try:
            asyncio.run(self._hold())
        except BaseException as exc:
            self.failed = exc
            self.ready.set()
            raise

    async def _hold(self) -> None:
        held: list[tuple[Connection, Member]] = []
        try:
            for group_id, names in self.plan:
                conn = await open_connection(self.bootstrap)
                member = await _join(conn, group_id, names)
                held.append((conn, member))
                partitions: list[IdPartition] = [
                    (t, p) for t, ps in member.assignment.items() for p in ps
                ]
                fetch = fetch_now(group_id, member.member_id, 0, partitions=partitions)
                response = await send(conn, fetch)
                assert response.error_code == 0, response
            self.ready.set()
            while not self.stop_event.is_set():
                await asyncio.sleep(1)
                for conn, member in held:
                    await member.beat(conn)
        finally:
            for conn, _member in held:
                await conn.close()


def _time_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as answer:
        answer.read()
        assert answer.status == 200, (url, answer.status)
    return (time.perf_counter() - start) * 1000


def _time_sample(broker: InProcessBroker) -> tuple[float, float]:
    """(the sampler's work in ms, its longest stretch without yielding the loop),
    measured in the broker's loop: the lag of every group, one group at a time,
    as `Console.sample` computes it."""
    from shoal.server.observability.console import views

    assert broker.broker is not None
    services = broker.broker.services

    async def timed() -> tuple[float, float]:
        blocks = []
        share_ids, consumer_ids = views.lag_groups(services)
        for group_id in share_ids:
            start = time.perf_counter()
            views.share_group_lag(services, group_id)
            blocks.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(0)
        for group_id in consumer_ids:
            start = time.perf_counter()
            views.consumer_group_lag(services, group_id)
            blocks.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(0)
        return sum(blocks), max(blocks, default=0.0)

    return asyncio.run_coroutine_threadsafe(timed(), broker.loop).result(60)


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
        "max_ms": round(ordered[-1], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.topics, args.groups, args.requests = 100, 10, 10
    with (
        tempfile.TemporaryDirectory(prefix="shoal-bench-console-") as tmp,
        running_in_process(
            Path(tmp) / "data",
            {
                "group.share.session.timeout.ms": "60000",
                "group.share.max.session.timeout.ms": "60000",
            },
        ) as broker,
    ):
        setup_start = time.monotonic()
        holder = set_up(broker, topics=args.topics, groups=args.groups)
        setup_s = time.monotonic() - setup_start
        base = f"{broker.http_url}/console"
        pages = {
            "index": f"{base}/",
            "topics": f"{base}/api/topics",
            "share-groups": f"{base}/api/share-groups",
            "share-group": f"{base}/api/share-groups/console-bench-group-000",
            "consumer-groups": f"{base}/api/consumer-groups",
            "charts": f"{base}/api/charts",
        }
        for url in pages.values():
            _time_get(url)  # warm up
        results: dict[str, Any] = {}
        try:
            for name, url in pages.items():
                results[name] = _summary([_time_get(url) for _ in range(args.requests)])
            samples = [_time_sample(broker) for _ in range(args.requests)]
            results["sample"] = _summary([work for work, _ in samples])
            results["sample-block"] = _summary([block for _, block in samples])
            share_group = urllib.request.urlopen(pages["share-group"], timeout=30).read()
        finally:
            holder.stop()
    shown = json.loads(share_group)
    inflight = sum(len(p.get("inflight", [])) for p in shown["partitions"])
    assert inflight > 0, "the measured share-group page showed no in-flight records"
    print(
        f"console pages, {args.topics} topics, {args.groups} share groups (set-up {setup_s:.1f} s)"
    )
    print(f"{'page':<18}{'median ms':>11}{'p95 ms':>9}{'max ms':>9}")
    for name, row in results.items():
        print(f"{name:<18}{row['median_ms']:>11.1f}{row['p95_ms']:>9.1f}{row['max_ms']:>9.1f}")
    slow = [
        name
        for name, row in results.items()
        if not name.startswith("sample") and row["p95_ms"] > TARGET_MS
    ]
    print(
        f"target < {TARGET_MS:.0f} ms: "
        + (f"missed by {slow}" if slow else "met by every page (p95)")
    )
    out = save_result(
        "console",
        {
            "bench": "console",
            "topics": args.topics,
            "share_groups": args.groups,
            "requests_per_page": args.requests,
            "setup_s": round(setup_s, 1),
            "share_group_page_bytes": len(share_group),
            "share_group_page_inflight_entries": inflight,
            "share_group_page_partitions": len(shown["partitions"]),
            "pages": results,
            "target_ms": TARGET_MS,
            "machine": machine(),
            "note": "machine shared with other engineers' test runs; figures are noisy",
        },
    )
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
