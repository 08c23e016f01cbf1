"""Consumer groups, classic and KIP-848, on Kafka 4.2 and on Shoal side by side.

Each scenario drives real clients (confluent-kafka with `group.protocol` classic or
consumer, kafka-python, Kafka's kafka-consumer-groups tool, Shoal's CLI, raw kio
requests) against both brokers and compares what a user observes: assignments by
shape (each partition owned once, partitions per member), group states, protocol
types and assignors, error codes, the tools' tables. Member ids, hosts, ports and
times are normalised away.

Both brokers run with `group.initial.rebalance.delay.ms=0` (the reference's setting,
tests/support/kafka_reference.py), so classic joins complete as soon as every member
is in.
"""

from __future__ import annotations

import datetime
import re
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode

from shoal.client.requests import describe_groups, find_coordinator, offset_fetch
from shoal.client.requests import metadata as metadata_request
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.classic_groups import commit_request, consumer_subscription
from tests.support.cli import shoal as shoal_cli
from tests.support.cli import tables
from tests.support.clients import create_topic, flush_all, producer
from tests.support.consumer_groups import PARTITIONS, group_consumer
from tests.support.consumer_wire import beat
from tests.support.wire import call1

SETTLE_S = 60.0


@pytest.fixture(scope="module")
def shoal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("shoal") / "data", "group.initial.rebalance.delay.ms=0"
    )


# ---- helpers


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    p = producer(bootstrap)
    for partition, count in counts.items():
        for i in range(count):
            p.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
    flush_all(p)


def consume_and_commit(bootstrap: str, topic: str, group: str, protocol: str, count: int) -> None:
    """One member of `group` reads `count` records of `topic`, commits, and leaves."""
    c = group_consumer(bootstrap, group, protocol=protocol)
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + SETTLE_S
        while got < count and time.monotonic() < deadline:
            message = c.poll(0.2)
            if message is not None and message.error() is None:
                got += 1
        assert got == count
        c.commit(asynchronous=False)
    finally:
        c.close()


def kafka_tool(bootstrap: str, *args: str) -> tuple[int, str, str]:
    done = kafka_reference.run_tool("kafka-consumer-groups", "--bootstrap-server", bootstrap, *args)
    return done.returncode, done.stdout, done.stderr


def shoal_tool(bootstrap: str, *args: str) -> tuple[int, str, str]:
    done = shoal_cli("consumer-groups", "--bootstrap-server", bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


_VOLATILE = {"CONSUMER-ID", "HOST", "COORDINATOR (ID)"}


def shape(output: tuple[int, str, str]) -> tuple[int, list[list[dict[str, str]]], list[str]]:
    """Exit status, the tables (volatile cells replaced by whether they are set) and
    the non-empty stderr lines (logging lines of the JVM dropped)."""
    code, out, err = output
    norm = [
        [
            {k: (v if k not in _VOLATILE else ("-" if v == "-" else "*")) for k, v in r.items()}
            for r in table
        ]
        for table in tables(out)
    ]
    notices = [
        line.strip()
        for line in err.splitlines()
        if line.strip() and not re.match(r"^\[?\d{4}-\d\d-\d\d|^SLF4J|^WARN|^log4j", line)
    ]
    return code, norm, notices


# ---- 1. describing an Empty consumer-protocol group with committed offsets


def test_cli_describes_empty_consumer_protocol_group_as_kafkas_tool(pair: Pair) -> None:
    topic, group = unique("cg-empty"), unique("cg-empty-g")

    def scenario(bootstrap: str) -> dict[str, object]:
        create_topic(bootstrap, topic, partitions=2)
        produce(bootstrap, topic, {0: 3, 1: 2})
        consume_and_commit(bootstrap, topic, group, "consumer", 5)
        views: dict[str, object] = {}
        for view in ((), ("--members",), ("--state",), ("--members", "--verbose")):
            args = ("--describe", "--group", group, *view)
            views[f"kafka{view}"] = shape(kafka_tool(bootstrap, *args))
            views[f"shoal{view}"] = shape(shoal_tool(bootstrap, *args))
        missing = ("--describe", "--group", f"{group}-none")
        code, out, _ = kafka_tool(bootstrap, *missing)
        views["missing"] = (code, out.strip())
        views["shoal missing"] = shape(shoal_tool(bootstrap, *missing))
        return views

    kafka, shoal = pair.run(scenario)
    # Shoal's CLI prints what Kafka's tool prints, against either broker ...
    for observed in (kafka, shoal):
        for key in list(observed):
            if key.startswith("kafka"):
                assert observed["shoal" + key[len("kafka") :]] == observed[key], key
    # ... and both brokers answer the tool alike.
    assert kafka == shoal
    # An unknown group: Kafka's tool reports the admin client's exception and exits 0;
    # Shoal's CLI says so in the tool's older words and exits 1 (on purpose).
    assert kafka["missing"] == (
        0,
        "Error: Executing consumer group command failed due to "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: "
        f"Group {group}-none not found.",
    )
    assert kafka["shoal missing"] == (
        1,
        [],
        [f"Error: Consumer group '{group}-none' does not exist."],
    )
    code, offsets, notices = kafka["kafka()"]  # type: ignore[misc]
    assert code == 0 and notices == [f"Consumer group '{group}' has no active members."]
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in offsets[0]] == [
        ("0", "3", "0"),
        ("1", "2", "0"),
    ]


# ---- 2. OffsetDelete (47) of every group type, with each of Kafka's errors


def _offset_delete(group: str, partitions: list[tuple[str, int]]) -> Any:
    schema = request_schema(47, 0)
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return schema.make(
        "OffsetDeleteRequest",
        group_id=group,
        topics=tuple(
            schema.make(
                "OffsetDeleteRequestTopic",
                name=t,
                partitions=tuple(
                    schema.make("OffsetDeleteRequestPartition", partition_index=p) for p in ps
                ),
            )
            for t, ps in by_topic.items()
        ),
    )


def _deleted(response: Any) -> tuple[str, dict[str, str]]:
    """(group error, {"topic-partition": error}) of an OffsetDelete answer."""
    return ErrorCode(response.error_code).name, {
        f"{t.name}-{p.partition_index}": ErrorCode(p.error_code).name
        for t in response.topics
        for p in t.partitions
    }


def _committed(bootstrap: str, group: str) -> list[tuple[str, int, int]]:
    response = call1(bootstrap, offset_fetch(group).build(8))
    (g,) = response.groups
    return sorted(
        (str(t.name), int(p.partition_index), int(p.committed_offset))
        for t in g.topics
        for p in t.partitions
    )


_NOT_READY = (
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
)


def until_coordinated(bootstrap: str, request: Any) -> Any:
    """`request` (its answer has a top-level error_code), resent while the group
    coordinator is not ready yet (Kafka creates __consumer_offsets on first use)."""
    call1(bootstrap, find_coordinator(request.group_id).build(4))
    deadline = time.monotonic() + SETTLE_S
    while True:
        response = call1(bootstrap, request)
        if response.error_code not in _NOT_READY or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def _classic_join(bootstrap: str, group: str, protocol_type: str, metadata: bytes) -> Any:
    """One member of a classic group of `protocol_type`, Stable (JoinGroup v3 then
    SyncGroup)."""
    schema = request_schema(11, 3)
    joined = call1(
        bootstrap,
        schema.make(
            "JoinGroupRequest",
            group_id=group,
            session_timeout=datetime.timedelta(seconds=30),
            rebalance_timeout=datetime.timedelta(seconds=30),
            member_id="",
            group_instance_id=None,
            protocol_type=protocol_type,
            protocols=(schema.make("JoinGroupRequestProtocol", name="range", metadata=metadata),),
            reason=None,
        ),
    )
    assert joined.error_code == ErrorCode.none, joined
    sync = request_schema(14, 3).make(
        "SyncGroupRequest",
        group_id=group,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id=None,
        protocol_type=protocol_type,
        protocol_name="range",
        assignments=(
            request_schema(14, 3).make(
                "SyncGroupRequestAssignment", member_id=joined.member_id, assignment=b""
            ),
        ),
    )
    synced = call1(bootstrap, sync)
    assert synced.error_code == ErrorCode.none, synced
    return joined


def test_offset_delete_of_each_group_type_and_error(pair: Pair) -> None:
    subscribed, other = unique("od-sub"), unique("od-other")
    cp, classic, connect = unique("od-cp"), unique("od-classic"), unique("od-connect")

    def scenario(bootstrap: str) -> dict[str, object]:
        create_topic(bootstrap, subscribed, partitions=2)
        create_topic(bootstrap, other, partitions=1)
        seen: dict[str, object] = {}
        offsets = {(subscribed, 0): 1, (subscribed, 1): 2, (other, 0): 3}
        asked = [(subscribed, 0), (other, 0), (other, 5), (f"{other}-none", 0)]
        # a consumer-protocol group with a member subscribed to one topic
        joined = until_coordinated(bootstrap, beat(0, cp, "", 0, [subscribed], owned={}))
        assert joined.error_code == ErrorCode.none, joined
        member, epoch = joined.member_id, int(joined.member_epoch)
        committed = call1(
            bootstrap, commit_request(9, cp, offsets, member_id=member, generation=epoch)
        )
        seen["cp commit"] = sorted(
            ErrorCode(p.error_code).name for t in committed.topics for p in t.partitions
        )
        seen["cp with member"] = _deleted(call1(bootstrap, _offset_delete(cp, asked)))
        seen["cp after"] = _committed(bootstrap, cp)
        left = call1(bootstrap, beat(0, cp, member, -1, [subscribed]))
        assert left.error_code == ErrorCode.none, left
        seen["cp empty"] = _deleted(call1(bootstrap, _offset_delete(cp, asked[:1])))
        seen["cp empty after"] = _committed(bootstrap, cp)
        # a classic consumer group, Stable, subscribed to one topic
        _classic_join(bootstrap, classic, "consumer", consumer_subscription([subscribed]))
        call1(bootstrap, commit_request(9, classic, {(other, 0): 4}, generation=-1))
        seen["classic"] = _deleted(call1(bootstrap, _offset_delete(classic, asked)))
        # a classic group of another protocol type with a member
        _classic_join(bootstrap, connect, "connect", b"")
        seen["connect"] = _deleted(call1(bootstrap, _offset_delete(connect, asked)))
        seen["unknown"] = _deleted(call1(bootstrap, _offset_delete(f"{cp}-none", asked)))
        seen["no id"] = _deleted(call1(bootstrap, _offset_delete("", asked[:1])))
        return seen

    kafka, shoal = pair.run(scenario)
    assert shoal == kafka
    assert kafka["cp with member"] == (
        "none",
        {
            f"{subscribed}-0": "group_subscribed_to_topic",
            f"{other}-0": "none",
            f"{other}-5": "unknown_topic_or_partition",
            f"{other}-none-0": "unknown_topic_or_partition",
        },
    )
    assert kafka["cp after"] == [(subscribed, 0, 1), (subscribed, 1, 2)]
    assert kafka["cp empty after"] == [(subscribed, 1, 2)]


# ---- 3. a regex subscription is resolved after the heartbeat that brings it


def _heartbeat(
    bootstrap: str,
    group: str,
    member: str,
    epoch: int,
    owned: dict[Any, list[int]] | None,
    *,
    names: tuple[str, ...] | None = None,
    regex: str | None = None,
) -> Any:
    schema = request_schema(68, 1)
    request = schema.make(
        "ConsumerGroupHeartbeatRequest",
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        instance_id=None,
        rack_id=None,
        rebalance_timeout=datetime.timedelta(seconds=30 if epoch == 0 else -0.001),
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        server_assignor=None,
        topic_partitions=None
        if owned is None
        else tuple(
            schema.make("TopicPartitions", topic_id=t, partitions=tuple(ps))
            for t, ps in owned.items()
        ),
    )
    response = until_coordinated(bootstrap, request)
    assert response.error_code == ErrorCode.none, response
    return response


def test_regex_subscription_resolves_one_heartbeat_late(pair: Pair) -> None:
    prefix = unique("rx")
    first, second, literal = f"{prefix}-a", f"{prefix}-b", f"{prefix}lit"
    group, switching = f"{prefix}-g", f"{prefix}-g2"
    regex = f"{prefix}-.*"

    def scenario(bootstrap: str) -> dict[str, object]:
        create_topic(bootstrap, first, partitions=2)
        create_topic(bootstrap, literal, partitions=1)
        names = {}

        def topics_of(response: Any) -> list[str] | None:
            if response.assignment is None:
                return None
            return sorted(
                f"{names[tp.topic_id]}:{len(tp.partitions)}"
                for tp in response.assignment.topic_partitions
            )

        def learn() -> None:
            for topic in call1(bootstrap, metadata_request(None).build(12)).topics:
                names[topic.topic_id] = topic.name

        learn()
        seen: dict[str, object] = {}
        member = unique("m")[:22]
        joined = _heartbeat(bootstrap, group, member, 0, {}, names=(), regex=regex)
        steps = [(int(joined.member_epoch), topics_of(joined))]
        owned: dict[Any, list[int]] = {}
        epoch = int(joined.member_epoch)
        for _ in range(2):
            time.sleep(0.5)
            r = _heartbeat(bootstrap, group, member, epoch, owned)
            if r.assignment is not None:
                owned = {tp.topic_id: list(tp.partitions) for tp in r.assignment.topic_partitions}
            epoch = int(r.member_epoch)
            steps.append((epoch, topics_of(r)))
        seen["join"] = steps
        resolved_at = time.monotonic()
        create_topic(bootstrap, second, partitions=1)
        learn()
        picked_up = None
        quiet = []
        while time.monotonic() < resolved_at + 30:
            time.sleep(1)
            r = _heartbeat(bootstrap, group, member, epoch, owned)
            if r.assignment is not None:
                picked_up = (int(r.member_epoch), topics_of(r), time.monotonic() - resolved_at)
                break
            quiet.append(int(r.member_epoch))
        assert picked_up is not None
        seen["new topic"] = picked_up[:2]
        seen["quiet epochs"] = sorted(set(quiet))
        seen["after s"] = picked_up[2]
        # a member subscribed by name switches to the regex
        other = unique("m")[:22]
        r = _heartbeat(bootstrap, switching, other, 0, {}, names=(literal,))
        lit = {tp.topic_id: list(tp.partitions) for tp in r.assignment.topic_partitions}
        steps = [(int(r.member_epoch), topics_of(r))]
        r = _heartbeat(bootstrap, switching, other, 1, lit, names=(), regex=regex)
        steps.append((int(r.member_epoch), topics_of(r)))
        time.sleep(0.5)
        r = _heartbeat(bootstrap, switching, other, int(r.member_epoch), {})
        steps.append((int(r.member_epoch), topics_of(r)))
        seen["switch"] = steps
        return seen

    kafka, shoal = pair.run(scenario)
    # The moment a created topic is picked up depends on when the 10 s window
    # started and on heartbeat timing: both must wait it out.
    for observed in (kafka, shoal):
        assert 10.0 <= observed.pop("after s") <= 13.0, observed  # type: ignore[operator]
    assert shoal == kafka
    assert kafka["join"] == [(1, []), (2, [f"{first}:2"]), (2, None)]
    assert kafka["new topic"] == (3, [f"{first}:2", f"{second}:1"])
    assert kafka["switch"] == [(1, [f"{literal}:1"]), (1, []), (3, [f"{first}:2", f"{second}:1"])]


# ---- 4. OffsetCommit / OffsetFetch v10 (topic ids) and DescribeGroups v6


def test_offset_apis_by_topic_id_and_describe_groups_v6(pair: Pair) -> None:
    topic, group, classic = unique("v10"), unique("v10-g"), unique("v10-c")
    bogus = uuid.UUID(int=0x5EED)

    def scenario(bootstrap: str) -> dict[str, object]:
        create_topic(bootstrap, topic, partitions=2)
        (meta,) = call1(bootstrap, metadata_request([topic]).build(12)).topics
        tid = meta.topic_id

        def name(topic_id: Any) -> str:
            return "topic" if topic_id == tid else str(topic_id)

        commit = request_schema(8, 10)

        def part(index: int, offset: int) -> Any:
            return commit.make(
                "OffsetCommitRequestPartition",
                partition_index=index,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="m",
            )

        committed = until_coordinated_topics(
            bootstrap,
            commit.make(
                "OffsetCommitRequest",
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=(
                    commit.make(
                        "OffsetCommitRequestTopic",
                        topic_id=tid,
                        partitions=(part(0, 2), part(7, 1)),
                    ),
                    commit.make(
                        "OffsetCommitRequestTopic", topic_id=bogus, partitions=(part(0, 1),)
                    ),
                ),
            ),
        )
        seen: dict[str, object] = {
            "commit": sorted(
                (name(t.topic_id), int(p.partition_index), ErrorCode(p.error_code).name)
                for t in committed.topics
                for p in t.partitions
            )
        }
        fetch = request_schema(9, 10)
        for label, topics in (
            ("fetch all", None),
            (
                "fetch some",
                (
                    fetch.make("OffsetFetchRequestTopics", topic_id=tid, partition_indexes=(0, 1)),
                    fetch.make("OffsetFetchRequestTopics", topic_id=bogus, partition_indexes=(0,)),
                ),
            ),
        ):
            response = call1(
                bootstrap,
                fetch.make(
                    "OffsetFetchRequest",
                    groups=(
                        fetch.make(
                            "OffsetFetchRequestGroup",
                            group_id=group,
                            member_id=None,
                            member_epoch=-1,
                            topics=topics,
                        ),
                    ),
                    require_stable=False,
                ),
            )
            (g,) = response.groups
            seen[label] = (
                ErrorCode(g.error_code).name,
                sorted(
                    (
                        name(t.topic_id),
                        int(p.partition_index),
                        int(p.committed_offset),
                        p.metadata,
                        ErrorCode(p.error_code).name,
                    )
                    for t in g.topics
                    for p in t.partitions
                ),
            )
        _classic_join(bootstrap, classic, "consumer", consumer_subscription([topic]))
        cp = unique("v10-cp")
        _heartbeat(bootstrap, cp, unique("m")[:22], 0, {}, names=(topic,))
        for version in (5, 6):
            request = request_schema(15, version).make(
                "DescribeGroupsRequest",
                groups=(classic, cp, f"{group}-none"),
                include_authorized_operations=False,
            )
            response = call1(bootstrap, request)
            seen[f"describe v{version}"] = sorted(
                (
                    "classic"
                    if g.group_id == classic
                    else "consumer"
                    if g.group_id == cp
                    else "none",
                    ErrorCode(g.error_code).name,
                    (getattr(g, "error_message", None) or "").replace(str(g.group_id), "G"),
                    g.group_state,
                    g.protocol_type,
                    len(g.members),
                )
                for g in response.groups
            )
        return seen

    kafka, shoal = pair.run(scenario)
    assert shoal == kafka
    assert kafka["commit"] == [
        (str(bogus), 0, "unknown_topic_id"),
        ("topic", 0, "none"),
        ("topic", 7, "unknown_topic_or_partition"),
    ]
    assert [g[:3] for g in kafka["describe v6"]] == [  # type: ignore[attr-defined]
        ("classic", "none", ""),
        ("consumer", "group_id_not_found", "Group G is not a classic group."),
        ("none", "group_id_not_found", "Group G not found."),
    ]


def until_coordinated_topics(bootstrap: str, request: Any) -> Any:
    """An OffsetCommit (no top-level error) resent while its partitions answer that
    the coordinator is not ready."""
    call1(bootstrap, find_coordinator(request.group_id).build(4))
    deadline = time.monotonic() + SETTLE_S
    while True:
        response = call1(bootstrap, request)
        codes = {p.error_code for t in response.topics for p in t.partitions}
        if not codes & set(_NOT_READY) or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


# ---- 5. real clients: rebalances, migration, static members, admin


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _described(bootstrap: str, group: str) -> tuple[str, str, str, int]:
    """(state, type, assignor, members) as confluent-kafka's AdminClient sees it."""
    admin = _admin(bootstrap)  # kept alive until the answer is in
    (future,) = admin.describe_consumer_groups([group]).values()
    d = future.result(timeout=30)
    return (d.state.name, d.type.name, d.partition_assignor, len(d.members))


class _Member:
    """A confluent-kafka consumer that counts what its rebalance callbacks see."""

    def __init__(self, bootstrap: str, group: str, protocol: str, **extra: Any) -> None:
        self.consumer = group_consumer(bootstrap, group, protocol=protocol, **extra)
        self.revoked: list[int] = []
        self.assigned: list[int] = []

    def subscribe(self, topics: list[str]) -> None:
        self.consumer.subscribe(
            topics,
            on_assign=lambda _c, parts: self.assigned.append(len(parts)),
            on_revoke=lambda _c, parts: self.revoked.append(len(parts)),
        )

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def _settle(members: list[_Member], counts: list[int], *, timeout_s: float = SETTLE_S) -> None:
    """Poll every member until they own `counts` partitions (each partition once)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for m in members:
            m.consumer.poll(0.05)
        owned = [m.owned() for m in members]
        every = [p for parts in owned for p in parts]
        if sorted(len(o) for o in owned) == sorted(counts) and len(every) == len(set(every)):
            return
    raise AssertionError(f"not settled to {counts}: {[sorted(m.owned()) for m in members]}")


def _two_members_join_and_leave(
    bootstrap: str, topic: str, group: str, protocol: str, **extra: Any
) -> dict[str, object]:
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    first = _Member(bootstrap, group, protocol, **extra)
    second = _Member(bootstrap, group, protocol, **extra)
    seen: dict[str, object] = {}
    try:
        first.subscribe([topic])
        _settle([first], [PARTITIONS])
        seen["one"] = _described(bootstrap, group)
        second.subscribe([topic])
        _settle([first, second], [PARTITIONS // 2, PARTITIONS // 2])
        seen["two"] = _described(bootstrap, group)
        seen["first revoked on join"] = sum(first.revoked)
        first.consumer.close()
        _settle([second], [PARTITIONS])
        seen["second assigned"] = sorted(second.assigned)
        seen["after leave"] = _described(bootstrap, group)
    finally:
        second.consumer.close()
    deadline = time.monotonic() + SETTLE_S
    while _described(bootstrap, group)[0] != "EMPTY" and time.monotonic() < deadline:
        time.sleep(0.2)
    seen["closed"] = _described(bootstrap, group)
    return seen


@pytest.mark.parametrize(
    ("protocol", "extra"),
    [
        ("classic", {"partition.assignment.strategy": "range"}),
        ("classic", {"partition.assignment.strategy": "cooperative-sticky"}),
        ("consumer", {}),
    ],
    ids=["classic-eager-range", "classic-cooperative-sticky", "consumer-protocol"],
)
def test_two_members_join_and_leave(pair: Pair, protocol: str, extra: dict[str, str]) -> None:
    topic, group = unique("rb"), unique("rb-g")
    kafka, shoal = pair.run(_two_members_join_and_leave, topic, group, protocol, **extra)
    assert shoal == kafka
    assert kafka["two"][0] == "STABLE" and kafka["closed"][0] == "EMPTY"  # type: ignore[index]
    # eager revokes everything before the second join; cooperative and KIP-848 only
    # what moves
    eager = extra.get("partition.assignment.strategy") == "range"
    assert kafka["first revoked on join"] == (PARTITIONS if eager else PARTITIONS // 2)


def _commit_and_close(bootstrap: str, topic: str, group: str, protocol: str) -> None:
    member = _Member(bootstrap, group, protocol)
    try:
        member.subscribe([topic])
        _settle([member], [PARTITIONS])
        member.consumer.commit(
            offsets=[TopicPartition(topic, p, 1) for p in range(PARTITIONS)], asynchronous=False
        )
    finally:
        member.consumer.close()


def _committed_offsets(bootstrap: str, group: str) -> list[tuple[str, int, int]]:
    return _committed(bootstrap, group)


def _migration(bootstrap: str, topic: str, empty: str, busy: str) -> dict[str, object]:
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    seen: dict[str, object] = {}
    # an Empty classic group with offsets: a consumer-protocol member takes it over
    _commit_and_close(bootstrap, topic, empty, "classic")
    seen["empty classic"] = _described(bootstrap, empty)
    newcomer = _Member(bootstrap, empty, "consumer")
    try:
        newcomer.subscribe([topic])
        _settle([newcomer], [PARTITIONS])
        seen["taken over"] = _described(bootstrap, empty)
        seen["offsets kept"] = _committed_offsets(bootstrap, empty)
    finally:
        newcomer.consumer.close()
    # a classic member is joined by a consumer-protocol member: the group is upgraded
    classic = _Member(bootstrap, busy, "classic")
    modern = _Member(bootstrap, busy, "consumer")
    try:
        classic.subscribe([topic])
        _settle([classic], [PARTITIONS])
        seen["classic only"] = _described(bootstrap, busy)
        modern.subscribe([topic])
        _settle([classic, modern], [PARTITIONS // 2, PARTITIONS // 2], timeout_s=90)
        seen["upgraded"] = _described(bootstrap, busy)
        modern.consumer.close()
        _settle([classic], [PARTITIONS], timeout_s=90)
        deadline = time.monotonic() + SETTLE_S
        while _described(bootstrap, busy)[1] != "CLASSIC" and time.monotonic() < deadline:
            classic.consumer.poll(0.1)
        seen["downgraded"] = _described(bootstrap, busy)
    finally:
        classic.consumer.close()
    return seen


def test_migration_between_classic_and_consumer_protocol(pair: Pair) -> None:
    topic, empty, busy = unique("mig"), unique("mig-empty"), unique("mig-busy")
    kafka, shoal = pair.run(_migration, topic, empty, busy)
    assert shoal == kafka
    assert kafka["taken over"][1] == "CONSUMER"  # type: ignore[index]
    assert kafka["upgraded"][1:] == ("CONSUMER", "uniform", 2)  # type: ignore[index]
    assert kafka["downgraded"][1] == "CLASSIC"  # type: ignore[index]


def _static_restart(bootstrap: str, topic: str, group: str, protocol: str) -> dict[str, object]:
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    static = {"session.timeout.ms": 30_000} if protocol == "classic" else {}
    first = _Member(bootstrap, group, protocol, **static, **{"group.instance.id": "one"})
    second = _Member(bootstrap, group, protocol, **static, **{"group.instance.id": "two"})
    seen: dict[str, object] = {}
    try:
        first.subscribe([topic])
        second.subscribe([topic])
        _settle([first, second], [PARTITIONS // 2, PARTITIONS // 2])
        time.sleep(2)  # let a second join round (if any) finish
        for m in (first, second):
            m.consumer.poll(0.1)
        before, events = first.owned(), (list(second.assigned), list(second.revoked))
        first.consumer.close()  # a static member does not leave the group
        seen["after close"] = _described(bootstrap, group)[0::3]
        again = _Member(bootstrap, group, protocol, **static, **{"group.instance.id": "one"})
        first = again
        again.subscribe([topic])
        _settle([again, second], [PARTITIONS // 2, PARTITIONS // 2])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for m in (again, second):
                m.consumer.poll(0.1)
        seen["same partitions"] = again.owned() == before
        seen["second untouched"] = (list(second.assigned), list(second.revoked)) == events
        seen["restarted"] = _described(bootstrap, group)
    finally:
        first.consumer.close()
        second.consumer.close()
    return seen


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_static_member_restarts_without_rebalance(pair: Pair, protocol: str) -> None:
    topic, group = unique("static"), unique("static-g")
    kafka, shoal = pair.run(_static_restart, topic, group, protocol)
    assert shoal == kafka
    assert kafka["same partitions"] is True and kafka["second untouched"] is True
    # the closed static member stays; a KIP-848 group is then in a state librdkafka's
    # admin client has no name for (UNKNOWN)
    assert kafka["after close"] == ("STABLE" if protocol == "classic" else "UNKNOWN", 2)


def _fenced_instance(bootstrap: str, group: str) -> dict[str, object]:
    seen: dict[str, object] = {}
    schema = request_schema(11, 5)
    join = schema.make(
        "JoinGroupRequest",
        group_id=group,
        session_timeout=datetime.timedelta(seconds=30),
        rebalance_timeout=datetime.timedelta(seconds=30),
        member_id="",
        group_instance_id="inst",
        protocol_type="consumer",
        protocols=(schema.make("JoinGroupRequestProtocol", name="range", metadata=b""),),
        reason=None,
    )
    call1(bootstrap, find_coordinator(group).build(4))
    first = until_coordinated(bootstrap, join)
    seen["first join"] = ErrorCode(first.error_code).name
    sync = request_schema(14, 5)
    synced = call1(
        bootstrap,
        sync.make(
            "SyncGroupRequest",
            group_id=group,
            generation_id=first.generation_id,
            member_id=first.member_id,
            group_instance_id="inst",
            protocol_type="consumer",
            protocol_name="range",
            assignments=(
                sync.make("SyncGroupRequestAssignment", member_id=first.member_id, assignment=b""),
            ),
        ),
    )
    seen["sync"] = ErrorCode(synced.error_code).name
    second = call1(bootstrap, join)
    seen["second join"] = (
        ErrorCode(second.error_code).name,
        second.member_id != first.member_id,
        second.generation_id == first.generation_id,
    )
    beat = request_schema(12, 4)
    for label, member, instance in (
        ("old id", first.member_id, "inst"),
        ("old id no instance", first.member_id, None),
        ("new id", second.member_id, "inst"),
    ):
        response = call1(
            bootstrap,
            beat.make(
                "HeartbeatRequest",
                group_id=group,
                generation_id=second.generation_id,
                member_id=member,
                group_instance_id=instance,
            ),
        )
        seen[label] = ErrorCode(response.error_code).name
    commit = call1(
        bootstrap,
        commit_request(
            7,
            group,
            {(f"{group}-t", 0): 1},
            member_id=first.member_id,
            generation=second.generation_id,
            instance="inst",
        ),
    )
    seen["old id commits"] = sorted(
        ErrorCode(p.error_code).name for t in commit.topics for p in t.partitions
    )
    return seen


def test_duplicate_static_member_is_fenced(pair: Pair) -> None:
    group = unique("fenced")
    kafka, shoal = pair.run(_fenced_instance, group)
    assert shoal == kafka
    assert kafka["old id"] == "fenced_instance_id" and kafka["new id"] == "none"


def _admin_views(bootstrap: str, topic: str, prefix: str) -> dict[str, object]:
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    classic, modern, simple, idle = (
        f"{prefix}-{k}" for k in ("classic", "modern", "simple", "idle")
    )
    _commit_and_close(bootstrap, topic, idle, "classic")
    call1(bootstrap, commit_request(9, simple, {(topic, 0): 5}))
    members = [_Member(bootstrap, classic, "classic"), _Member(bootstrap, modern, "consumer")]
    seen: dict[str, object] = {}
    try:
        for m in members:
            m.subscribe([topic])
        for m in members:  # two groups: each owns every partition
            _settle([m], [PARTITIONS])
        listed = call1(
            bootstrap,
            request_schema(16, 5).make("ListGroupsRequest", states_filter=(), types_filter=()),
        )
        seen["listed"] = sorted(
            (g.group_id[len(prefix) :], g.protocol_type, g.group_state, g.group_type)
            for g in listed.groups
            if g.group_id.startswith(prefix)
        )
        for name, states, types in (
            ("stable", ("Stable",), ()),
            ("empty", ("Empty",), ()),
            ("classic type", (), ("classic",)),
            ("consumer type", (), ("consumer",)),
        ):
            filtered = call1(
                bootstrap,
                request_schema(16, 5).make(
                    "ListGroupsRequest", states_filter=states, types_filter=types
                ),
            )
            seen[name] = sorted(
                g.group_id[len(prefix) :] for g in filtered.groups if g.group_id.startswith(prefix)
            )
        seen["described"] = {g: _described(bootstrap, g) for g in (classic, modern, simple, idle)}
        deleted = call1(
            bootstrap,
            request_schema(42, 2).make(
                "DeleteGroupsRequest", groups_names=(classic, modern, idle, f"{prefix}-none")
            ),
        )
        seen["deleted"] = sorted(
            (r.group_id[len(prefix) :], ErrorCode(r.error_code).name) for r in deleted.results
        )
        seen["idle offsets after"] = _committed(bootstrap, idle)
    finally:
        for m in members:
            m.consumer.close()
    return seen


def test_list_describe_and_delete_groups(pair: Pair) -> None:
    topic, prefix = unique("adm"), unique("adm-g")
    kafka, shoal = pair.run(_admin_views, topic, prefix)
    assert shoal == kafka
    assert kafka["deleted"] == [
        ("-classic", "non_empty_group"),
        ("-idle", "none"),
        ("-modern", "non_empty_group"),
        ("-none", "group_id_not_found"),
    ]


def _session_expiry(bootstrap: str, group: str) -> dict[str, object]:
    schema = request_schema(11, 3)
    session_ms = 6_000
    join = schema.make(
        "JoinGroupRequest",
        group_id=group,
        session_timeout=datetime.timedelta(milliseconds=session_ms),
        rebalance_timeout=datetime.timedelta(milliseconds=session_ms),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(schema.make("JoinGroupRequestProtocol", name="range", metadata=b""),),
        reason=None,
    )
    joined = until_coordinated(bootstrap, join)
    sync = request_schema(14, 3)
    call1(
        bootstrap,
        sync.make(
            "SyncGroupRequest",
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(
                sync.make("SyncGroupRequestAssignment", member_id=joined.member_id, assignment=b""),
            ),
        ),
    )
    started = time.monotonic()
    state = "Stable"
    while state != "Empty" and time.monotonic() < started + 30:
        time.sleep(0.1)
        (g,) = call1(bootstrap, describe_groups([group]).build(5)).groups
        state = g.group_state
    return {"state": state, "evicted within s": time.monotonic() - started}


def test_silent_classic_member_is_evicted_after_its_session_timeout(pair: Pair) -> None:
    group = unique("expiry")
    kafka, shoal = pair.run(_session_expiry, group)
    for observed in (kafka, shoal):
        assert observed["state"] == "Empty"
        # Kafka checks sessions on a timer; both evict between the timeout and 3 s later
        assert 5.9 <= observed["evicted within s"] <= 9.0, observed  # type: ignore[operator]


def _kafka_python_group(bootstrap: str, topic: str, group: str) -> dict[str, object]:
    """kafka-python (classic protocol only): two members share a topic, commit, leave."""
    with warnings.catch_warnings():  # kafka-python's import uses a deprecated API
        warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
        from kafka import KafkaAdminClient, KafkaConsumer
        from kafka import TopicPartition as KafkaPartition

    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, dict.fromkeys(range(PARTITIONS), 2))
    settings: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": 10_000,
        "heartbeat_interval_ms": 500,
    }
    consumers = [KafkaConsumer(**settings) for _ in range(2)]
    for c in consumers:
        # The topic's metadata first: a kafka-python leader that learns of the topic
        # after joining rejoins at once. In that extra round the two consumers (one
        # shared kafka-python IO thread) sometimes get their SyncGroup answers in the
        # same millisecond (Shoal answers the parked follower and the leader
        # together) and the leader then never resumes heartbeating: a client race,
        # seen in client debug logs, that Kafka's slower answers did not trigger.
        deadline = time.monotonic() + SETTLE_S
        while c.partitions_for_topic(topic) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        c.subscribe([topic])
    seen: dict[str, object] = {}
    got = [0, 0]
    stop = threading.Event()

    def run(index: int) -> None:  # a member's JoinGroup blocks its own poll: a thread each
        while not stop.is_set():
            batches = consumers[index].poll(timeout_ms=100)
            got[index] += sum(len(batch) for batch in batches.values())

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            owned = [len(c.assignment()) for c in consumers]
            if sum(got) >= 2 * PARTITIONS and sorted(owned) == [3, 3]:
                break
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(timeout=10)
        seen["counts"] = sorted(len(c.assignment()) for c in consumers)
        for c in consumers:
            c.commit()
        seen["committed"] = sorted(
            consumers[0].committed(KafkaPartition(topic, p)) for p in range(PARTITIONS)
        )
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            described = admin.describe_groups([group])[group]
            seen["described"] = (
                described["group_state"],
                described["protocol_type"],
                described["protocol_data"],
                len(described["members"]),
            )
            seen["listed"] = [
                sorted(g.items()) for g in admin.list_groups() if g["group_id"] == group
            ]
        finally:
            admin.close()
    finally:
        for c in consumers:
            c.close()
    return seen


def test_kafka_python_classic_group(pair: Pair) -> None:
    topic, group = unique("kp"), unique("kp-g")
    kafka, shoal = pair.run(_kafka_python_group, topic, group)
    assert shoal == kafka
    assert kafka["counts"] == [3, 3] and kafka["committed"] == [2] * PARTITIONS
