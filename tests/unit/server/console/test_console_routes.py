"""The console's routes against a real broker's services (built without a socket, on
a manual clock): what the JSON views show, the in-flight window following
acquisitions and acknowledgements, the event stream, and the write actions' flag,
same-origin check and the coordinator's own refusals."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.group.committed_offsets import OffsetToCommit
from shoal.protocol.share import AcknowledgeType
from shoal.server.broker import Broker
from shoal.server.observability.console.routes import Console
from shoal.server.observability.http_app import build_app
from shoal.share.acknowledge import AckBatch
from tests.support.asgi import call, post_json
from tests.support.share_rig import ShareRig, manual_broker
from tests.unit.log.batches import append, make_batch

WRITE = {"x-shoal-console": "1"}


@pytest.fixture
def writable(tmp_path: Path) -> Iterator[Broker]:
    built = manual_broker(tmp_path, **{"console.allow.writes": "true"})
    yield built
    built.logs.close()


def _entries(view: dict[str, object]) -> list[tuple[int, int, str, int, str | None]]:
    (partition,) = view["partitions"]  # type: ignore[misc]
    return [
        (e["first_offset"], e["last_offset"], e["state"], e["delivery_count"], e["holder"])
        for e in partition["inflight"]
    ]


def test_topics_show_partitions_offsets_size_and_retention(broker: Broker) -> None:
    broker.logs.create_topic("orders", partitions=2, configs={"retention.ms": 3_600_000})
    partition = broker.logs.partition("orders", 1)
    assert partition is not None
    append(partition, make_batch(7))
    answer = call(build_app(broker.services), "GET", "/console/api/topics")
    assert answer.status == 200
    (orders,) = [t for t in answer.json()["topics"] if t["name"] == "orders"]
    assert [
        (p["partition"], p["log_start_offset"], p["log_end_offset"]) for p in orders["partitions"]
    ] == [
        (0, 0, 0),
        (1, 0, 7),
    ]
    assert orders["records"] == 7
    assert orders["size_bytes"] == partition.size_bytes > 0
    assert (orders["retention_ms"], orders["retention_bytes"]) == (3_600_000, -1)


def test_share_group_view_follows_the_in_flight_window(broker: Broker) -> None:
    rig = ShareRig(broker)
    app = build_app(broker.services)
    view = call(app, "GET", "/console/api/share-groups/g").json()
    assert view["state"] == "Stable"
    (member,) = view["members"]
    assert (member["member_id"], member["client_id"]) == ("m1", "client-1")
    assert member["assignment"] == [{"topic": "t", "partitions": [0]}]
    (partition,) = view["partitions"]
    assert (partition["start_offset"], partition["end_offset"], partition["log_end_offset"]) == (
        10,
        14,
        15,
    )
    assert partition["lag"] == 5
    assert _entries(view) == [(10, 14, "acquired", 1, "m1")]
    assert partition["inflight"][0]["lock_expires_in_ms"] == 30_000

    rig.clock.advance(4_000)
    rig.acknowledge(
        AckBatch(10, 11, (int(AcknowledgeType.ACCEPT),)),
        AckBatch(12, 12, (int(AcknowledgeType.RELEASE),)),
    )
    view = call(app, "GET", "/console/api/share-groups/g").json()
    assert _entries(view) == [
        (12, 12, "available", 1, None),
        (13, 13, "acquired", 1, "m1"),
        (14, 14, "acquired", 1, "m1"),
    ]
    (partition,) = view["partitions"]
    assert (partition["start_offset"], partition["lag"]) == (12, 3)
    assert partition["inflight"][1]["lock_expires_in_ms"] == 26_000

    listed = call(app, "GET", "/console/api/share-groups").json()["groups"]
    assert listed == [{"group_id": "g", "state": "Stable", "members": 1}]
    assert call(app, "GET", "/console/api/share-groups/nope").status == 404


def test_the_window_view_is_capped_by_console_inflight_max_records(tmp_path: Path) -> None:
    broker = manual_broker(tmp_path, **{"console.inflight.max.records": "2"})
    try:
        rig = ShareRig(broker)
        rig.acknowledge(AckBatch(10, 10, (int(AcknowledgeType.RELEASE),)))
        view = call(build_app(broker.services), "GET", "/console/api/share-groups/g").json()
        assert _entries(view) == [(10, 10, "available", 1, None), (11, 11, "acquired", 1, "m1")]
        assert view["partitions"][0]["inflight_truncated"] is True
    finally:
        broker.logs.close()


def test_event_stream_sends_the_view_then_each_change(broker: Broker) -> None:
    rig = ShareRig(broker)
    console = Console(broker.services, event_interval_ms=1, streams_max=1)

    async def scenario() -> tuple[dict[str, object], dict[str, object], int]:
        events = console.share_group_events("g")
        first = json.loads((await events.__anext__()).removeprefix("data: "))
        assert console.streams_open == 1
        refused = await _status(console, "/console/api/share-groups/g/events")
        rig.acknowledge(AckBatch(10, 14, (int(AcknowledgeType.ACCEPT),)))
        second = json.loads((await events.__anext__()).removeprefix("data: "))
        await events.aclose()
        return first, second, refused

    first, second, refused = asyncio.run(scenario())
    assert _entries(first) == [(10, 14, "acquired", 1, "m1")]
    assert _entries(second) == []
    assert second["partitions"][0]["start_offset"] == 15  # type: ignore[index]
    assert refused == 503, "one stream open, the limit is one"
    assert console.streams_open == 0


async def _status(console: Console, path: str) -> int:
    from starlette.applications import Starlette

    from tests.support.asgi import call_async

    return (await call_async(Starlette(routes=console.routes()), "GET", path)).status


def test_pages_and_static_files_are_served(broker: Broker) -> None:
    app = build_app(broker.services)
    page = call(app, "GET", "/console/")
    assert page.status == 200 and b"console.js" in page.body
    assert call(app, "GET", "/console/static/console.js").status == 200
    assert call(app, "GET", "/console/static/console.css").status == 200
    assert call(app, "GET", "/console").status in (307, 302)
    overview = call(app, "GET", "/console/api/overview").json()
    assert (overview["node_id"], overview["allow_writes"]) == (1, False)


def test_writes_are_refused_unless_allowed(broker: Broker) -> None:
    ShareRig(broker).leave()
    app = build_app(broker.services)
    answer = post_json(
        app, "/console/api/share-groups/g/reset-offsets", {"to": "earliest"}, **WRITE
    )
    assert answer.status == 403 and "console.allow.writes" in answer.json()["message"]
    assert post_json(app, "/console/api/groups/g/delete", {}, **WRITE).status == 403
    assert call(app, "GET", "/console/api/share-groups/g").status == 200, "nothing was deleted"


def test_writes_need_the_console_header_and_the_same_origin(writable: Broker) -> None:
    ShareRig(writable).leave()
    app = build_app(writable.services)
    path = "/console/api/share-groups/g/reset-offsets"
    assert post_json(app, path, {"to": "earliest"}).status == 403
    cross = post_json(app, path, {"to": "earliest"}, origin="http://evil.example", **WRITE)
    assert cross.status == 403
    same = post_json(app, path, {"to": "earliest"}, origin="http://127.0.0.1:9404", **WRITE)
    assert same.status == 200
    assert call(app, "GET", path).status == 405, "GET never writes"


def test_share_group_reset_and_delete_apply_the_coordinator_checks(writable: Broker) -> None:
    rig = ShareRig(writable)
    app = build_app(writable.services)
    reset = "/console/api/share-groups/g/reset-offsets"
    busy = post_json(app, reset, {"to": "earliest"}, **WRITE)
    assert (busy.status, busy.json()["error"]) == (409, "NON_EMPTY_GROUP")
    busy_delete = post_json(app, "/console/api/groups/g/delete", {}, **WRITE)
    assert (busy_delete.status, busy_delete.json()["error"]) == (409, "NON_EMPTY_GROUP")
    assert post_json(app, reset, {"to": "sideways"}, **WRITE).status == 400

    rig.leave()
    done = post_json(app, reset, {"to": "earliest"}, **WRITE)
    assert done.status == 200
    assert done.json()["reset"] == [{"topic": "t", "partition": 0, "offset": 0}]
    view = call(app, "GET", "/console/api/share-groups/g").json()
    assert view["partitions"][0]["start_offset"] == 0
    assert view["state"] == "Empty"

    deleted = post_json(app, "/console/api/groups/g/delete", {}, **WRITE)
    assert deleted.status == 200
    assert call(app, "GET", "/console/api/share-groups/g").status == 404
    assert post_json(app, "/console/api/groups/g/delete", {}, **WRITE).status == 404


def test_consumer_group_lag_reset_and_delete(writable: Broker) -> None:
    writable.logs.create_topic("c", partitions=2, configs={})
    for index, count in ((0, 8), (1, 3)):
        partition = writable.logs.partition("c", index)
        assert partition is not None
        append(partition, make_batch(count))
    errors = writable.group_service.classic.commit_offsets(
        group_id="cg",
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=[OffsetToCommit(topic="c", partition=0, offset=2, leader_epoch=-1, metadata="")],
        api_version=9,
    )
    assert all(e.error is None for e in errors)
    app = build_app(writable.services)
    (listed,) = call(app, "GET", "/console/api/consumer-groups").json()["groups"]
    assert (listed["group_id"], listed["state"], listed["lag"]) == ("cg", "Empty", 6)
    view = call(app, "GET", "/console/api/consumer-groups/cg").json()
    assert [
        (p["topic"], p["partition"], p["committed_offset"], p["lag"]) for p in view["partitions"]
    ] == [("c", 0, 2, 6)]
    reset = post_json(
        app, "/console/api/consumer-groups/cg/reset-offsets", {"to": "latest"}, **WRITE
    )
    assert reset.status == 200
    view = call(app, "GET", "/console/api/consumer-groups/cg").json()
    assert [(p["committed_offset"], p["lag"]) for p in view["partitions"]] == [(8, 0)]
    assert post_json(app, "/console/api/groups/cg/delete", {}, **WRITE).status == 200
    assert call(app, "GET", "/console/api/consumer-groups/cg").status == 404


def test_charts_sample_rates_and_lag(broker: Broker) -> None:
    ShareRig(broker)
    console = Console(broker.services)
    totals = iter([0.0, 50.0, 50.0])
    samples = []
    for _ in range(3):
        sample = asyncio.run(console.sample())
        sample = dataclasses.replace(sample, totals=sample.totals | {"records_in": next(totals)})
        samples.append(sample)
        broker.clock.advance(5_000)  # type: ignore[attr-defined]
    for sample in samples:
        console.history.record(sample)
    series = console.history.series()
    assert series["rates"]["records_in"] == [10.0, 0.0]
    assert series["gauges"]["share_lag"] == [5.0, 5.0]
    assert len(series["t"]) == 2
