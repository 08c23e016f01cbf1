"""Online classic <-> consumer group conversion on the shard, with a manual clock:
upgrade by a ConsumerGroupHeartbeat, classic members served by the consumer group
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, session expiry),
downgrade when the last consumer-protocol member leaves, the migration policy, and
replay equal to live (checked by the harness at teardown of every test)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from shoal.config import BrokerConfig, ConfigError
from shoal.group import records as r
from shoal.group.classic.groups import ClassicSettings
from shoal.group.classic.state import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    JoinRequest,
    SyncResponse,
)
from shoal.group.classic.subscriptions import read_assignment
from shoal.group.committed_offsets import OffsetToCommit
from shoal.group.consumer.group import ConsumerGroup
from shoal.group.settings import ConsumerGroupSettings
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness
from tests.unit.group.mixed_groups import DELAY_MS, REBALANCE_MS, SESSION_MS, C, Mixed


@pytest.fixture
def m(harness: Harness) -> Mixed:
    harness.set_topics(t=4)
    return Mixed(harness)


def owners(group: ConsumerGroup) -> dict[tuple[uuid.UUID, int], str]:
    return group.owners()


# ---- upgrade --------------------------------------------------------------------------


def test_a_consumer_heartbeat_upgrades_a_classic_group(m: Mixed) -> None:
    a, b = m.stable_classic_pair()
    start = len(m.h.log)
    joined = m.beat(C, 0, ["t"])
    assert joined.error is None and joined.member_epoch == 2
    written = [type(record.key).__name__ for record in m.h.log[start:]]
    # Kafka's order: GroupMetadata tombstone, then createConsumerGroupRecords, then
    # the joining member's own records.
    assert written[:9] == [
        "GroupMetadataKey",
        "ConsumerGroupMemberMetadataKey",
        "ConsumerGroupMemberMetadataKey",
        "ConsumerGroupMetadataKey",
        "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMetadataKey",
        "ConsumerGroupCurrentMemberAssignmentKey",
        "ConsumerGroupCurrentMemberAssignmentKey",
    ]
    assert m.h.log[start].value is None
    assert m.h.shard.group_type("g") == "consumer"
    assert "g" not in m.h.shard.classic.groups.groups
    group = m.consumer()
    assert set(group.members) == {a, b, C} and group.group_epoch == 2
    classic_a = group.members[a].classic
    assert classic_a is not None and classic_a.session_timeout_ms == SESSION_MS
    assert group.members[C].classic is None
    # The classic members keep their partitions until they rejoin: C waits.
    assert sorted(p for (_, p), owner in owners(group).items() if owner == a) == [0, 1]
    assert joined.assignment is not None and all(not tp.partitions for tp in joined.assignment)


def test_classic_members_rejoin_and_the_group_settles_with_one_owner_each(m: Mixed) -> None:
    a, b = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    assert m.heartbeat(a, 1) == ErrorCode.rebalance_in_progress
    assert m.heartbeat(b, 1) == ErrorCode.rebalance_in_progress
    assert m.sync(a, 1) == SyncResponse(error=ErrorCode.rebalance_in_progress)
    generations = {a: 1, b: 1}
    c_epoch = 2
    for _ in range(4):
        # Eager clients: told to rebalance, they give everything up and rejoin.
        for member in (a, b):
            if m.heartbeat(member, generations[member]) is None:
                continue
            rejoined = m.join(member)
            assert rejoined is not None and rejoined.error is None, rejoined
            assert rejoined.leader == "" and not rejoined.members
            assert rejoined.protocol_type == "consumer" and rejoined.protocol_name == "range"
            generations[member] = rejoined.generation_id
            synced = m.sync(member, rejoined.generation_id)
            assert synced is not None and synced.error is None, synced
        c_epoch = m.beat(C, c_epoch).member_epoch
    group = m.consumer()
    assert group.state == "Stable", group
    held = owners(group)
    assert len(held) == 4 and set(held.values()) == {a, b, C}
    for member in (a, b):
        assert m.heartbeat(member, generations[member]) is None
        synced = m.sync(member, generations[member])
        assert synced is not None
        mine = read_assignment(synced.assignment)
        assert mine == {"t": frozenset(p for (_, p), o in held.items() if o == member)}


def test_an_empty_classic_group_is_replaced_even_when_upgrades_are_disabled(m: Mixed) -> None:
    m.h.shard.update_consumer_settings(ConsumerGroupSettings(migration_policy="disabled"))
    a, b = m.stable_classic_pair()
    m.leave(a)
    m.leave(b)
    m.advance(1)
    assert m.h.shard.classic.groups.state_of("g") == "Empty"
    joined = m.beat(C, 0, ["t"])
    assert joined.error is None and m.h.shard.group_type("g") == "consumer"
    assert m.consumer().group_epoch == 1


def test_the_policy_can_forbid_the_upgrade(m: Mixed) -> None:
    m.h.shard.update_consumer_settings(ConsumerGroupSettings(migration_policy="downgrade"))
    m.stable_classic_pair()
    refused = m.beat(C, 0, ["t"])
    assert refused.error == ErrorCode.group_id_not_found
    assert refused.error_message == (
        "Cannot upgrade classic group g to consumer group because the online upgrade is disabled."
    )
    assert m.h.shard.group_type("g") == "classic"
    assert m.h.shard.classic.groups.state_of("g") == STABLE


def test_a_group_not_using_the_consumer_protocol_is_not_upgraded(m: Mixed) -> None:
    assert m.join(client="a", version=3, protocol_type="connect") is None
    m.advance(DELAY_MS)
    refused = m.beat(C, 0, ["t"])
    assert refused.error == ErrorCode.group_id_not_found
    assert refused.error_message is not None and "consumer embedded protocol" in (
        refused.error_message
    )


def test_a_heartbeat_above_epoch_zero_on_a_classic_group_is_refused(m: Mixed) -> None:
    m.stable_classic_pair()
    assert m.beat(C, 3, owned={}).error == ErrorCode.group_id_not_found


def test_parked_joins_of_an_upgraded_group_are_told_to_rejoin(m: Mixed) -> None:
    a, _ = m.stable_classic_pair()
    assert m.join(a) is None  # the leader rejoins: a rebalance starts, a waits
    assert m.h.shard.classic.groups.state_of("g") == PREPARING_REBALANCE
    m.beat(C, 0, ["t"])
    assert m.joins[a].error == ErrorCode.rebalance_in_progress
    assert m.h.shard.group_type("g") == "consumer"


def test_upgrade_during_completing_rebalance_answers_the_parked_sync(m: Mixed) -> None:
    assert m.join(client="a", version=3) is None
    assert m.join(client="b", version=3) is None
    m.advance(DELAY_MS)
    m.advance(DELAY_MS)
    assert m.h.shard.classic.groups.state_of("g") == COMPLETING_REBALANCE
    assert m.sync("b-2", 1) is None  # the follower waits for the leader's assignment
    m.beat(C, 0, ["t"])
    assert m.syncs["b-2"] == SyncResponse(error=ErrorCode.rebalance_in_progress)
    group = m.consumer()
    assert set(group.members) == {"a-1", "b-2", C}
    # Their empty assignments are accepted: C can take partitions at once.
    assert group.members["a-1"].assigned == {}
    assert sum(len(p) for p in group.members[C].assigned.values()) > 0


def test_a_group_larger_than_group_consumer_max_size_is_not_upgraded(m: Mixed) -> None:
    m.h.shard.update_consumer_settings(ConsumerGroupSettings(max_size=1))
    m.stable_classic_pair()
    refused = m.beat(C, 0, ["t"])
    assert refused.error == ErrorCode.group_id_not_found
    assert refused.error_message is not None and "maximum size" in refused.error_message
    assert m.h.shard.group_type("g") == "classic"


def test_unreadable_member_metadata_blocks_the_upgrade(m: Mixed) -> None:
    result = m.h.shard.classic.join(
        JoinRequest(
            group_id="g",
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(("range", b"\x00"),),  # not a ConsumerProtocolSubscription
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            client_id="a",
            client_host="/127.0.0.1",
            api_version=3,
        ),
        now_ms=m.now,
    )
    m.apply(result)
    m.advance(DELAY_MS)
    refused = m.beat(C, 0, ["t"])
    assert refused.error == ErrorCode.group_id_not_found
    assert refused.error_message is not None and "malformed" in refused.error_message
    assert m.h.shard.group_type("g") == "classic"


# ---- classic members of a consumer group ---------------------------------------------


def test_a_classic_consumer_joins_a_consumer_group(m: Mixed) -> None:
    m.beat(C, 0, ["t"])
    first = m.join(client="k")
    assert first is not None and first.error == ErrorCode.member_id_required
    member = first.member_id
    joined = m.join(member)
    assert joined is not None and joined.error is None and joined.generation_id == 2
    assert m.consumer().members[member].classic is not None
    synced = m.sync(member, 2)
    assert synced is not None and synced.error is None
    assert read_assignment(synced.assignment) == {}  # C still owns everything
    assert m.sync(member, 1) == SyncResponse(error=ErrorCode.illegal_generation)
    assert m.heartbeat(member, 2) is None  # waiting on C: no rejoin yet
    assert m.heartbeat("nobody", 2) == ErrorCode.unknown_member_id
    # C revokes; the classic member is told to rejoin and gets its half.
    revoke = m.beat(C, 1)
    assert revoke.assignment is not None
    kept = {tp.topic_id: frozenset(tp.partitions) for tp in revoke.assignment}
    assert m.beat(C, 1, owned=kept).member_epoch == 2
    assert m.heartbeat(member, 2) == ErrorCode.rebalance_in_progress
    again = m.join(member)
    assert again is not None and again.error is None
    synced = m.sync(member, again.generation_id)
    assert synced is not None
    assert len(read_assignment(synced.assignment)["t"]) == 2  # type: ignore[index]


def test_a_restarted_static_classic_member_replaces_its_old_id(m: Mixed) -> None:
    m.beat(C, 0, ["t"])
    first = m.join(client="s", instance="i1")
    assert first is not None and first.error is None
    old = first.member_id
    again = m.join(client="s", instance="i1")  # restarted: no member id
    assert again is not None and again.error is None and again.member_id != old
    group = m.consumer()
    assert old not in group.members and again.member_id in group.members
    assert group.members[again.member_id].instance_id == "i1"
    assert m.heartbeat(old, first.generation_id, instance="i1") == ErrorCode.fenced_instance_id
    stale = m.join(old, client="s", instance="i1")
    assert stale is not None and stale.error == ErrorCode.fenced_instance_id


def test_a_classic_join_with_another_protocol_type_is_inconsistent(m: Mixed) -> None:
    m.beat(C, 0, ["t"])
    refused = m.join(protocol_type="connect", version=3)
    assert refused is not None and refused.error == ErrorCode.inconsistent_group_protocol


def test_a_classic_join_to_an_empty_consumer_group_makes_it_classic(m: Mixed) -> None:
    m.beat(C, 0, ["t"])
    m.beat(C, -1)
    assert m.consumer().is_empty
    assert m.join(client="a", version=3) is None
    assert m.h.shard.group_type("g") == "classic"
    assert m.h.shard.consumer_group("g") is None


def test_classic_member_commits_with_its_generation(m: Mixed) -> None:
    a, _ = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    offsets = [OffsetToCommit(topic="t", partition=0, offset=5, leader_epoch=-1, metadata="")]

    def commit(generation: int) -> ErrorCode | None:
        result = m.h.shard.classic.commit_offsets(
            group_id="g",
            member_id=a,
            generation_id=generation,
            group_instance_id=None,
            offsets=offsets,
            api_version=8,
            now_ms=0,
        )
        for record in result.records:
            m.h.write(record)
        return result.response[0].error

    assert commit(1) is None
    assert commit(7) == ErrorCode.illegal_generation


def test_an_expired_classic_member_is_removed(m: Mixed) -> None:
    a, b = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    for _ in range(3):
        m.advance(SESSION_MS // 2)
        assert m.heartbeat(b, 1) == ErrorCode.rebalance_in_progress
        m.beat(C, 2)
    assert set(m.consumer().members) == {b, C}
    assert a not in m.consumer().target_assignment


def test_a_full_consumer_group_refuses_another_classic_member(m: Mixed) -> None:
    m.h.shard.update_consumer_settings(ConsumerGroupSettings(max_size=1))
    m.beat(C, 0, ["t"])
    refused = m.join(version=3)
    assert refused is not None and refused.error == ErrorCode.group_max_size_reached


def test_a_classic_member_that_does_not_rejoin_when_told_is_removed(m: Mixed) -> None:
    a, b = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    assert m.heartbeat(a, 1) == ErrorCode.rebalance_in_progress  # join timeout armed
    for _ in range(7):  # a keeps heartbeating but never rejoins; b rejoins and syncs
        m.advance(5_000)
        assert m.heartbeat(a, 1) in (ErrorCode.rebalance_in_progress, ErrorCode.unknown_member_id)
        m.keep_alive(b)
        m.keep_consumer_alive(C)
    assert a not in m.consumer().members  # past its 30 s rebalance timeout
    assert b in m.consumer().members


def test_a_classic_member_that_joins_but_never_syncs_is_removed(m: Mixed) -> None:
    m.beat(C, 0, ["t"])
    joined = m.join(client="k", version=3)
    assert joined is not None and joined.error is None
    for _ in range(7):  # it heartbeats, but never sends its SyncGroup
        m.advance(5_000)
        m.heartbeat(joined.member_id, joined.generation_id)
        m.keep_consumer_alive(C)
    assert set(m.consumer().members) == {C}


# ---- downgrade ------------------------------------------------------------------------


def test_the_last_consumer_member_leaving_downgrades_the_group(m: Mixed) -> None:
    a, b = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    epoch = m.consumer().group_epoch
    start = len(m.h.log)
    left = m.beat(C, -1)
    assert left.error is None and left.member_epoch == -1
    last = m.h.log[-1]
    assert isinstance(last.key, r.GroupMetadataKey)
    assert isinstance(last.value, r.GroupMetadataValue)
    assert last.value.generation == epoch and last.value.protocol == "range"
    assert {x.member_id for x in last.value.members} == {a, b}
    stored = {x.member_id: read_assignment(x.assignment) for x in last.value.members}
    assert stored == {a: {"t": frozenset({0, 1})}, b: {"t": frozenset({2, 3})}}
    assert all(record.value is None for record in m.h.log[start:-1])
    assert m.h.shard.group_type("g") == "classic" and m.h.shard.consumer_group("g") is None
    # The classic group lives again and rebalances: its members rejoin.
    assert m.h.shard.classic.groups.state_of("g") == PREPARING_REBALANCE
    assert m.heartbeat(a, epoch) == ErrorCode.rebalance_in_progress
    assert m.join(a) is None
    assert m.join(b) is not None
    assert m.joins[a].generation_id == epoch + 1 and m.joins[a].leader in (a, b)


def test_upgrade_only_policy_keeps_a_consumer_group_of_classic_members(m: Mixed) -> None:
    m.h.shard.update_consumer_settings(ConsumerGroupSettings(migration_policy="upgrade"))
    a, b = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    m.beat(C, -1)
    assert m.h.shard.group_type("g") == "consumer"
    assert set(m.consumer().members) == {a, b}


def test_classic_members_beyond_group_max_size_keep_the_consumer_group(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(classic_settings=ClassicSettings(max_size=1))
    harness.set_topics(t=4)
    m = Mixed(harness)
    m.beat(C, 0, ["t"])
    a, b = (m.join(client=name, version=3) for name in ("a", "b"))
    assert a is not None and b is not None and not a.error and not b.error
    m.beat(C, -1)  # two classic members do not fit a classic group of at most one
    assert m.h.shard.group_type("g") == "consumer"
    assert set(m.consumer().members) == {a.member_id, b.member_id}


def test_the_consumer_member_expiring_downgrades_the_group(m: Mixed) -> None:
    a, b = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    for _ in range(12):  # C is silent past its 45 s session; a and b heartbeat
        m.advance(4_000)
        m.keep_alive(a)
        m.keep_alive(b)
    assert m.h.shard.group_type("g") == "classic"
    assert set(m.h.shard.classic.groups.groups["g"].members) <= {a, b}


def test_a_restarted_shard_serves_the_converted_group(m: Mixed) -> None:
    a, _ = m.stable_classic_pair()
    m.beat(C, 0, ["t"])
    fresh = m.h.new_shard()
    for record in m.h.log:
        fresh.replay(record)
    fresh.on_loaded(now_ms=m.now)
    group = fresh.consumer_group("g")
    assert group is not None and group.members[a].classic is not None
    assert fresh.classic.heartbeat(
        group_id="g", member_id=a, generation_id=1, group_instance_id=None, now_ms=m.now
    ) == (ErrorCode.rebalance_in_progress)
    assert fresh.consumer_session_deadline("g", a) == m.now + SESSION_MS


# ---- the config -----------------------------------------------------------------------


def test_migration_policy_config_is_checked_and_case_insensitive() -> None:
    config = BrokerConfig.from_raw({"group.consumer.migration.policy": "UPGRADE"})
    assert ConsumerGroupSettings.from_broker_config(config).migration_policy == "upgrade"
    assert ConsumerGroupSettings.from_broker_config(BrokerConfig.from_raw({})).migration_policy == (
        "bidirectional"
    )
    with pytest.raises(ConfigError):
        BrokerConfig.from_raw({"group.consumer.migration.policy": "sideways"})
