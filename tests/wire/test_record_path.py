"""A broker run with SHOAL_RECORD_PATH writes, at its stop, one event per request with
the offsets each Produce appended and each ShareFetch acquired
(server/observability/record_path.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoal.client.share_requests import partitions_of
from tests.support.broker import BrokerProcess
from tests.support.share_wire import fetch_now, join, produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

PRODUCE, SHARE_FETCH = 0, 78


def test_the_record_path_of_a_produce_and_a_share_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events_path = tmp_path / "events.jsonl"
    monkeypatch.setenv("SHOAL_RECORD_PATH", str(events_path))
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        topic, group = topic_name("path"), topic_name("path-group")
        topic_id = create_topic(broker.bootstrap, topic)
        set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
        member = join(broker.bootstrap, group, topic)
        produce_values(broker.bootstrap, topic, 3, 2)
        response = call1(
            broker.bootstrap, fetch_now(group, member, 0, partitions=[(topic_id, 0)]).build(1)
        )
        assert partitions_of(response), response
        assert broker.stop() == 0
    finally:
        broker.kill()
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    produces = [e for e in events if e["api"] == PRODUCE]
    assert [e["produced"] for e in produces] == [[[topic, 0, 0, 2]], [[topic, 0, 3, 4]]]
    (fetch,) = [e for e in events if e["api"] == SHARE_FETCH]
    assert fetch["acquired"] == [[topic, 0, 0, 4]]
    for event in events:
        assert event["read_ns"] <= event["written_ns"]
    assert produces[1]["written_ns"] <= fetch["read_ns"]
