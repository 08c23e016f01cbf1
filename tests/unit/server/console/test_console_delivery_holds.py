"""The console's share-group view of Shoal's key-ordered and scheduled delivery: the
group's extensions (from its real group configs), and per loaded share-partition what
they hold back (`DeliveryHolds`, here values the test gives in place of the core's)
with each entry's `key_blocked` and `deliver_at_ms`; and console.js rendering that
view (run under node, without a browser, when node is installed).

A real broker's services on a manual clock (`ShareRig`), no socket."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shoal.server.broker import Broker
from shoal.server.observability.console.routes import STATIC_DIR
from shoal.server.observability.http_app import build_app
from tests.support.asgi import call
from tests.support.delivery_holds import DUE_MS, give_holds, mark_entries, split_blocked_and_due
from tests.support.share_rig import ShareRig

NODE = shutil.which("node")
NODE_TIMEOUT_S = 60


def _view(broker: Broker) -> Any:
    answer = call(build_app(broker.services), "GET", "/console/api/share-groups/g")
    assert answer.status == 200
    return answer.json()


def test_a_group_without_the_extensions_shows_nothing_held(broker: Broker) -> None:
    ShareRig(broker)
    view = _view(broker)
    assert view["delivery"] == {"paused": False, "key_order": False, "delay_max_ms": 0}
    (partition,) = view["partitions"]
    assert partition["holds"] == {
        "blocked_keys": 0,
        "blocked_records": 0,
        "top_blocked_keys": [],
        "scheduled_records": 0,
        "next_due_ms": None,
        "next_due_in_ms": None,
        "malformed_deliver_at": 0,
    }
    assert [(e["key_blocked"], e["deliver_at_ms"]) for e in partition["inflight"]] == [
        (False, None)
    ]


def test_the_view_shows_blocked_keys_and_records_waiting_for_their_time(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = ShareRig(broker)
    configs = {"shoal.share.delivery.order": "key", "shoal.share.delivery.delay.max.ms": "60000"}
    asyncio.run(broker.group_configs.alter("g", configs))
    give_holds(monkeypatch)
    mark_entries(monkeypatch, split_blocked_and_due)
    rig.clock.advance(30_000)  # the wall clock moves with it: due in 60 s
    view = _view(broker)
    assert view["delivery"] == {"paused": False, "key_order": True, "delay_max_ms": 60_000}
    (partition,) = view["partitions"]
    assert partition["holds"] == {
        "blocked_keys": 2,
        "blocked_records": 7,
        "top_blocked_keys": [
            {"key": "k1", "key_hex": "6b31", "held_records": 5},
            {"key": "\ufffd", "key_hex": "ff", "held_records": 2},
        ],
        "scheduled_records": 3,
        "next_due_ms": DUE_MS,
        "next_due_in_ms": 60_000,
        "malformed_deliver_at": 1,
    }
    assert [
        (e["first_offset"], e["last_offset"], e["key_blocked"], e["deliver_at_ms"])
        for e in partition["inflight"]
    ] == [(10, 12, True, None), (13, 14, False, DUE_MS)]
    rig.clock.advance(90_000)
    (later,) = _view(broker)["partitions"]
    assert later["holds"]["next_due_in_ms"] == 0, "past due: never negative"


RENDER = """
const vm = require("vm");
const fs = require("fs");
const element = { addEventListener() {}, classList: { add() {}, remove() {} } };
const sandbox = {
  document: { addEventListener() {}, getElementById: () => element, querySelectorAll: () => [] },
  window: { addEventListener() {} }, location: { hash: "" }, setInterval() {}, setTimeout() {},
  fetch: async () => ({ ok: true, status: 200, json: async () => ({}) }), console,
  Date, Math, JSON, Number, String, encodeURIComponent,
};
vm.createContext(sandbox);
vm.runInContext(fs.readFileSync(process.argv[2], "utf8"), sandbox);
const group = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(vm.runInContext("renderShareGroup", sandbox)(group));
"""


def _rendered(tmp_path: Path, view: Any) -> str:
    assert NODE is not None
    script = tmp_path / "render.js"
    script.write_text(RENDER)
    done = subprocess.run(
        [NODE, str(script), str(STATIC_DIR / "console.js")],
        input=json.dumps(view),
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        check=True,
    )
    return done.stdout


def _cell_classes(html: str, first_offset: int) -> set[str]:
    """The classes of the window strip's cell of the entry starting at `first_offset`."""
    found = re.search(rf'<span class="([^"]*)"[^>]*data-first="{first_offset}"', html)
    assert found is not None, first_offset
    return set(found.group(1).split())


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_console_js_renders_the_holds(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rig = ShareRig(broker)
    plain = _rendered(tmp_path, _view(broker))
    assert "Blocked keys" not in plain and "Waiting for their time" not in plain
    assert 'data-ext="key-order"' not in plain

    configs = {"shoal.share.delivery.order": "key", "shoal.share.delivery.delay.max.ms": "60000"}
    asyncio.run(broker.group_configs.alter("g", configs))
    give_holds(monkeypatch)
    mark_entries(monkeypatch, split_blocked_and_due)
    rig.clock.advance(30_000)
    html = _rendered(tmp_path, _view(broker))
    assert 'data-ext="key-order"' in html and 'data-ext="scheduled"' in html
    assert '<b class="blocked-keys">2</b>' in html
    assert '<b class="blocked-records">7</b>' in html
    assert '<b class="scheduled-records">3</b>' in html
    assert '<b class="malformed">1</b>' in html
    assert ">60 s</span>" in html  # next due, counting down from the view's time left
    assert '<td title="0x6b31">k1</td><td class="num">5</td>' in html
    assert '<td title="0xff">\ufffd</td><td class="num">2</td>' in html
    assert _cell_classes(html, 10) == {"cell", "held-key"}
    assert _cell_classes(html, 13) == {"cell", "held-time"}
    assert '<td class="held">by key</td>' in html
    assert "until 2023-11-14T22:14:50Z" in html  # 13-14's shoal.deliver.at time
