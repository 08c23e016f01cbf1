"""A restarted broker answers nothing before it is ready (docs/performance/startup.md): its listener
is bound only after every log is recovered and every coordinator loaded, so the first
request answered after a kill -9 already sees every topic, partition and record."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from shoal.client.operations import Disconnected
from shoal.client.requests import LATEST_TIMESTAMP, list_offsets, metadata
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, flush_all, producer
from tests.support.wire import call

TOPIC = "restarted"
PARTITIONS = 3
RECORDS = 300


def _first_answers(bootstrap: str, stop: threading.Event, out: list[Any]) -> None:
    """Poll Metadata and ListOffsets(latest) on one connection until answered."""
    offsets = list_offsets({(TOPIC, p): LATEST_TIMESTAMP for p in range(PARTITIONS)})
    while not stop.is_set():
        try:
            out.extend(call(bootstrap, metadata(None), offsets, timeout_s=10))
            return
        except (Disconnected, OSError, TimeoutError):  # not listening yet: poll again
            stop.wait(0.005)


def test_the_first_answers_after_a_kill_come_from_a_loaded_broker(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        create_topic(broker.bootstrap, TOPIC, partitions=PARTITIONS)
        p = producer(broker.bootstrap, acks="all")
        for i in range(RECORDS):
            p.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
        flush_all(p)
        broker.kill()
        answers: list[Any] = []
        stop = threading.Event()
        poller = threading.Thread(
            target=_first_answers, args=(broker.bootstrap, stop, answers), daemon=True
        )
        poller.start()  # polling from before the spawn
        broker.start()
        poller.join(60)
        stop.set()
        assert len(answers) == 2, "no answer within 60 s of the restart"
        topics, listed = answers
        names = {t.name: len(t.partitions) for t in topics.topics}
        assert names[TOPIC] == PARTITIONS
        assert {"__consumer_offsets", "__share_group_state"} <= set(names)
        ends = {int(part.partition_index): int(part.offset) for part in listed.topics[0].partitions}
        assert all(part.error_code == 0 for part in listed.topics[0].partitions)
        assert ends == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
    finally:
        broker.kill()
