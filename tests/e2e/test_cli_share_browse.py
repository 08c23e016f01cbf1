"""`shoal share-groups --browse` as a subprocess against a real broker, while a
confluent-kafka ShareConsumer holds some records and has accepted, released and
rejected others: the tool prints exactly those states, delivery counts and the
holder's member id, the time left before the released records (held back by the
group's delayed redelivery) may be delivered again, and acquires nothing (the
consumer then gets the released records at their second delivery, once due, and new
records at their first).

Tables are read by column (tests/support/cli.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType

from shoal.cli.main import main
from tests.support.broker import BrokerProcess, running
from tests.support.cli import rows, shoal
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    WAIT_S,
    Got,
    alter_group_configs,
    describe,
    first_batch,
    got,
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

RECORDS = 8
ACCEPTED, RELEASED, REJECTED, HELD = (0, 1), (2, 3), (4,), (5, 6, 7)
LOCK_MS = 60_000
BACKOFF_MS = 10_000
"""Delayed redelivery of the released records: long enough that the browse right
after the release sees them held back on a loaded machine; the second consumer's
join (a few seconds) hides most of it."""


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("cli-share-browse") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


def browse(broker: BrokerProcess, group: str, topic: str, *extra: str) -> tuple[str, str]:
    done = shoal(
        "share-groups",
        "--bootstrap-server",
        broker.bootstrap,
        "--browse",
        "--group",
        group,
        "--topic",
        topic,
        *extra,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout, done.stderr


def by_offset(table: list[dict[str, str]]) -> dict[int, tuple[str, int, str]]:
    """offset -> (state, delivery count, holder), each entry's range expanded."""
    out = {}
    for row in table:
        for offset in range(int(row["FIRST-OFFSET"]), int(row["LAST-OFFSET"]) + 1):
            out[offset] = (row["STATE"], int(row["DELIVERY-COUNT"]), row["HOLDER"])
    return out


def poll_records(consumer: object, count: int) -> list[Got]:
    records: list[Got] = []
    deadline = time.monotonic() + WAIT_S
    while len(records) < count:
        assert time.monotonic() < deadline, f"only {len(records)} of {count} records came"
        records += [got(m) for m in records_of(consumer.poll(0.2))]  # type: ignore[attr-defined]
    return records


def test_browse_shows_what_the_consumer_holds_and_acquires_nothing(
    share_broker: BrokerProcess,
) -> None:
    topic = topic_name("browse")
    create_topic(share_broker.bootstrap, topic, partitions=1)
    group = share_group(share_broker.bootstrap, topic_name("browse-group"), lock_ms=LOCK_MS)
    alter_group_configs(
        share_broker.bootstrap, group, {"shoal.share.redelivery.backoff.ms": BACKOFF_MS}
    )
    produce_values(share_broker.bootstrap, topic, (b"v%d" % i for i in range(RECORDS)))
    consumer = share_consumer(
        share_broker.bootstrap, group, [topic], explicit=True, max_poll_records=RECORDS
    )
    try:
        # One producer flush makes one log batch, acquired whole by one poll (explicit
        # mode refuses a second poll while records of the first are unacknowledged).
        messages = first_batch(consumer)
        assert len(messages) == RECORDS, [m.offset() for m in messages]
        assert [got(m).delivery_count for m in messages] == [1] * RECORDS
        kinds = {o: AcknowledgeType.ACCEPT for o in ACCEPTED}
        kinds |= {o: AcknowledgeType.RELEASE for o in RELEASED}
        kinds |= {o: AcknowledgeType.REJECT for o in REJECTED}
        for message in messages:
            if message.offset() in kinds:
                consumer.acknowledge(message, kinds[message.offset()])
        released_at = time.monotonic()
        assert all(error is None for error in consumer.commit_sync(30).values())
        (member,) = describe(share_broker.bootstrap, group).members
        holder = member.member_id

        out, _ = browse(share_broker, group, topic)
        browsed_within_ms = (time.monotonic() - released_at) * 1000
        table = rows(out)
        assert by_offset(table) == {
            2: ("AVAILABLE", 1, "-"),
            3: ("AVAILABLE", 1, "-"),
            4: ("ARCHIVED", 1, "-"),
            5: ("ACQUIRED", 1, holder),
            6: ("ACQUIRED", 1, holder),
            7: ("ACQUIRED", 1, holder),
        }
        for row in table:
            left = row["LOCK-EXPIRES-MS"]
            if row["STATE"] == "ACQUIRED":
                assert 0 < int(left) <= LOCK_MS, row
            else:
                assert left == "-", row
            due = row["REDELIVERY-IN-MS"]
            if row["STATE"] == "AVAILABLE":  # released, held back by the backoff
                assert BACKOFF_MS - browsed_within_ms - 1 <= int(due) <= BACKOFF_MS, row
            else:
                assert due == "-", row
        assert browsed_within_ms < BACKOFF_MS, "the browse came too late to see the delay"
        assert f"{topic}-0: start offset 2, end offset 7" in out

        assert "more entries not shown" not in out
        # Nothing was acquired by browsing: three more records, then a second consumer
        # gets the released two (second delivery) and the new three (first delivery),
        # while the first still holds its three. It polls once the released ones are
        # due, so that all five come together (explicit mode polls only once here).
        time.sleep(max(0.0, released_at + BACKOFF_MS / 1000 - time.monotonic()))
        produce_values(share_broker.bootstrap, topic, (b"w%d" % i for i in range(3)))
        second = share_consumer(share_broker.bootstrap, group, [topic], explicit=True)
        try:
            again = poll_records(second, 5)
            assert sorted((r.offset, r.delivery_count) for r in again) == [
                (2, 2),
                (3, 2),
                (8, 1),
                (9, 1),
                (10, 1),
            ]
            members = {m.member_id for m in describe(share_broker.bootstrap, group).members}
            (other,) = members - {holder}
            after = by_offset(rows(browse(share_broker, group, topic)[0]))
            assert after[2] == after[3] == ("ACQUIRED", 2, other)
            assert after[8] == after[9] == after[10] == ("ACQUIRED", 1, other)
            assert after[5] == after[6] == after[7] == ("ACQUIRED", 1, holder)
        finally:
            second.close()
    finally:
        consumer.close()


def test_browse_an_unknown_group_topic_or_partition_fails(
    share_broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process (the tool's `main`), to spare three interpreter starts."""
    topic = topic_name("browse-errors")
    create_topic(share_broker.bootstrap, topic, partitions=1)
    base = ["share-groups", "--bootstrap-server", share_broker.bootstrap, "--browse"]

    def refused(*argv: str) -> str:
        assert main([*base, *argv]) == 1
        return capsys.readouterr().err

    assert "Share group 'no-such-group' does not exist." in refused(
        "--group", "no-such-group", "--topic", topic
    )
    assert "UNKNOWN_TOPIC_OR_PARTITION" in refused("--group", "g", "--topic", "no-such-topic")
    assert f"Topic '{topic}' has no partition 5." in refused(
        "--group", "g", "--topic", topic, "--partition", "5"
    )
