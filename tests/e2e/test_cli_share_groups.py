"""`shoal share-groups` as a subprocess against a real broker, with confluent-kafka
ShareConsumers as the group's members: list, describe (members, state, offsets with
lag), reset (dry run, execute, refused on a live group), delete, delete offsets, a
describe after a broker crash, and the exits on errors.

Tables are read by column (tests/support/cli.py), never compared as whole screens.
Values that settle asynchronously (a closed consumer leaving, a restarted broker
loading) are polled with a bound.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)

from shoal.client.requests import metadata
from tests.support.broker import BrokerProcess, Brokers, running
from tests.support.cli import rows, shoal
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    Got,
    describe,
    got,
    produce_values,
    producer,
    records_of,
    share_consumer,
    share_group,
    wait_for_members,
)
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

T = TypeVar("T")
SETTLE_S = 30.0
BASE_TIMESTAMP_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("cli-share-groups") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


# ---- helpers


def sg(broker: BrokerProcess, *args: str) -> tuple[int, str, str]:
    done = shoal("share-groups", "--bootstrap-server", broker.bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def eventually(run: Callable[[], T], ok: Callable[[T], bool], *, timeout_s: float = SETTLE_S) -> T:
    """Run until `ok(result)` or the bound passes; the last result either way (the
    caller asserts on it, so a failure shows what was seen)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = run()
        if ok(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def offsets_table(broker: BrokerProcess, group: str, *extra: str) -> list[dict[str, str]]:
    code, out, err = sg(broker, "--describe", "--group", group, *extra)
    assert code == 0, err
    return rows(out)


def offset_row(topic: str, group: str, partition: int, start: int, lag: int) -> dict[str, str]:
    return {
        "GROUP": group,
        "TOPIC": topic,
        "PARTITION": str(partition),
        "START-OFFSET": str(start),
        "LAG": str(lag),
    }


def api_start_offsets(broker: BrokerProcess, group: str) -> dict[tuple[str, int], int]:
    """Start offsets as DescribeShareGroupOffsets (90) v1 answers them."""
    (described,) = call1(
        broker.bootstrap,
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)
        ),
    ).groups
    return {
        (t.topic_name, p.partition_index): p.start_offset
        for t in described.topics
        for p in t.partitions
    }


def expect_lags(
    broker: BrokerProcess, group: str, lags: dict[tuple[str, int], int]
) -> list[dict[str, str]]:
    """Poll the describe table until it lists exactly these partitions with these
    lags; each START-OFFSET must be what the broker reports (the start offset an
    acceptance moves to is persisted with it). Returns the table."""

    def lags_of(table: list[dict[str, str]]) -> dict[tuple[str, int], int]:
        return {(r["TOPIC"], int(r["PARTITION"])): int(r["LAG"]) for r in table}

    table = eventually(lambda: offsets_table(broker, group), lambda t: lags_of(t) == lags)
    assert lags_of(table) == lags, table
    assert [r["GROUP"] for r in table] == [group] * len(table)
    assert [(r["TOPIC"], int(r["PARTITION"])) for r in table] == sorted(lags)
    starts = api_start_offsets(broker, group)
    assert {(r["TOPIC"], int(r["PARTITION"])): int(r["START-OFFSET"]) for r in table} == starts
    return table


def produce(broker: BrokerProcess, topic: str, count: int, *, partition: int = 0) -> None:
    """`count` records v0..v{count-1}, one batch each, record i stamped
    BASE_TIMESTAMP_MS + i seconds."""
    p = producer(broker.bootstrap)
    for i in range(count):
        p.produce(
            topic,
            value=b"v%d" % i,
            partition=partition,
            timestamp=BASE_TIMESTAMP_MS + i * 1000,
        )
        assert p.flush(30) == 0
    assert p.flush(30) == 0


def setup(
    broker: BrokerProcess, prefix: str, records: int, *, partitions: int = 1
) -> tuple[str, str]:
    topic = topic_name(prefix)
    create_topic(broker.bootstrap, topic, partitions=partitions)
    if records:
        produce(broker, topic, records)
    group = share_group(broker.bootstrap, topic_name(f"{prefix}-group"))
    return topic, group


def consume(broker: BrokerProcess, group: str, topics: Sequence[str], *, accept: int) -> list[Got]:
    """Join the group, ACCEPT the first `accept` records delivered (RELEASE any
    more), commit, close; the accepted records."""
    consumer = share_consumer(broker.bootstrap, group, topics, explicit=True)
    accepted: list[Got] = []
    try:
        deadline = time.monotonic() + 60
        while len(accepted) < accept:
            assert time.monotonic() < deadline, f"only {len(accepted)} of {accept} records came"
            for message in records_of(consumer.poll(0.2)):
                if len(accepted) < accept:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                    accepted.append(got(message))
                else:
                    consumer.acknowledge(message, AcknowledgeType.RELEASE)
        results = consumer.commit_sync(30)
        assert all(error is None for error in results.values()), results
    finally:
        consumer.close()
    return accepted


def live_member(broker: BrokerProcess, group: str, topic: str, partitions: int) -> ShareConsumer:
    consumer = share_consumer(broker.bootstrap, group, [topic], client_id="cli-member")
    wait_for_members(broker.bootstrap, group, [consumer], topic, partitions=partitions)
    return consumer


def utc_text(epoch_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}"


# ---- list and describe with a live member


def test_list_and_describe_a_live_member(share_broker: BrokerProcess) -> None:
    topic, group = setup(share_broker, "cli-live", 0, partitions=2)
    consumer = live_member(share_broker, group, topic, 2)
    try:
        member = describe(share_broker.bootstrap, group).members[0]
        code, out, err = sg(share_broker, "--list")
        assert code == 0, err
        assert group in out.splitlines() and "GROUP" not in out.split()  # names only
        assert {"GROUP": group, "STATE": "Stable"} in rows(sg(share_broker, "--list", "--state")[1])
        assert group in [
            r["GROUP"] for r in rows(sg(share_broker, "--list", "--state", "stable")[1])
        ]
        assert group not in [
            r["GROUP"] for r in rows(sg(share_broker, "--list", "--state", "Empty")[1])
        ]

        code, out, err = sg(share_broker, "--describe", "--group", group, "--members")
        assert code == 0, err
        assert rows(out) == [
            {
                "GROUP": group,
                "CONSUMER-ID": member.member_id,
                "HOST": member.client_host,
                "CLIENT-ID": "cli-member",
                "#PARTITIONS": "2",
                "ASSIGNMENT": f"{topic}:0,1",
            }
        ]
        (verbose,) = rows(
            sg(share_broker, "--describe", "--group", group, "--members", "--verbose")[1]
        )
        assert verbose["MEMBER-EPOCH"] == str(member.member_epoch)

        (broker_meta,) = call1(share_broker.bootstrap, metadata([])).brokers
        code, out, err = sg(share_broker, "--describe", "--group", group, "--state", "--verbose")
        assert code == 0, err
        described = describe(share_broker.bootstrap, group)
        assert rows(out) == [
            {
                "GROUP": group,
                "COORDINATOR (ID)": f"127.0.0.1:{share_broker.port}  ({broker_meta.node_id})",
                "STATE": "Stable",
                "GROUP-EPOCH": str(described.group_epoch),
                "ASSIGNMENT-EPOCH": str(described.assignment_epoch),
                "#MEMBERS": "1",
            }
        ]
    finally:
        consumer.close()

    code, out, err = eventually(
        lambda: sg(share_broker, "--describe", "--group", group, "--members"),
        lambda r: "has no active members" in r[2],
    )
    assert (code, out) == (0, ""), err
    assert f"Share group '{group}' has no active members." in err
    (state,) = rows(sg(share_broker, "--describe", "--group", group, "--state")[1])
    assert (state["STATE"], state["#MEMBERS"]) == ("Empty", "0")
    assert {"GROUP": group, "STATE": "Empty"} in rows(sg(share_broker, "--list", "--state")[1])


def test_describe_all_groups(share_broker: BrokerProcess) -> None:
    first_topic, first = setup(share_broker, "cli-all-a", 2)
    second_topic, second = setup(share_broker, "cli-all-b", 3)
    consume(share_broker, first, [first_topic], accept=2)
    consume(share_broker, second, [second_topic], accept=1)
    expect_lags(share_broker, first, {(first_topic, 0): 0})
    expect_lags(share_broker, second, {(second_topic, 0): 2})
    code, out, err = sg(share_broker, "--describe", "--all-groups")
    assert code == 0, err
    found = {(r["GROUP"], r["TOPIC"]): r["LAG"] for r in rows(out)}
    assert (found[(first, first_topic)], found[(second, second_topic)]) == ("0", "2")


# ---- offsets


def test_describe_offsets_shows_start_offset_and_lag(share_broker: BrokerProcess) -> None:
    topic, group = setup(share_broker, "cli-lag", 10)
    accepted = consume(share_broker, group, [topic], accept=4)
    assert [r.offset for r in accepted] == [0, 1, 2, 3]
    (row,) = expect_lags(share_broker, group, {(topic, 0): 6})
    assert row["START-OFFSET"] == "4", "the write accepting 0-3 carried the start offset 4"
    (verbose,) = offsets_table(share_broker, group, "--offsets", "--verbose")
    assert verbose["LEADER-EPOCH"].isdigit()
    assert (verbose["START-OFFSET"], verbose["LAG"]) == (row["START-OFFSET"], "6")


def test_everything_accepted_shows_the_log_end_as_start_offset(
    share_broker: BrokerProcess,
) -> None:
    """A pipelined consumer's view: once every record is accepted (batches confirmed
    with commit_sync), START-OFFSET is the log end offset of each partition and LAG 0:
    the last acceptance's write carries the start offset it moves to."""
    topic = topic_name("cli-drained")
    create_topic(share_broker.bootstrap, topic, partitions=2)
    group = share_group(share_broker.bootstrap, topic_name("cli-drained-group"))
    for partition in (0, 1):
        values = [b"e%d" % i for i in range(1_000)]
        produce_values(share_broker.bootstrap, topic, values, partition=partition, flush_every=200)
    consumer = share_consumer(share_broker.bootstrap, group, [topic], explicit=True)
    accepted = 0
    try:
        deadline = time.monotonic() + 60
        while accepted < 2_000:
            assert time.monotonic() < deadline, f"only {accepted} of 2000 records came"
            batch = records_of(consumer.poll(0.2))
            for message in batch:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if batch:
                results = consumer.commit_sync(30)
                assert all(error is None for error in results.values()), results
            accepted += len(batch)
    finally:
        consumer.close()
    table = expect_lags(share_broker, group, {(topic, 0): 0, (topic, 1): 0})
    assert [r["START-OFFSET"] for r in table] == ["1000", "1000"]


def test_describe_an_unknown_group_fails(share_broker: BrokerProcess) -> None:
    group = topic_name("cli-nobody")
    for sub in ((), ("--members",), ("--state",)):
        code, out, err = sg(share_broker, "--describe", "--group", group, *sub)
        assert (code, out) == (1, ""), sub
        assert f"Error: Share group '{group}' does not exist." in err


# ---- reset


def test_reset_an_empty_group(share_broker: BrokerProcess) -> None:
    topic, group = setup(share_broker, "cli-reset", 10)
    consume(share_broker, group, [topic], accept=10)
    settled = expect_lags(share_broker, group, {(topic, 0): 0})

    def planned(*args: str) -> tuple[list[dict[str, str]], str]:
        code, out, err = sg(share_broker, "--reset-offsets", "--group", group, *args)
        assert code == 0, err
        return rows(out), err

    def plan(offset: int) -> list[dict[str, str]]:
        return [{"GROUP": group, "TOPIC": topic, "PARTITION": "0", "NEW-OFFSET": str(offset)}]

    # Dry runs (the default, or --dry-run) plan and change nothing.
    assert planned("--to-earliest")[0] == plan(0)
    assert planned("--all-topics", "--to-earliest", "--dry-run")[0] == plan(0)
    assert planned("--topic", topic, "--to-datetime", utc_text(BASE_TIMESTAMP_MS + 3000))[
        0
    ] == plan(3)
    assert planned("--topic", f"{topic}:0", "--to-datetime", utc_text(BASE_TIMESTAMP_MS + 2500))[
        0
    ] == plan(3)
    table, err = planned("--to-datetime", "2099-01-01T00:00:00.000")
    assert table == plan(10)
    assert (
        f"Warn: Partition 0 from topic {topic} is empty. Falling back to latest known offset."
        in err
    )
    table, err = planned("--to-offset", "1000")
    assert table == plan(10)
    assert (
        f"New offset (1000) is higher than latest offset for topic partition {topic}-0. "
        "Value will be set to 10." in err
    )
    assert offsets_table(share_broker, group) == settled

    # --execute applies it; a new member starts from there.
    assert planned("--to-offset", "3", "--execute")[0] == plan(3)
    assert offsets_table(share_broker, group) == [offset_row(topic, group, 0, 3, 7)]
    again = consume(share_broker, group, [topic], accept=7)
    assert [(r.offset, r.value, r.delivery_count) for r in again] == [
        (i, b"v%d" % i, 1) for i in range(3, 10)
    ]
    expect_lags(share_broker, group, {(topic, 0): 0})


def test_reset_an_unknown_group_creates_it_empty(share_broker: BrokerProcess) -> None:
    topic, _ = setup(share_broker, "cli-reset-new", 5)
    group = topic_name("cli-reset-new-group")
    code, out, err = sg(
        share_broker,
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        topic,
        "--to-latest",
        "--execute",
    )
    assert code == 0, err
    assert rows(out) == [{"GROUP": group, "TOPIC": topic, "PARTITION": "0", "NEW-OFFSET": "5"}]
    assert {"GROUP": group, "STATE": "Empty"} in rows(sg(share_broker, "--list", "--state")[1])
    assert offsets_table(share_broker, group) == [offset_row(topic, group, 0, 5, 0)]
    assert api_start_offsets(share_broker, group) == {(topic, 0): 5}

    other = topic_name("cli-reset-nobody")
    code, out, err = sg(share_broker, "--reset-offsets", "--group", other, "--to-earliest")
    assert (code, out) == (1, "")
    assert f"Share group '{other}' does not exist: name the partitions to reset with --topic" in err
    code, _, err = sg(
        share_broker,
        "--reset-offsets",
        "--group",
        other,
        "--topic",
        f"{topic}:0,7",
        "--to-earliest",
    )
    assert code == 1
    assert f'The partitions "{topic}-7" do not exist' in err
    code, _, err = sg(
        share_broker,
        "--reset-offsets",
        "--group",
        other,
        "--topic",
        "no-such-topic",
        "--to-earliest",
    )
    assert code == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in err


def test_a_live_group_cannot_be_reset_or_deleted(share_broker: BrokerProcess) -> None:
    topic, group = setup(share_broker, "cli-busy", 4)
    consume(share_broker, group, [topic], accept=4)
    before = expect_lags(share_broker, group, {(topic, 0): 0})
    consumer = live_member(share_broker, group, topic, 1)
    try:
        code, out, err = sg(
            share_broker, "--reset-offsets", "--group", group, "--to-earliest", "--execute"
        )
        assert (code, out, err) == (1, "", f"Error: Share group '{group}' is not empty.\n")
        code, out, err = sg(share_broker, "--delete-offsets", "--group", group, "--topic", topic)
        # Kafka 4.2's shape (its exit status is 0: Shoal's 1 lets scripts tell)
        assert (code, err) == (1, "")
        assert out == (
            "\nError: The group is not empty.\n\n"
            + f"{'TOPIC'.ljust(len(topic))} STATUS\n{topic} Error: The group is not empty.\n"
        )
        code, out, err = sg(share_broker, "--delete", "--group", group)
        assert (code, out) == (1, "")
        assert (
            f"* Group '{group}' could not be deleted due to: Share group '{group}' is not EMPTY."
            in err
        )
        assert offsets_table(share_broker, group) == before
    finally:
        consumer.close()


# ---- delete


def test_delete_offsets_of_one_topic(share_broker: BrokerProcess) -> None:
    first, group = setup(share_broker, "cli-deloff-a", 3)
    second, _ = setup(share_broker, "cli-deloff-b", 0)
    produce(share_broker, second, 2)
    consume(share_broker, group, [first, second], accept=5)
    both = expect_lags(share_broker, group, {(first, 0): 0, (second, 0): 0})

    code, out, err = sg(share_broker, "--delete-offsets", "--group", group, "--topic", first)
    assert code == 0, err
    assert rows(out) == [{"TOPIC": first, "STATUS": "Successful"}]
    assert offsets_table(share_broker, group) == [r for r in both if r["TOPIC"] == second]

    code, out, _ = sg(
        share_broker, "--delete-offsets", "--group", group, "--topic", first, "--topic", second
    )
    assert code == 1
    statuses = {r["TOPIC"]: r["STATUS"] for r in rows(out)}
    assert statuses == {
        first: "Error: There is no offset information to delete.",
        second: "Successful",
    }

    nobody = topic_name("cli-deloff-nobody")
    code, out, err = sg(share_broker, "--delete-offsets", "--group", nobody, "--topic", first)
    assert (code, err) == (1, "")
    verdict, table = out.split("\n\n", 1)
    assert verdict == f"\nError: Group {nobody} not found."
    assert rows(table) == [{"TOPIC": first, "STATUS": f"Error: Group {nobody} not found."}]


def test_delete_groups(share_broker: BrokerProcess) -> None:
    topic, group = setup(share_broker, "cli-delete", 2)
    consume(share_broker, group, [topic], accept=2)
    assert eventually(
        lambda: rows(sg(share_broker, "--list", "--state", "Empty")[1]),
        lambda t: {"GROUP": group, "STATE": "Empty"} in t,
    )
    code, out, err = sg(share_broker, "--delete", "--group", group)
    assert (code, out, err) == (
        0,
        f"Deletion of requested share groups ('{group}') was successful.\n",
        "",
    )
    assert group not in sg(share_broker, "--list")[1].splitlines()
    code, _, err = sg(share_broker, "--describe", "--group", group)
    assert code == 1
    assert f"Share group '{group}' does not exist." in err

    code, out, err = sg(share_broker, "--delete", "--group", group)
    assert (code, out) == (1, "")
    assert "Error: Deletion of some share groups failed:" in err
    assert f"* Group '{group}' could not be deleted due to: " in err


# ---- crash


def crash_and_restart(broker: BrokerProcess, group: str) -> str:
    """SIGKILL, restart on the same data and port, and the describe output once the
    group answers again."""
    broker.kill()
    broker.start()
    code, out, err = eventually(
        lambda: sg(broker, "--describe", "--group", group), lambda r: r[0] == 0
    )
    assert code == 0, err
    return out


def test_describe_after_a_broker_crash(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    topic, group = setup(broker, "cli-crash", 10)
    consume(broker, group, [topic], accept=4)
    before = expect_lags(broker, group, {(topic, 0): 6})

    assert rows(crash_and_restart(broker, group)) == before
    (state,) = rows(sg(broker, "--describe", "--group", group, "--state")[1])
    assert (state["STATE"], state["#MEMBERS"]) == ("Empty", "0")
    assert {"GROUP": group, "STATE": "Empty"} in rows(sg(broker, "--list", "--state")[1])
    code, out, err = sg(broker, "--describe", "--group", group, "--members")
    assert (code, out) == (0, "")
    assert f"Share group '{group}' has no active members." in err


# ---- errors


def test_unreachable_broker_fails_within_the_timeout() -> None:
    started = time.monotonic()
    done = shoal("share-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "1500")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Error: cannot reach the broker at 127.0.0.1:1 within 1500 ms" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_bad_command_lines_exit_2_with_kafkas_message(share_broker: BrokerProcess) -> None:
    code, out, err = sg(share_broker, "--describe")
    assert (code, out) == (2, "")
    assert "Option [describe] takes one of these options: [group], [all-groups]" in err
    assert "usage: shoal share-groups" in err
    code, _, err = sg(
        share_broker, "--reset-offsets", "--group", "g", "--to-earliest", "--to-latest"
    )
    assert code == 2
    assert 'Option "[to-earliest]" can\'t be used with option "[to-latest]"' in err
