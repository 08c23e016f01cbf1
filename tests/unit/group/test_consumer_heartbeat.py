"""ConsumerGroupHeartbeat (KIP-848) through the shard on a manual clock: join,
assignment, revocation before re-assignment, fencing, leave, session expiry, offset
commits by members. The harness checks replay equivalence (live == replayed ==
compacted) at teardown of every test."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from shoal.coordinator import CoordinatorResult
from shoal.group.committed_offsets import OffsetToCommit
from shoal.group.consumer import membership as cm
from shoal.group.consumer.group import MEMBER_STATE_STABLE, MEMBER_STATE_UNREVOKED_PARTITIONS
from shoal.group.results import ShareGroupHeartbeatResponse
from shoal.group.settings import ConsumerGroupSettings
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness, topic_id

A, B, C = "member-a", "member-b", "member-c"


def beat(
    harness: Harness,
    member: str,
    epoch: int,
    topics: Collection[str] | None = None,
    *,
    owned: dict[uuid.UUID, frozenset[int]] | None = None,
    group: str = "cg",
    regex: str | None = None,
    assignor: str | None = None,
) -> ShareGroupHeartbeatResponse:
    request = cm.HeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=30_000 if epoch == 0 else -1,
        subscribed_topic_names=tuple(topics) if topics is not None else None,
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        owned=owned,
        client_id="rdkafka",
        client_host="/127.0.0.1",
    )
    return harness.run(
        harness.shard.consumer_group_heartbeat(request=request, now_ms=harness.clock.monotonic_ms())
    ).response


def owned_of(response: ShareGroupHeartbeatResponse) -> dict[uuid.UUID, frozenset[int]]:
    assert response.assignment is not None, response
    return {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment}


class Client:
    """A well-behaved KIP-848 client: owns what it was last given, reports it."""

    def __init__(self, harness: Harness, member: str, topics: list[str]) -> None:
        self.harness, self.member, self.topics = harness, member, topics
        self.epoch = 0
        self.owned: dict[uuid.UUID, frozenset[int]] = {}

    def beat(self) -> ShareGroupHeartbeatResponse:
        topics = self.topics if self.epoch == 0 else None
        owned = None if self.epoch == 0 else self.owned
        response = beat(self.harness, self.member, self.epoch, topics, owned=owned)
        assert response.error is None, response
        self.epoch = response.member_epoch
        if response.assignment is not None:
            self.owned = owned_of(response)
        return response


def settle(clients: list[Client], rounds: int = 10) -> None:
    for _ in range(rounds):
        for client in clients:
            client.beat()
    group = clients[0].harness.shard.consumer_group("cg")
    assert group is not None and group.state == "Stable", group


def partitions(clients: list[Client]) -> list[tuple[uuid.UUID, int]]:
    return sorted((t, p) for c in clients for t, ps in c.owned.items() for p in ps)


def test_join_gets_every_partition_and_a_new_epoch(harness: Harness) -> None:
    harness.set_topics(t=4)
    response = beat(harness, A, 0, ["t"])
    assert response.error is None and response.member_id == A
    assert response.member_epoch == 1
    assert owned_of(response) == {topic_id("t"): frozenset(range(4))}
    assert response.heartbeat_interval_ms == 5_000
    assert harness.shard.group_type("cg") == "consumer"
    # A heartbeat at the same epoch with nothing changed: no assignment, no records.
    before = len(harness.log)
    again = beat(harness, A, 1, owned=owned_of(response))
    assert again.error is None and again.assignment is None and again.member_epoch == 1
    assert len(harness.log) == before


def test_partition_moves_only_after_its_owner_revoked_it(harness: Harness) -> None:
    harness.set_topics(t=4)
    a = Client(harness, A, ["t"])
    a.beat()
    assert len(partitions([a])) == 4
    b = Client(harness, B, ["t"])
    first = b.beat()
    # B's target has two partitions, but A still owns them: B gets none yet.
    assert first.member_epoch == 2 and owned_of(first) == {}
    group = harness.shard.consumer_group("cg")
    assert group is not None and group.target_assignment[B]
    # A heartbeats: told to give up two partitions; its epoch stays until it does.
    response = beat(harness, A, 1, owned=a.owned)
    assert response.member_epoch == 1 and sum(len(p) for p in owned_of(response).values()) == 2
    assert harness.shard.consumer_group("cg").members[A].state == MEMBER_STATE_UNREVOKED_PARTITIONS  # type: ignore[union-attr]
    # B asks again before A confirmed: still nothing.
    assert beat(harness, B, 2, owned={}).assignment is None
    # A confirms the revocation by reporting what it owns now: it moves to epoch 2.
    a.owned = owned_of(response)
    confirmed = beat(harness, A, 1, owned=a.owned)
    assert confirmed.member_epoch == 2
    assert harness.shard.consumer_group("cg").members[A].state == MEMBER_STATE_STABLE  # type: ignore[union-attr]
    # Now B gets the released partitions.
    b.owned = owned_of(beat(harness, B, 2, owned={}))
    a.epoch = 2
    assert partitions([a, b]) == [(topic_id("t"), p) for p in range(4)]
    assert not set(a.owned[topic_id("t")]) & set(b.owned[topic_id("t")])


def test_three_members_share_six_partitions_each_exactly_once(harness: Harness) -> None:
    harness.set_topics(t=6)
    clients = [Client(harness, m, ["t"]) for m in (A, B, C)]
    settle(clients)
    assert partitions(clients) == [(topic_id("t"), p) for p in range(6)]
    assert all(len(c.owned[topic_id("t")]) == 2 for c in clients)


def test_wrong_epochs_are_fenced_and_previous_epoch_is_tolerated(harness: Harness) -> None:
    harness.set_topics(t=2)
    a = Client(harness, A, ["t"])
    a.beat()
    b = Client(harness, B, ["t"])
    b.beat()
    settle([a, b])
    epoch = a.epoch
    assert beat(harness, A, epoch + 1, owned=a.owned).error is ErrorCode.fenced_member_epoch
    member = harness.shard.consumer_group("cg").members[A]  # type: ignore[union-attr]
    previous = member.previous_member_epoch
    assert beat(harness, A, previous, owned=a.owned).error is None
    # Owning something beyond the assignment at the previous epoch is fenced.
    other = {topic_id("t"): frozenset({0, 1})}
    assert beat(harness, A, previous, owned=other).error is ErrorCode.fenced_member_epoch
    assert beat(harness, "nobody", 1, owned={}).error is ErrorCode.unknown_member_id
    assert beat(harness, A, 1, group="unknown").error is ErrorCode.unknown_member_id


def test_leave_frees_partitions_for_the_others(harness: Harness) -> None:
    harness.set_topics(t=4)
    clients = [Client(harness, m, ["t"]) for m in (A, B)]
    settle(clients)
    left = beat(harness, A, -1)
    assert left.error is None and left.member_epoch == -1
    settle(clients[1:])
    assert partitions(clients[1:]) == [(topic_id("t"), p) for p in range(4)]
    assert beat(harness, A, -1).error is ErrorCode.unknown_member_id


def test_silent_member_expires_after_the_session_timeout(harness: Harness) -> None:
    harness.set_topics(t=4)
    clients = [Client(harness, m, ["t"]) for m in (A, B)]
    settle(clients)
    deadline = harness.shard.consumer_session_deadline("cg", A)
    assert deadline == harness.clock.monotonic_ms() + 45_000
    harness.clock.advance(44_000)
    clients[1].beat()
    harness.clock.advance(2_000)
    assert harness.shard.next_deadline() is not None
    changed = harness.run(harness.shard.expire_sessions(now_ms=harness.clock.monotonic_ms()))
    assert changed.response.expired_members == (("cg", A),)
    settle(clients[1:])
    assert partitions(clients[1:]) == [(topic_id("t"), p) for p in range(4)]


def test_max_size_and_validation(harness: Harness) -> None:
    harness.shard.update_consumer_settings(ConsumerGroupSettings(max_size=1))
    harness.set_topics(t=1)
    assert beat(harness, A, 0, ["t"]).error is None
    assert beat(harness, B, 0, ["t"]).error is ErrorCode.group_max_size_reached
    assert beat(harness, B, 0, None).error is ErrorCode.invalid_request
    assert beat(harness, B, 0, ["t"], assignor="sticky").error is ErrorCode.unsupported_assignor
    assert beat(harness, B, 0, regex="(").error is ErrorCode.invalid_regular_expression
    assert beat(harness, "", 1).error is ErrorCode.invalid_request


def refresh(harness: Harness) -> tuple[str, ...]:
    """Run the scheduled regex refreshes due now (what the broker's timer does right
    after the heartbeat); the groups whose epoch they bumped."""
    deadline = harness.shard.next_deadline()
    assert deadline is not None and deadline <= harness.clock.monotonic_ms(), deadline
    done = harness.run(harness.shard.refresh_regexes(now_ms=harness.clock.monotonic_ms()))
    return done.response.bumped_groups


def test_regex_subscription_is_resolved_after_the_heartbeat_then_every_10s(
    harness: Harness,
) -> None:
    """Kafka 4.2's sequence (GroupMetadataManager.maybeUpdateRegularExpressions): the
    heartbeat that brings a regex is answered without its topics; the refresh runs
    after it and bumps the group epoch; the next heartbeat gets the partitions. A
    topic created later is picked up by the first heartbeat 10 s after the last
    refresh, again one heartbeat late."""
    harness.set_topics(orders=2, other=1)
    first = beat(harness, A, 0, regex="ord.*")
    assert first.member_epoch == 1 and owned_of(first) == {}
    assert refresh(harness) == ("cg",)
    resolved = beat(harness, A, 1, owned={})
    assert resolved.member_epoch == 2
    assert owned_of(resolved) == {topic_id("orders"): frozenset({0, 1})}
    harness.set_topics(orders=2, other=1, orders2=1)
    harness.advance(5_000)
    quiet = beat(harness, A, 2, owned=owned_of(resolved))
    assert quiet.member_epoch == 2 and quiet.assignment is None
    assert harness.shard.next_deadline() != harness.clock.monotonic_ms()  # nothing scheduled
    harness.advance(5_001)  # just past 10 s since the refresh
    due = beat(harness, A, 2, owned=owned_of(resolved))
    assert due.member_epoch == 2 and due.assignment is None  # resolved only afterwards
    assert refresh(harness) == ("cg",)
    later = beat(harness, A, 2, owned=owned_of(resolved))
    assert later.member_epoch == 3
    assert owned_of(later) == {
        topic_id("orders"): frozenset({0, 1}),
        topic_id("orders2"): frozenset({0}),
    }


def test_switching_from_names_to_a_regex_revokes_first_then_resolves(harness: Harness) -> None:
    """librdkafka's resubscribe-with-regex: the literal topic is revoked by the
    heartbeat that switches, the regex's topics come after the refresh."""
    harness.set_topics(lit=1, rx_a=1)
    joined = beat(harness, A, 0, ["lit"])
    assert owned_of(joined) == {topic_id("lit"): frozenset({0})}
    switched = beat(harness, A, 1, [], regex="rx_.*", owned=owned_of(joined))
    assert switched.member_epoch == 1 and owned_of(switched) == {}
    refresh(harness)
    after = beat(harness, A, 1, owned={})
    assert after.member_epoch == 3 and owned_of(after) == {topic_id("rx_a"): frozenset({0})}
    group = harness.shard.consumer_group("cg")
    assert group is not None and group.resolved_regexes == {"rx_.*": frozenset({"rx_a"})}
    beat(harness, A, -1)
    assert harness.shard.consumer_group("cg").resolved_regexes == {}  # type: ignore[union-attr]


def test_range_assignor(harness: Harness) -> None:
    harness.set_topics(t=5)
    clients = [Client(harness, m, ["t"]) for m in (A, B)]
    for client in clients:
        beat(harness, client.member, 0, ["t"], assignor="range")
        client.epoch = harness.shard.consumer_group("cg").members[client.member].member_epoch  # type: ignore[union-attr]
    settle(clients)
    group = harness.shard.consumer_group("cg")
    assert group is not None
    assert group.target_assignment[A] == {topic_id("t"): frozenset({0, 1, 2})}
    assert group.target_assignment[B] == {topic_id("t"): frozenset({3, 4})}


def test_namespace_share_and_classic_ids_refuse_consumer_heartbeats(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.run(
        harness.shard.share_group_heartbeat(
            group_id="sg",
            member_id=A,
            member_epoch=0,
            rack_id=None,
            subscribed_topic_names=["t"],
            client_id="x",
            client_host="/h",
        )
    )
    assert beat(harness, B, 0, ["t"], group="sg").error is ErrorCode.group_id_not_found
    beat(harness, B, 0, ["t"])
    assert (
        harness.shard.share_group_heartbeat(
            group_id="cg",
            member_id=C,
            member_epoch=0,
            rack_id=None,
            subscribed_topic_names=["t"],
            client_id="x",
            client_host="/h",
        ).response.error
        is ErrorCode.group_id_not_found
    )


def test_members_commit_at_their_epoch(harness: Harness) -> None:
    harness.set_topics(t=1)
    joined = beat(harness, A, 0, ["t"])
    shard = harness.shard
    assert shard.consumer_commit_error("cg", A, joined.member_epoch) is None
    assert (
        shard.consumer_commit_error("cg", A, joined.member_epoch + 1)
        is ErrorCode.stale_member_epoch
    )
    assert (
        shard.consumer_commit_error("cg", "x", joined.member_epoch) is ErrorCode.unknown_member_id
    )
    assert shard.consumer_commit_error("cg", "", -1) is ErrorCode.unknown_member_id
    beat(harness, A, -1)
    assert shard.consumer_commit_error("cg", "", -1) is None
    listed = shard.list_consumer_groups()
    assert [(g.group_id, g.group_state, g.group_type) for g in listed] == [
        ("cg", "Empty", "consumer")
    ]


def test_restart_replays_to_the_same_state_and_rearms_sessions(harness: Harness) -> None:
    harness.set_topics(t=3)
    clients = [Client(harness, m, ["t"]) for m in (A, B)]
    settle(clients)
    fresh = harness.new_shard()
    for record in harness.log:
        fresh.replay(record)
    assert fresh.durable_state() == harness.shard.durable_state()
    fresh.on_loaded(now_ms=100)
    assert fresh.consumer_session_deadline("cg", A) == 100 + 45_000


def test_record_bytes_are_kafkas() -> None:
    """Type 8 as Kafka's schema lays it out (flexible v0), and every new type
    round-trips through the codec."""
    from shoal.group import records as r

    t1 = uuid.UUID(int=1)
    record = r.CoordinatorRecord(
        key=r.ConsumerGroupCurrentMemberAssignmentKey(group_id="g", member_id="m"),
        value=r.ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=5,
            previous_member_epoch=4,
            state=1,
            assigned_partitions=(r.TopicPartitions(topic_id=t1, partitions=(0,)),),
            partitions_pending_revocation=(),
        ),
    )
    key, value = r.CODEC.encode(record)
    assert key == b"\x00\x08\x00\x01g\x00\x01m"
    assert value == (
        b"\x00\x00" + b"\x00\x00\x00\x05" + b"\x00\x00\x00\x04" + b"\x01"
        + b"\x02" + t1.bytes + b"\x02\x00\x00\x00\x00" + b"\x00"
        + b"\x01" + b"\x00"
    )  # fmt: skip
    member = r.ConsumerGroupMemberMetadataValue(
        instance_id=None,
        rack_id="r",
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        subscribed_topic_regex=None,
        rebalance_timeout_ms=30_000,
        server_assignor="uniform",
    )
    samples = [
        record,
        r.CoordinatorRecord(
            key=r.ConsumerGroupMemberMetadataKey(group_id="g", member_id="m"), value=member
        ),
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMetadataKey(group_id="g"),
            value=r.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=3),
        ),
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMemberKey(group_id="g", member_id="m"),
            value=r.ConsumerGroupTargetAssignmentMemberValue(topic_partitions=()),
        ),
    ]
    for sample in samples:
        assert r.CODEC.decode(*r.CODEC.encode(sample)) == sample


def test_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(
    harness: Harness,
) -> None:
    harness.set_topics(t=2)
    a = Client(harness, A, ["t"])
    a.beat()
    b = Client(harness, B, ["t"])
    b.beat()
    told = beat(harness, A, a.epoch, owned=a.owned)  # A must revoke one partition
    assert told.member_epoch == 1
    deadline = harness.shard.next_deadline()
    assert deadline == harness.clock.monotonic_ms() + 30_000  # its rebalance timeout
    harness.clock.advance(29_000)
    b.beat()  # B keeps its session alive; A heartbeats but never revokes
    beat(harness, A, 1, owned=a.owned)
    harness.clock.advance(1_000)
    changed = harness.run(harness.shard.expire_sessions(now_ms=harness.clock.monotonic_ms()))
    assert changed.response.expired_members == (("cg", A),)
    assert beat(harness, A, 1, owned=a.owned).error is ErrorCode.unknown_member_id
    settle([b])
    assert partitions([b]) == [(topic_id("t"), 0), (topic_id("t"), 1)]


def test_a_member_fenced_while_revoking_rejoins_afresh(harness: Harness) -> None:
    harness.set_topics(t=2)
    a = Client(harness, A, ["t"])
    a.beat()
    Client(harness, B, ["t"]).beat()
    told = beat(harness, A, 1, owned=a.owned)  # A is now revoking one partition
    assert told.member_epoch == 1
    rejoined = beat(harness, A, 0, ["t"])  # it lost track and rejoins with its id
    assert rejoined.error is None and rejoined.member_epoch == 2
    member = harness.shard.consumer_group("cg").members[A]  # type: ignore[union-attr]
    assert member.state == MEMBER_STATE_STABLE and not member.revoking


def test_only_an_empty_group_is_deleted_with_its_offsets(harness: Harness) -> None:
    harness.set_topics(t=1)
    joined = beat(harness, A, 0, ["t"])
    commit = harness.shard.classic.commit_offsets(
        group_id="cg",
        member_id=A,
        generation_id=joined.member_epoch,
        group_instance_id=None,
        offsets=[OffsetToCommit(topic="t", partition=0, offset=7, leader_epoch=-1, metadata="")],
        api_version=9,
        now_ms=0,
    )
    assert [p.error for p in commit.response] == [None]
    harness.run(CoordinatorResult(records=commit.records, response=None))
    busy = harness.run(harness.shard.delete_consumer_groups(group_ids=["cg", "nope"]))
    assert [x.error for x in busy.response.results] == [
        ErrorCode.non_empty_group,
        ErrorCode.group_id_not_found,
    ]
    assert harness.shard.classic.fetch_offsets(group_id="cg", partitions=None)[1]
    beat(harness, A, -1)
    deleted = harness.run(harness.shard.delete_consumer_groups(group_ids=["cg"]))
    assert [x.error for x in deleted.response.results] == [None]
    assert harness.shard.consumer_group("cg") is None
    assert harness.shard.group_type("cg") is None
    assert harness.shard.classic.fetch_offsets(group_id="cg", partitions=None) == (None, ())


def static_beat(
    harness: Harness, member: str, epoch: int, instance: str, topics: list[str] | None = None
) -> ShareGroupHeartbeatResponse:
    request = cm.HeartbeatRequest(
        group_id="cg",
        member_id=member,
        member_epoch=epoch,
        instance_id=instance,
        rebalance_timeout_ms=30_000 if epoch == 0 else -1,
        subscribed_topic_names=tuple(topics) if topics is not None else None,
        owned=None if epoch <= 0 else {},
    )
    return harness.run(
        harness.shard.consumer_group_heartbeat(request=request, now_ms=harness.clock.monotonic_ms())
    ).response


def test_static_member_is_replaced_without_a_rebalance(harness: Harness) -> None:
    harness.set_topics(t=4)
    first = static_beat(harness, A, 0, "instance-1", ["t"])
    b = Client(harness, B, ["t"])
    b.beat()
    a = Client(harness, A, ["t"])
    a.epoch, a.owned = first.member_epoch, owned_of(first)
    settle([a, b])
    group = harness.shard.consumer_group("cg")
    assert group is not None
    epoch_before, owned_before = group.group_epoch, dict(a.owned)
    # Another process with the same instance id while A is alive: refused.
    assert static_beat(harness, C, 0, "instance-1", ["t"]).error is ErrorCode.unreleased_instance_id
    left = static_beat(harness, A, -2, "instance-1")
    assert left.error is None and left.member_epoch == -2
    assert harness.shard.consumer_group("cg").members[A].member_epoch == -2  # type: ignore[union-attr]
    # Its partitions stay reserved: B gets nothing more.
    for _ in range(5):
        b.beat()
    assert not set(b.owned[topic_id("t")]) & set(owned_before[topic_id("t")])
    # The restarted process (new member id, same instance id) takes A's place.
    back = static_beat(harness, C, 0, "instance-1", ["t"])
    assert back.error is None and back.member_epoch == a.epoch
    assert owned_of(back) == owned_before
    group = harness.shard.consumer_group("cg")
    assert group is not None and A not in group.members and group.group_epoch == epoch_before


def test_static_member_that_never_returns_expires(harness: Harness) -> None:
    harness.set_topics(t=2)
    static_beat(harness, A, 0, "instance-1", ["t"])
    static_beat(harness, A, -2, "instance-1")
    harness.clock.advance(45_000)
    changed = harness.run(harness.shard.expire_sessions(now_ms=harness.clock.monotonic_ms()))
    assert changed.response.expired_members == (("cg", A),)
    assert harness.shard.consumer_group("cg").is_empty  # type: ignore[union-attr]


def test_offsets_retention_keeps_subscribed_topics_of_a_consumer_group(harness: Harness) -> None:
    """Kafka's ConsumerGroup expiry condition: an offset expires `retention` after its
    commit unless a member subscribes to its topic; the consumer group itself is not
    a classic group (no classic tombstone is written for it)."""
    harness.set_topics(t=1, gone=1)
    joined = beat(harness, A, 0, ["t"])
    commit = harness.shard.classic.commit_offsets(
        group_id="cg",
        member_id=A,
        generation_id=joined.member_epoch,
        group_instance_id=None,
        offsets=[
            OffsetToCommit(topic=name, partition=0, offset=7, leader_epoch=-1, metadata="")
            for name in ("t", "gone")
        ],
        api_version=9,
        now_ms=1_000,
    )
    harness.run(CoordinatorResult(records=commit.records, response=None))
    retention = 60_000
    classic = harness.shard.classic
    assert classic.expire_offsets(now_ms=1_000 + retention - 1, retention_ms=retention) == ()
    expired = classic.expire_offsets(now_ms=1_000 + retention, retention_ms=retention)
    assert [(type(x.key).__name__, getattr(x.key, "topic", None)) for x in expired] == [
        ("OffsetCommitKey", "gone")
    ]
    harness.run(CoordinatorResult(records=expired, response=None))
    fetched = classic.fetch_offsets(group_id="cg", partitions=None)[1]
    assert [(o.topic, o.offset) for o in fetched] == [("t", 7)]
    beat(harness, A, -1)  # the group empties: its last offset may go now
    expired = classic.expire_offsets(now_ms=1_000 + retention, retention_ms=retention)
    assert [(type(x.key).__name__, getattr(x.key, "topic", None)) for x in expired] == [
        ("OffsetCommitKey", "t")
    ]
    harness.run(CoordinatorResult(records=expired, response=None))
    assert harness.shard.group_type("cg") == "consumer"


def test_offset_delete_of_a_consumer_group_spares_subscribed_topics(harness: Harness) -> None:
    """Kafka's ConsumerGroup.validateOffsetDelete accepts any state; a topic a member
    subscribes to answers GROUP_SUBSCRIBED_TO_TOPIC until no member does."""
    harness.set_topics(t=1, u=1)
    joined = beat(harness, A, 0, ["t"])
    commit = harness.shard.classic.commit_offsets(
        group_id="cg",
        member_id=A,
        generation_id=joined.member_epoch,
        group_instance_id=None,
        offsets=[
            OffsetToCommit(topic=t, partition=0, offset=5, leader_epoch=-1, metadata="")
            for t in ("t", "u")
        ],
        api_version=9,
        now_ms=0,
    )
    harness.run(CoordinatorResult(records=commit.records, response=None))

    def delete(*topics: str) -> list[tuple[str, ErrorCode | None]]:
        error, result = harness.shard.classic.delete_offsets(
            group_id="cg", partitions=[(t, 0) for t in topics]
        )
        assert error is None
        harness.run(CoordinatorResult(records=result.records, response=None))
        return [(a.topic, a.error) for a in result.response]

    assert delete("t", "u") == [("t", ErrorCode.group_subscribed_to_topic), ("u", None)]
    fetched = harness.shard.classic.fetch_offsets(group_id="cg", partitions=None)[1]
    assert [(f.topic, f.offset) for f in fetched] == [("t", 5)]
    beat(harness, A, -1)
    assert delete("t") == [("t", None)]
    assert harness.shard.classic.fetch_offsets(group_id="cg", partitions=None) == (None, ())
    error, _ = harness.shard.classic.delete_offsets(group_id="none", partitions=[("t", 0)])
    assert error == ErrorCode.group_id_not_found
