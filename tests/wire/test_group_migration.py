"""Online classic <-> consumer group conversion against a broker process, on the
wire: a ConsumerGroupHeartbeat upgrades a Stable classic group; ListGroups,
ConsumerGroupDescribe (MemberType 0 for classic members) and DescribeGroups report
it as Kafka does; the classic member is told to rejoin and is served by the consumer
group (JoinGroup, SyncGroup, Heartbeat); when the consumer member leaves the group
is classic again and rebalancing. A broker with `group.consumer.migration.policy=
disabled` refuses the upgrade with GROUP_ID_NOT_FOUND."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.group.classic.subscriptions import read_assignment, write_assignment
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess, running
from tests.support.classic_groups import (
    consumer_subscription,
    heartbeat_request,
    join_request,
    sync_request,
)
from tests.support.consumer_wire import beat, describe, listed_groups
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

NO_DELAY = "group.initial.rebalance.delay.ms=0"


@pytest.fixture(scope="module")
def migrating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("migrate") / "data", NO_DELAY)


@pytest.fixture(scope="module")
def no_migration(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("no-migrate") / "data",
        NO_DELAY,
        "group.consumer.migration.policy=DISABLED",
    )


def describe_classic(bootstrap: str, group: str) -> Any:
    request = request_schema(15, 5).make(
        "DescribeGroupsRequest", groups=(group,), include_authorized_operations=False
    )
    return call1(bootstrap, request).groups[0]


def classic_member(bootstrap: str, group: str, topic: str) -> tuple[str, int]:
    """One classic member (JoinGroup v3, a real consumer subscription), Stable with
    every partition of `topic` (3)."""
    joined = call1(
        bootstrap,
        join_request(3, group, protocols=[("range", consumer_subscription([topic]))]),
    )
    assert joined.error_code == ErrorCode.none, joined
    member, generation = joined.member_id, int(joined.generation_id)
    assignment = write_assignment({topic: [0, 1, 2]}, version=1)
    synced = call1(bootstrap, sync_request(3, group, member, generation, {member: assignment}))
    assert synced.error_code == ErrorCode.none, synced
    return member, generation


def test_upgrade_and_downgrade_on_the_wire(migrating: BrokerProcess) -> None:
    bootstrap = migrating.bootstrap
    topic = topic_name("mig")
    create_topic(bootstrap, topic, partitions=3)
    group = topic_name("g")
    member, generation = classic_member(bootstrap, group, topic)
    assert listed_groups(bootstrap)[group] == ("classic", "consumer", "Stable")

    joined = call1(bootstrap, beat(1, group, "consumer-member-0000001", 0, [topic]))
    assert joined.error_code == ErrorCode.none, joined
    assert joined.member_epoch == generation + 1
    assert listed_groups(bootstrap)[group][:2] == ("consumer", "consumer")
    described = call1(bootstrap, describe(1, group)).groups[0]
    assert described.error_code == ErrorCode.none
    types = {m.member_id: m.member_type for m in described.members}
    assert types == {member: 0, "consumer-member-0000001": 1}
    # DescribeGroups describes only classic groups (Kafka 4.2): Dead.
    assert describe_classic(bootstrap, group).group_state == "Dead"

    # The classic member is told to rejoin; served by the consumer group.
    told = call1(bootstrap, heartbeat_request(4, group, member, generation))
    assert told.error_code == ErrorCode.rebalance_in_progress
    rejoined = call1(
        bootstrap,
        join_request(
            7, group, member_id=member, protocols=[("range", consumer_subscription([topic]))]
        ),
    )
    assert rejoined.error_code == ErrorCode.none, rejoined
    assert rejoined.protocol_type == "consumer" and rejoined.protocol_name == "range"
    assert rejoined.leader == "" and rejoined.members == ()
    synced = call1(bootstrap, sync_request(5, group, member, rejoined.generation_id, {}))
    assert synced.error_code == ErrorCode.none, synced
    mine = read_assignment(synced.assignment)
    assert mine is not None and len(mine.get(topic, frozenset())) < 3

    # The consumer member leaves: the group is classic again, rebalancing.
    left = call1(bootstrap, beat(1, group, "consumer-member-0000001", -1))
    assert left.error_code == ErrorCode.none, left
    assert listed_groups(bootstrap)[group] == ("classic", "consumer", "PreparingRebalance")
    again = describe_classic(bootstrap, group)
    assert [m.member_id for m in again.members] == [member]


def test_the_disabled_policy_refuses_the_upgrade(no_migration: BrokerProcess) -> None:
    bootstrap = no_migration.bootstrap
    topic = topic_name("mig")
    create_topic(bootstrap, topic, partitions=3)
    group = topic_name("g")
    classic_member(bootstrap, group, topic)
    refused = call1(bootstrap, beat(1, group, "consumer-member-0000002", 0, [topic]))
    assert refused.error_code == ErrorCode.group_id_not_found
    assert "online upgrade is disabled" in refused.error_message
    assert listed_groups(bootstrap)[group] == ("classic", "consumer", "Stable")


def test_a_classic_member_joins_a_consumer_group(migrating: BrokerProcess) -> None:
    bootstrap = migrating.bootstrap
    topic = topic_name("mig")
    create_topic(bootstrap, topic, partitions=2)
    group = topic_name("g")
    assert call1(bootstrap, beat(1, group, "consumer-member-0000003", 0, [topic])).error_code == 0
    protocols = [("range", consumer_subscription([topic]))]
    first = call1(bootstrap, join_request(5, group, protocols=protocols))
    assert first.error_code == ErrorCode.member_id_required
    joined = call1(
        bootstrap, join_request(5, group, member_id=first.member_id, protocols=protocols)
    )
    assert joined.error_code == ErrorCode.none, joined
    assert joined.generation_id == 2
    roundrobin = [("roundrobin", consumer_subscription([topic]))]
    wrong = call1(bootstrap, join_request(5, group, member_id="x", protocols=roundrobin))
    assert wrong.error_code == ErrorCode.inconsistent_group_protocol
    assert listed_groups(bootstrap)[group][0] == "consumer"
