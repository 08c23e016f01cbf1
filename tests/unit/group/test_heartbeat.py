"""ShareGroupHeartbeat through the shard: validation, join, fencing, leave, expiry.

Conformance items covered: 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 58, 61.
Every test's records are checked for replay equivalence by the harness fixture.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shoal.group import ShareGroupSettings
from shoal.group import records as r
from shoal.group.records import ConsumerGroupMetadataKey, CoordinatorRecord
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness, assignment_of, topic_id

MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"  # a librdkafka-style 22-character base64 id
OTHER = "b+/9zzzzzzzzzzzzzzzzzw"


def ready(harness: Harness, *, partitions: int = 4) -> None:
    """Topic t exists and the group's share-partitions are initialised."""
    harness.set_topics(t=partitions)


def joined_and_initialised(harness: Harness, *members: str, partitions: int = 4) -> None:
    ready(harness, partitions=partitions)
    for member in members:
        harness.join("g", member, ["t"])
    harness.complete_inits()
    harness.settle("g", members)


# ---- validation -------------------------------------------------------------------------


def test_46_epoch_zero_with_empty_subscription_is_invalid(harness: Harness) -> None:
    """Conformance 46: epoch 0 with an empty (or null) subscription -> INVALID_REQUEST."""
    assert harness.heartbeat("g", MEMBER, 0, []).error is ErrorCode.invalid_request
    assert harness.heartbeat("g", MEMBER, 0, None).error is ErrorCode.invalid_request
    assert harness.shard.share_group("g") is None
    assert harness.log == []


@pytest.mark.parametrize(
    ("group_id", "member_id", "epoch", "rack"),
    [
        ("", MEMBER, 0, None),
        ("  ", MEMBER, 0, None),
        ("g", "", 0, None),
        ("g", "x" * 37, 0, None),
        ("g", MEMBER, 0, " "),
        ("g", MEMBER, -2, None),
    ],
)
def test_invalid_requests(
    harness: Harness, group_id: str, member_id: str, epoch: int, rack: str | None
) -> None:
    response = harness.heartbeat(group_id, member_id, epoch, ["t"], rack_id=rack)
    assert response.error is ErrorCode.invalid_request
    assert response.error_message


def test_member_id_is_taken_verbatim(harness: Harness) -> None:
    ready(harness)
    for member in (OTHER, "x" * 36, "1"):
        assert harness.join("g", member, ["t"]).member_id == member


# ---- join and heartbeat -----------------------------------------------------------------


def test_join_creates_the_group_and_answers_with_epoch_and_interval(harness: Harness) -> None:
    ready(harness)
    response = harness.join("g", MEMBER, ["t"])
    assert (response.member_id, response.member_epoch) == (MEMBER, 1)
    assert response.heartbeat_interval_ms == 5_000
    assert response.assignment == ()  # nothing initialised yet
    group = harness.shard.share_group("g")
    assert group is not None and (group.group_epoch, group.assignment_epoch) == (1, 1)
    member = group.members[MEMBER]
    assert (member.client_id, member.client_host, member.rack_id) == ("rdkafka", "/127.0.0.1", None)
    assert [type(rec.key).__name__ for rec in harness.log[-6:]] == [
        "ShareGroupMemberMetadataKey",
        "ShareGroupMetadataKey",
        "ShareGroupStatePartitionMetadataKey",
        "ShareGroupTargetAssignmentMemberKey",
        "ShareGroupTargetAssignmentMetadataKey",
        "ShareGroupCurrentMemberAssignmentKey",
    ]


def test_heartbeat_interval_comes_from_the_group_config(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(group_configs={"g": {"share.heartbeat.interval.ms": 7_000}})
    ready(harness)
    assert harness.join("g", MEMBER, ["t"]).heartbeat_interval_ms == 7_000
    assert harness.join("h", MEMBER, ["t"]).heartbeat_interval_ms == 5_000


def test_assignment_is_null_when_nothing_changed(harness: Harness) -> None:
    joined_and_initialised(harness, MEMBER)
    group = harness.shard.share_group("g")
    assert group is not None
    epoch = group.members[MEMBER].member_epoch
    response = harness.heartbeat("g", MEMBER, epoch)
    assert response.error is None and response.assignment is None
    assert response.member_epoch == epoch
    # A non-null subscription (a "full" request) always gets the assignment.
    assert assignment_of(harness.heartbeat("g", MEMBER, epoch, ["t"])) == {
        topic_id("t"): (0, 1, 2, 3)
    }


def test_48_heartbeat_on_unknown_group(harness: Harness) -> None:
    """Conformance 48: epoch 3 on an unknown group -> GROUP_ID_NOT_FOUND."""
    assert harness.heartbeat("nope", MEMBER, 3).error is ErrorCode.group_id_not_found
    assert harness.heartbeat("nope", MEMBER, -1).error is ErrorCode.group_id_not_found


def test_47_heartbeat_of_unknown_member(harness: Harness) -> None:
    """Conformance 47: epoch 3, unknown member -> UNKNOWN_MEMBER_ID."""
    joined_and_initialised(harness, MEMBER)
    assert harness.heartbeat("g", OTHER, 3).error is ErrorCode.unknown_member_id
    assert harness.heartbeat("g", OTHER, -1).error is ErrorCode.unknown_member_id


def test_49_fencing_and_the_previous_epoch(harness: Harness) -> None:
    """Conformance 49: an epoch above the member's, or below it and not its previous
    one -> FENCED_MEMBER_EPOCH; the previous epoch is accepted (lost response)."""
    ready(harness)
    first = harness.join("g", MEMBER, ["t"]).member_epoch  # 1
    harness.complete_inits()  # group epoch 2
    second = harness.heartbeat("g", MEMBER, first)
    assert second.member_epoch == 2 and second.error is None
    harness.join("g", OTHER, ["t"])  # group epoch 3
    third = harness.heartbeat("g", MEMBER, 2)
    assert third.member_epoch == 3
    assert harness.heartbeat("g", MEMBER, 4).error is ErrorCode.fenced_member_epoch
    assert harness.heartbeat("g", MEMBER, 1).error is ErrorCode.fenced_member_epoch
    lost = harness.heartbeat("g", MEMBER, 2)  # the previous epoch: the reply to 2 was lost
    assert lost.error is None and lost.member_epoch == 3
    assert lost.assignment is not None, "a member on its previous epoch gets the assignment"


def test_50_fenced_member_rejoins_at_zero_with_its_id(harness: Harness) -> None:
    """Conformance 50: after FENCED_MEMBER_EPOCH the member rejoins at epoch 0 with its
    id and gets its current epoch and assignment back, without an epoch bump."""
    joined_and_initialised(harness, MEMBER)
    group = harness.shard.share_group("g")
    assert group is not None
    epoch, group_epoch = group.members[MEMBER].member_epoch, group.group_epoch
    assert harness.heartbeat("g", MEMBER, epoch + 5).error is ErrorCode.fenced_member_epoch
    rejoined = harness.join("g", MEMBER, ["t"])
    assert rejoined.member_epoch == epoch
    assert assignment_of(rejoined) == {topic_id("t"): (0, 1, 2, 3)}
    group = harness.shard.share_group("g")
    assert group is not None and group.group_epoch == group_epoch


def test_51_member_beyond_the_maximum_size(make_harness: Callable[..., Harness]) -> None:
    """Conformance 51: the 201st member -> GROUP_MAX_SIZE_REACHED; members already in
    keep heartbeating and rejoining."""
    harness = make_harness()
    ready(harness)
    for i in range(200):
        harness.join("g", f"member-{i:03d}", ["t"])
    response = harness.heartbeat("g", "member-200", 0, ["t"])
    assert response.error is ErrorCode.group_max_size_reached
    assert harness.join("g", "member-000", ["t"]).error is None
    small = make_harness(settings=ShareGroupSettings(max_size=2))
    ready(small)
    small.join("g", "a", ["t"])
    small.join("g", "b", ["t"])
    assert small.heartbeat("g", "c", 0, ["t"]).error is ErrorCode.group_max_size_reached


def test_52_leave_bumps_the_epoch_and_others_are_reassigned(harness: Harness) -> None:
    """Conformance 52: leave -> MemberEpoch -1, group epoch + 1, and the partitions of
    the leaver go to the others at their next heartbeat."""
    joined_and_initialised(harness, MEMBER, OTHER)
    group = harness.shard.share_group("g")
    assert group is not None
    epoch = group.group_epoch
    assert len(group.members[OTHER].assigned_partitions[topic_id("t")]) == 2
    left = harness.heartbeat("g", MEMBER, -1)
    assert (left.error, left.member_id, left.member_epoch) == (None, MEMBER, -1)
    group = harness.shard.share_group("g")
    assert group is not None and group.group_epoch == epoch + 1 and MEMBER not in group.members
    other = harness.heartbeat("g", OTHER, group.members[OTHER].member_epoch)
    assert other.member_epoch == epoch + 1
    assert assignment_of(other) == {topic_id("t"): (0, 1, 2, 3)}
    assert harness.shard.next_deadline() is not None
    assert harness.shard.session_deadline("g", MEMBER) is None
    assert harness.shard.session_deadline("g", OTHER) is not None


def test_53_silent_member_expires_punctual_member_does_not(harness: Harness) -> None:
    """Conformance 53: a member silent for share.session.timeout.ms is removed (epoch
    bump, its partitions move); one heartbeating every interval is never fenced."""
    joined_and_initialised(harness, MEMBER, OTHER)
    for _ in range(20):  # 100 s of punctual heartbeats by MEMBER only
        harness.advance(5_000)
        group = harness.shard.share_group("g")
        assert group is not None
        expired = harness.run(harness.shard.expire_sessions(now_ms=harness.clock.monotonic_ms()))
        if expired.response.expired_members:
            assert expired.response.expired_members == (("g", OTHER),)
            assert expired.response.bumped_groups == ("g",)
            assert harness.clock.monotonic_ms() >= 45_000
        assert harness.heartbeat("g", MEMBER, group.members[MEMBER].member_epoch).error is None
    group = harness.shard.share_group("g")
    assert group is not None and set(group.members) == {MEMBER}
    assert group.members[MEMBER].assigned_partitions == {topic_id("t"): frozenset(range(4))}
    assert harness.heartbeat("g", OTHER, 3).error is ErrorCode.unknown_member_id


def test_session_deadline_and_group_session_timeout(make_harness: Callable[..., Harness]) -> None:
    harness = make_harness(group_configs={"g": {"share.session.timeout.ms": 50_000}})
    ready(harness)
    harness.join("g", MEMBER, ["t"])
    assert harness.shard.next_deadline() == 50_000
    harness.advance(49_999)
    assert harness.run(harness.shard.expire_sessions()).records == ()
    harness.advance(1)
    assert harness.run(harness.shard.expire_sessions()).response.expired_members == (("g", MEMBER),)
    assert harness.shard.next_deadline() is None
    group = harness.shard.share_group("g")
    assert group is not None and group.is_empty and group.state == "Empty"


def test_expiring_two_members_bumps_the_epoch_once(harness: Harness) -> None:
    joined_and_initialised(harness, MEMBER, OTHER)
    group = harness.shard.share_group("g")
    assert group is not None
    epoch = group.group_epoch
    harness.advance(45_000)
    result = harness.run(harness.shard.expire_sessions())
    assert result.response.expired_members == (("g", MEMBER), ("g", OTHER))
    group = harness.shard.share_group("g")
    assert group is not None and group.group_epoch == epoch + 1 and group.is_empty


def test_54_two_members_four_partitions_at_the_shard(harness: Harness) -> None:
    """Conformance 54 through heartbeats: 2 members x 4 partitions, and 4 x 1."""
    joined_and_initialised(harness, MEMBER, OTHER)
    group = harness.shard.share_group("g")
    assert group is not None
    assert [len(m.assigned_partitions[topic_id("t")]) for m in group.members.values()] == [2, 2]
    members = [f"m{i}" for i in range(4)]
    harness.set_topics(t=4, one=1)
    for member in members:
        harness.join("solo", member, ["one"])
    harness.complete_inits()
    harness.settle("solo", members)
    solo = harness.shard.share_group("solo")
    assert solo is not None
    assert all(m.assigned_partitions == {topic_id("one"): {0}} for m in solo.members.values())


def test_55_mixed_subscriptions_at_the_shard(harness: Harness) -> None:
    """Conformance 55: C1 on {A, B}, C2 on {A}, C3 on {B} -> balanced per topic."""
    harness.set_topics(a=4, b=4)
    harness.join("g", "c1", ["a", "b"])
    harness.join("g", "c2", ["a"])
    harness.join("g", "c3", ["b"])
    harness.complete_inits()
    harness.settle("g", ["c1", "c2", "c3"])
    group = harness.shard.share_group("g")
    assert group is not None
    a, b = topic_id("a"), topic_id("b")
    members = group.members
    assert len(members["c1"].assigned_partitions[a]) == len(members["c2"].assigned_partitions[a])
    assert len(members["c1"].assigned_partitions[b]) == len(members["c3"].assigned_partitions[b])
    assert b not in members["c2"].assigned_partitions
    assert a not in members["c3"].assigned_partitions


def test_58_share_heartbeat_on_a_consumer_group(harness: Harness) -> None:
    """Conformance 58: a share heartbeat (or describe) on a consumer group ->
    GROUP_ID_NOT_FOUND; `group_type` lets JoinGroup answer INCONSISTENT_GROUP_PROTOCOL
    for a share group."""
    harness.write(
        CoordinatorRecord(
            key=ConsumerGroupMetadataKey(group_id="cg"),
            value=r.ConsumerGroupMetadataValue(epoch=3),
        )
    )
    ready(harness)
    assert harness.heartbeat("cg", MEMBER, 0, ["t"]).error is ErrorCode.group_id_not_found
    assert harness.heartbeat("cg", MEMBER, 2).error is ErrorCode.group_id_not_found
    assert harness.shard.group_type("cg") == "consumer"
    [described] = harness.shard.share_group_describe(group_ids=["cg"])
    assert described.error is ErrorCode.group_id_not_found
    harness.join("sg", MEMBER, ["t"])
    assert harness.shard.group_type("sg") == "share"
    assert harness.shard.group_type("unknown") is None
    assert harness.shard.list_groups() == harness.shard.list_groups(types_filter=["share"])


def test_61_subscription_change_unsubscribe_and_resubscribe(harness: Harness) -> None:
    """Conformance 61: changing the subscription moves the assignment, an empty
    subscription empties it (subscribe([])), and leaving and rejoining works."""
    harness.set_topics(a=2, b=2)
    harness.join("g", MEMBER, ["a"])
    harness.complete_inits()
    harness.settle("g", [MEMBER])
    group = harness.shard.share_group("g")
    assert group is not None
    epoch = group.members[MEMBER].member_epoch
    changed = harness.heartbeat("g", MEMBER, epoch, ["b"])
    assert changed.member_epoch == epoch + 1
    assert assignment_of(changed) == {}  # b is not initialised yet
    harness.complete_inits()
    settled = harness.settle("g", [MEMBER])[MEMBER]
    assert settled.assignment is None or assignment_of(settled) == {topic_id("b"): (0, 1)}
    group = harness.shard.share_group("g")
    assert group is not None
    assert group.members[MEMBER].assigned_partitions == {topic_id("b"): frozenset({0, 1})}
    empty = harness.heartbeat("g", MEMBER, group.members[MEMBER].member_epoch, [])
    assert empty.error is None and assignment_of(empty) == {}
    assert harness.heartbeat("g", MEMBER, -1).member_epoch == -1
    rejoined = harness.join("g", MEMBER, ["a", "b"])
    assert assignment_of(rejoined) == {topic_id("a"): (0, 1), topic_id("b"): (0, 1)}


def test_rack_change_bumps_the_epoch_client_id_change_does_not(harness: Harness) -> None:
    joined_and_initialised(harness, MEMBER)
    group = harness.shard.share_group("g")
    assert group is not None
    epoch = group.group_epoch
    member_epoch = group.members[MEMBER].member_epoch
    harness.heartbeat("g", MEMBER, member_epoch, client_id="renamed")
    group = harness.shard.share_group("g")
    assert group is not None and group.group_epoch == epoch
    assert group.members[MEMBER].client_id == "renamed"
    harness.heartbeat("g", MEMBER, member_epoch, rack_id="rack-1")
    group = harness.shard.share_group("g")
    assert group is not None and group.group_epoch == epoch + 1
    assert group.members[MEMBER].rack_id == "rack-1"


def test_unknown_subscribed_names_are_ignored(harness: Harness) -> None:
    ready(harness)
    response = harness.join("g", MEMBER, ["t", "missing"])
    assert response.error is None
    harness.complete_inits()
    settled = harness.settle("g", [MEMBER])
    assert settled
    group = harness.shard.share_group("g")
    assert group is not None
    assert group.members[MEMBER].assigned_partitions == {topic_id("t"): frozenset(range(4))}
