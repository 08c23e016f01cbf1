"""Key-ordered and scheduled delivery made visible, against a real broker with the real
core: `shoal share-groups --describe` and `--browse`, the web console's JSON view and
`/metrics` all show what the share-partition holds back, while confluent-kafka
ShareConsumers (unmodified) work the group.

- Key order (`shoal.share.delivery.order=key`): consumer A holds k1's first records;
  consumer B then gets k2's and the null-keyed record but not k1's later two, which
  every view shows held back by k1, until A accepts; then B gets them and nothing is
  held.
- Scheduled delivery (`shoal.share.delivery.delay.max.ms`): of three records, one
  with `shoal.deliver.at` some seconds ahead waits (every view shows it waiting and
  its due time), one with a malformed header and one without come at once (the
  malformed one counted); the waiting one comes once due.
- A group with neither: `--describe` prints Kafka's output and nothing more.

The tool runs in process (`shoal.cli.main.main`, output read by column with
tests/support/cli.py) to spare interpreter starts; the broker is a `shoal serve`
process with its HTTP listener on.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from shoal.cli.main import main
from shoal.cli.tables import time_cell
from tests.support.broker import BrokerProcess, running
from tests.support.cli import tables
from tests.support.metrics import METRICS_OVERRIDE, metrics_url, scrape, value
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    WAIT_S,
    Got,
    alter_group_configs,
    got,
    producer,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

LOCK_MS = 60_000
DUE_IN_MS = 20_000
"""How far ahead the scheduled record's `shoal.deliver.at` is: long enough for the
describe, browse, scrape and console reads on a loaded machine, short enough to wait."""
DELAY_MAX_MS = 600_000
QUIET_S = 1.5
"""How long a consumer is polled to see that a held-back record does not come."""
HTTP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class HoldsBroker:
    process: BrokerProcess
    http_url: str

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HoldsBroker]:
    data = tmp_path_factory.mktemp("cli-share-holds") / "data"
    for process in running(data, *SHARE_TEST_BROKER_OVERRIDES, METRICS_OVERRIDE):
        yield HoldsBroker(process, metrics_url(process))


# ---- helpers


def tool(capsys: pytest.CaptureFixture[str], broker: HoldsBroker, *argv: str) -> str:
    capsys.readouterr()
    code = main(["share-groups", "--bootstrap-server", broker.bootstrap, *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def describe_out(capsys: pytest.CaptureFixture[str], broker: HoldsBroker, group: str) -> str:
    return tool(capsys, broker, "--describe", "--group", group)


def browse_out(
    capsys: pytest.CaptureFixture[str], broker: HoldsBroker, group: str, topic: str
) -> str:
    return tool(capsys, broker, "--browse", "--group", group, "--topic", topic)


def holds_table(out: str) -> list[dict[str, str]]:
    (table,) = [t for t in tables(out) if t and "BLOCKED-KEYS" in t[0]]
    return table


def entries_table(out: str) -> dict[int, dict[str, str]]:
    """--browse's rows by offset, each entry's range expanded."""
    (table,) = [t for t in tables(out) if t and "FIRST-OFFSET" in t[0]]
    return {
        offset: row
        for row in table
        for offset in range(int(row["FIRST-OFFSET"]), int(row["LAST-OFFSET"]) + 1)
    }


def console_partition(broker: HoldsBroker, group: str) -> dict[str, Any]:
    url = f"{broker.http_url}/console/api/share-groups/{group}"
    with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response:
        view = json.loads(response.read())
    (partition,) = view["partitions"]
    return {"delivery": view["delivery"], **partition}


def gauges(broker: HoldsBroker, group: str, topic: str) -> tuple[float, ...]:
    samples = scrape(broker.http_url)
    labels = {"group": group, "topic": topic, "partition": "0"}
    return tuple(
        value(samples, name, labels)
        for name in (
            "shoal_share_partition_blocked_keys",
            "shoal_share_partition_key_blocked_records",
            "shoal_share_partition_scheduled_records",
            "shoal_share_partition_malformed_deliver_at_total",
        )
    )


def produce(broker: HoldsBroker, topic: str, records: list[dict[str, Any]]) -> None:
    """One flush: the records land in one batch, in order, on partition 0."""
    p = producer(broker.bootstrap)
    for record in records:
        p.produce(topic, partition=0, **record)
    assert p.flush(60) == 0, "records still undelivered"


def poll_for(consumer: ShareConsumer, count: int) -> list[Got]:
    records: list[Got] = []
    deadline = time.monotonic() + WAIT_S
    while len(records) < count:
        assert time.monotonic() < deadline, f"only {[r.offset for r in records]} came"
        records += [got(m) for m in records_of(consumer.poll(0.2))]
    return records


def accept_all(consumer: ShareConsumer, records: list[Any]) -> None:
    for message in records:
        consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    result = consumer.commit_sync(30)
    assert result and all(error is None for error in result.values()), result


def first_messages(consumer: ShareConsumer, count: int) -> list[Any]:
    """The raw messages of polls until `count` came (to acknowledge them)."""
    messages: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while len(messages) < count:
        assert time.monotonic() < deadline, f"only {[m.offset() for m in messages]} came"
        messages += records_of(consumer.poll(0.2))
    return messages


def quiet(consumer: ShareConsumer) -> list[int]:
    """Offsets a consumer gets within QUIET_S (none expected)."""
    offsets: list[int] = []
    deadline = time.monotonic() + QUIET_S
    while time.monotonic() < deadline:
        offsets += [int(m.offset() or 0) for m in records_of(consumer.poll(0.2))]
    return offsets


# ---- the tests


def test_records_held_back_by_their_key_show_everywhere_until_the_key_clears(
    broker: HoldsBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_name("holds-key")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, topic_name("holds-key-group"), lock_ms=LOCK_MS)
    alter_group_configs(broker.bootstrap, group, {"shoal.share.delivery.order": "key"})
    produce(broker, topic, [{"key": b"k1", "value": b"a%d" % i} for i in range(3)])
    a = share_consumer(broker.bootstrap, group, [topic], explicit=True, max_poll_records=100)
    b = share_consumer(broker.bootstrap, group, [topic], explicit=True, max_poll_records=100)
    try:
        held_by_a = first_messages(a, 3)
        assert [(m.offset(), m.key()) for m in held_by_a] == [(0, b"k1"), (1, b"k1"), (2, b"k1")]
        produce(
            broker,
            topic,
            [
                {"key": b"k1", "value": b"a3"},
                {"key": b"k1", "value": b"a4"},
                {"key": b"k2", "value": b"b5"},
                {"value": b"n6"},
            ],
        )
        got_b = first_messages(b, 2)
        assert sorted(int(m.offset()) for m in got_b) == [5, 6], "k1's 3 and 4 wait for A"

        # --browse: the two k1 records are AVAILABLE and blocked by their key.
        out = browse_out(capsys, broker, group, topic)
        entries = entries_table(out)
        assert {o: (r["STATE"], r["KEY-BLOCKED"]) for o, r in entries.items()} == {
            0: ("ACQUIRED", "-"),
            1: ("ACQUIRED", "-"),
            2: ("ACQUIRED", "-"),
            3: ("AVAILABLE", "yes"),
            4: ("AVAILABLE", "yes"),
            5: ("ACQUIRED", "-"),
            6: ("ACQUIRED", "-"),
        }
        assert all(r["DELIVER-AT"] == "-" for r in entries.values())
        assert f"{topic}-0: 1 key holds back 2 records (top: k1 2)" in out

        # --describe: the note, and the share-partition's row.
        out = describe_out(capsys, broker, group)
        assert f"Share group '{group}' delivers records in key order" in out
        assert "shoal.deliver.at time" not in out
        (row,) = holds_table(out)
        assert row == {
            "GROUP": group,
            "TOPIC": topic,
            "PARTITION": "0",
            "BLOCKED-KEYS": "1",
            "HELD-BY-KEY": "2",
            "SCHEDULED": "0",
            "NEXT-DUE": "-",
            "TOP-BLOCKED-KEYS": "k1:2",
        }

        # The console and the metrics.
        partition = console_partition(broker, group)
        assert partition["delivery"] == {"paused": False, "key_order": True, "delay_max_ms": 0}
        assert partition["holds"]["blocked_keys"] == 1
        assert partition["holds"]["blocked_records"] == 2
        assert partition["holds"]["top_blocked_keys"] == [
            {"key": "k1", "key_hex": "6b31", "held_records": 2}
        ]
        blocked = {
            o
            for e in partition["inflight"]
            if e["key_blocked"]
            for o in range(e["first_offset"], e["last_offset"] + 1)
        }
        assert blocked == {3, 4}
        assert gauges(broker, group, topic) == (1, 2, 0, 0)

        # A accepts k1's first three: B gets the other two, and nothing is held.
        accept_all(a, held_by_a)
        accept_all(b, got_b)
        later = poll_for(b, 2)
        assert [(r.offset, r.key) for r in later] == [(3, b"k1"), (4, b"k1")]
        out = browse_out(capsys, broker, group, topic)
        assert "holds back" not in out
        assert all(r["KEY-BLOCKED"] == "-" for r in entries_table(out).values())
        (row,) = holds_table(describe_out(capsys, broker, group))
        assert (row["BLOCKED-KEYS"], row["HELD-BY-KEY"], row["TOP-BLOCKED-KEYS"]) == ("0", "0", "-")
        assert gauges(broker, group, topic) == (0, 0, 0, 0)
    finally:
        a.close()
        b.close()


def test_a_record_waiting_for_its_time_shows_everywhere_until_it_comes(
    broker: HoldsBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_name("holds-time")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, topic_name("holds-time-group"), lock_ms=LOCK_MS)
    alter_group_configs(
        broker.bootstrap, group, {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS}
    )
    due_ms = int(time.time() * 1000) + DUE_IN_MS
    produce(
        broker,
        topic,
        [
            {"value": b"later", "headers": [("shoal.deliver.at", str(due_ms).encode())]},
            {"value": b"malformed", "headers": [("shoal.deliver.at", b"soon")]},
            {"value": b"plain"},
        ],
    )
    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True, max_poll_records=100)
    try:
        at_once = first_messages(consumer, 2)
        assert sorted(int(m.offset()) for m in at_once) == [1, 2]
        accept_all(consumer, at_once)  # explicit mode polls again only once they are
        assert quiet(consumer) == [], "delivered before its time"

        out = browse_out(capsys, broker, group, topic)
        due = time_cell(due_ms)
        assert (
            f"{topic}-0: 1 record waits for its time, next due {due}; "
            "1 malformed shoal.deliver.at delivered at once"
        ) in out
        entries = entries_table(out)
        assert entries[1]["STATE"] == entries[2]["STATE"] == "ACKNOWLEDGED"
        # The waiting record sits in the window, AVAILABLE, never delivered, due then.
        assert (entries[0]["STATE"], entries[0]["DELIVERY-COUNT"]) == ("AVAILABLE", "0")
        assert (entries[0]["DELIVER-AT"], entries[0]["KEY-BLOCKED"]) == (due, "-")
        assert all(entries[o]["DELIVER-AT"] == "-" for o in (1, 2))

        out = describe_out(capsys, broker, group)
        assert (
            f"Share group '{group}' delivers records at their shoal.deliver.at time, at most "
            f"{DELAY_MAX_MS} ms after their timestamp"
        ) in out
        assert "key order" not in out
        (row,) = holds_table(out)
        assert (row["BLOCKED-KEYS"], row["HELD-BY-KEY"], row["SCHEDULED"]) == ("0", "0", "1")
        assert (row["NEXT-DUE"], row["TOP-BLOCKED-KEYS"]) == (due, "-")

        partition = console_partition(broker, group)
        assert partition["delivery"]["delay_max_ms"] == DELAY_MAX_MS
        holds = partition["holds"]
        assert (holds["scheduled_records"], holds["next_due_ms"]) == (1, due_ms)
        assert holds["malformed_deliver_at"] == 1
        assert 0 < holds["next_due_in_ms"] <= DUE_IN_MS
        (waiting,) = [e for e in partition["inflight"] if e["deliver_at_ms"] is not None]
        assert (waiting["first_offset"], waiting["last_offset"]) == (0, 0)
        assert (waiting["state"], waiting["deliver_at_ms"]) == ("available", due_ms)
        assert gauges(broker, group, topic) == (0, 0, 1, 1)
        assert time.time() * 1000 < due_ms, "the reads came too late to see the record wait"

        # Once due, the record comes, and nothing waits any more.
        (record,) = poll_for(consumer, 1)
        assert (record.offset, record.value) == (0, b"later")
        assert time.time() * 1000 >= due_ms, "delivered before its time"
        (row,) = holds_table(describe_out(capsys, broker, group))
        assert (row["SCHEDULED"], row["NEXT-DUE"]) == ("0", "-")
        assert gauges(broker, group, topic) == (0, 0, 0, 1)
    finally:
        consumer.close()


def test_a_group_without_the_extensions_describes_as_kafka_does(
    broker: HoldsBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_name("holds-none")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, topic_name("holds-none-group"))
    produce(broker, topic, [{"key": b"k1", "value": b"v"}])
    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        first_messages(consumer, 1)
        out = describe_out(capsys, broker, group)
        (offsets,) = tables(out)
        assert list(offsets[0]) == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
        assert "key order" not in out and "shoal.deliver.at" not in out
        assert "BLOCKED-KEYS" not in out
        partition = console_partition(broker, group)
        assert partition["delivery"] == {"paused": False, "key_order": False, "delay_max_ms": 0}
        assert gauges(broker, group, topic) == (0, 0, 0, 0)
    finally:
        consumer.close()
