"""The share-group member state machine (client/share_member.py), driven by hand on a
manual clock against a pretend three-broker cluster: the coordinator and two partition
leaders (nodes 1 and 2).

(Past 600 lines: one rig (the brokers' responses and a member wired to them) serves
the whole state machine, membership, sessions, acknowledgements, renewals, lost
sessions and close; splitting the tests by topic would only move the rig.)"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import share_requests as rq
from shoal.client.errors import ClientError, KafkaError
from shoal.client.ranges import Span, TopicIdPartition
from shoal.client.share_effects import (
    COORDINATOR,
    Acknowledged,
    Acquired,
    Closed,
    Effect,
    FindCoordinator,
    FindLeaders,
    Send,
    SessionLost,
)
from shoal.client.share_member import (
    LOCK_DURATION_DEFAULT_MS,
    NOT_HELD,
    MemberSettings,
    ShareMember,
)
from shoal.client.share_membership import HeartbeatSettings
from shoal.client.share_session import INT32_MAX, next_session_epoch
from shoal.clock import ManualClock
from shoal.protocol.schema import response_schema

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
P10, P11, P20 = TopicIdPartition(T1, 0), TopicIdPartition(T1, 1), TopicIdPartition(T2, 0)
LEADERS = {P10: 1, P11: 2, P20: 2}
MS = datetime.timedelta(milliseconds=1)
ACCEPT, RELEASE = rq.AcknowledgeType.ACCEPT, rq.AcknowledgeType.RELEASE


# ---- responses as the brokers would send them


def heartbeat_response(
    epoch: int,
    *,
    assigned: Iterable[TopicIdPartition] | None = None,
    code: int = 0,
    interval_ms: int = 5_000,
) -> Any:
    schema = response_schema(76, 1)
    assignment = None
    if assigned is not None:
        by_topic: dict[uuid.UUID, list[int]] = {}
        for tp in sorted(assigned):
            by_topic.setdefault(tp.topic_id, []).append(tp.partition)
        assignment = schema.make(
            "Assignment",
            topic_partitions=tuple(
                schema.make("TopicPartitions", topic_id=t, partitions=tuple(ps))
                for t, ps in by_topic.items()
            ),
        )
    return schema.response(
        throttle_time=0 * MS,
        error_code=code,
        member_id="m",
        member_epoch=epoch,
        heartbeat_interval=interval_ms * MS,
        assignment=assignment,
    )


def fetch_response(
    acquired: Mapping[TopicIdPartition, list[tuple[int, int, int]]] | None = None,
    *,
    errors: Mapping[TopicIdPartition, int] | None = None,
    code: int = 0,
    lock_ms: int = 10_000,
) -> Any:
    schema = response_schema(78, 2)
    acquired, errors = acquired or {}, errors or {}
    leader = schema.make("LeaderIdAndEpoch", leader_id=-1, leader_epoch=-1)
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for tp in sorted({*acquired, *errors}):
        by_topic.setdefault(tp.topic_id, []).append(
            schema.make(
                "PartitionData",
                partition_index=tp.partition,
                error_code=errors.get(tp, 0),
                acknowledge_error_code=0,
                current_leader=leader,
                records=b"",
                acquired_records=tuple(
                    schema.make("AcquiredRecords", first_offset=f, last_offset=la, delivery_count=c)
                    for f, la, c in acquired.get(tp, ())
                ),
            )
        )
    return schema.response(
        throttle_time=0 * MS,
        error_code=code,
        acquisition_lock_timeout=(0 if code else lock_ms) * MS,
        responses=tuple(
            schema.make("ShareFetchableTopicResponse", topic_id=t, partitions=tuple(ps))
            for t, ps in by_topic.items()
        ),
        node_endpoints=(),
    )


def ack_response(request: Any, *, errors: Mapping[TopicIdPartition, int] | None = None) -> Any:
    """Every requested partition answered (with `errors` where given)."""
    schema = response_schema(79, 2)
    errors = errors or {}
    leader = schema.make("LeaderIdAndEpoch", leader_id=-1, leader_epoch=-1)
    return schema.response(
        throttle_time=0 * MS,
        error_code=0,
        acquisition_lock_timeout=10_000 * MS,
        responses=tuple(
            schema.make(
                "ShareAcknowledgeTopicResponse",
                topic_id=t.topic_id,
                partitions=tuple(
                    schema.make(
                        "PartitionData",
                        partition_index=p.partition_index,
                        error_code=errors.get(TopicIdPartition(t.topic_id, p.partition_index), 0),
                        current_leader=leader,
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
        node_endpoints=(),
    )


# ---- the rig


def body(send: Send) -> Any:
    """The request at the highest version its call allows (what Shoal serves)."""
    return send.call.build(send.call.max_version)


def listed(request: Any) -> list[TopicIdPartition]:
    return [
        TopicIdPartition(t.topic_id, p.partition_index)
        for t in request.topics
        for p in t.partitions
    ]


def forgotten(request: Any) -> list[TopicIdPartition]:
    return [
        TopicIdPartition(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions
    ]


def acks_of(request: Any) -> dict[TopicIdPartition, list[tuple[int, int, tuple[int, ...]]]]:
    return {
        TopicIdPartition(t.topic_id, p.partition_index): [
            (b.first_offset, b.last_offset, b.acknowledge_types) for b in p.acknowledgement_batches
        ]
        for t in request.topics
        for p in t.partitions
    }


class Rig:
    def __init__(self, settings: MemberSettings | None = None) -> None:
        self.clock = ManualClock()
        self.member = ShareMember(
            group_id="g", member_id="m", topics=["a", "b"], clock=self.clock, settings=settings
        )

    def poll(self) -> list[Effect]:
        return self.member.poll()

    def sends(self) -> dict[Any, Send]:
        """The sends of one poll by target (at most one per target); lookups dropped."""
        found: dict[Any, Send] = {}
        for effect in self.poll():
            if isinstance(effect, Send):
                assert effect.target not in found, effect
                found[effect.target] = effect
        return found

    def one(self, target: Any) -> Send:
        sends = self.sends()
        assert list(sends) == [target], sends
        return sends[target]

    def joined(
        self, assigned: Iterable[TopicIdPartition] = LEADERS, *, interval_ms: int = 5_000
    ) -> None:
        join = self.one(COORDINATOR)
        reply = heartbeat_response(1, assigned=assigned, interval_ms=interval_ms)
        self.member.on_response(join.request_id, reply)
        self.member.set_leaders({tp: LEADERS[tp] for tp in assigned})

    def acquired(
        self, replies: Mapping[int, Any], *, records_max: int = 10, wait_ms: int = 100
    ) -> Acquired:
        """An acquire round: every node in `replies` gets one ShareFetch, answered so."""
        ticket = self.member.acquire(records_max=records_max, wait_ms=wait_ms)
        sends = self.sends()
        assert sorted(sends) == sorted(replies), sends
        for node, send in sends.items():
            self.member.on_response(send.request_id, replies[node])
        outcome = self.member.take_result(ticket)
        assert isinstance(outcome, Acquired), outcome
        return outcome

    def holding(self) -> None:
        """Joined, leaders known, P10 0-4 held via node 1 and P20 5-6 via node 2."""
        self.joined()
        self.acquired(
            {1: fetch_response({P10: [(0, 4, 1)]}), 2: fetch_response({P20: [(5, 6, 2)]})}
        )


# ---- membership


def test_join_with_subscription_then_heartbeat_at_the_interval_given() -> None:
    rig = Rig()
    join = rig.one(COORDINATOR)
    request = body(join)
    assert (request.group_id, request.member_id, request.member_epoch) == ("g", "m", 0)
    assert request.subscribed_topic_names == ("a", "b")
    rig.member.on_response(join.request_id, heartbeat_response(3, assigned=[P10, P20]))
    assert (rig.member.member_epoch, rig.member.assignment) == (3, frozenset({P10, P20}))
    effects = rig.poll()
    assert effects == [FindLeaders(frozenset({P10, P20}))]
    assert rig.member.next_deadline_ms() == 500  # asks again unless answered
    rig.member.set_leaders({P10: 1, P20: 2})
    assert rig.member.next_deadline_ms() == 5_000
    rig.clock.advance(4_999)
    assert rig.sends() == {}
    rig.clock.advance(1)
    beat = rig.one(COORDINATOR)
    assert (body(beat).member_epoch, body(beat).subscribed_topic_names) == (3, None)
    rig.member.on_response(beat.request_id, heartbeat_response(4, assigned=None))
    assert (rig.member.member_epoch, rig.member.assignment) == (4, frozenset({P10, P20}))


def test_no_assignment_yet_heartbeats_sooner_and_every_assignment_is_adopted() -> None:
    rig = Rig(MemberSettings(heartbeat=HeartbeatSettings(unassigned_interval_ms=150)))
    rig.member.on_response(rig.one(COORDINATOR).request_id, heartbeat_response(1, assigned=[]))
    assert rig.member.next_deadline_ms() == 150
    rig.clock.advance(150)
    beat = rig.one(COORDINATOR)
    rig.member.on_response(beat.request_id, heartbeat_response(2, assigned=[P11]))
    assert rig.member.assignment == {P11}
    rig.member.set_leaders({P11: 2})
    assert rig.member.next_deadline_ms() == 150 + 5_000


def test_the_interval_asked_for_has_a_floor() -> None:
    rig = Rig(MemberSettings(heartbeat=HeartbeatSettings(interval_min_ms=100)))
    join = rig.one(COORDINATOR)
    rig.member.on_response(join.request_id, heartbeat_response(1, assigned=[P10], interval_ms=1))
    assert rig.member.next_deadline_ms() == 100


@pytest.mark.parametrize("code", [ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id])
def test_fenced_member_rejoins_at_epoch_0_with_the_same_id(code: ErrorCode) -> None:
    rig = Rig()
    rig.joined()
    rig.clock.advance(5_000)
    beat = rig.one(COORDINATOR)
    rig.member.on_response(beat.request_id, heartbeat_response(0, code=code))
    assert (rig.member.member_epoch, rig.member.assignment) == (0, frozenset())
    rejoin = body(rig.one(COORDINATOR))
    assert (rejoin.member_id, rejoin.member_epoch) == ("m", 0)
    assert rejoin.subscribed_topic_names == ("a", "b")


def test_coordinator_moved_or_unreachable_asks_for_it_and_retries_after_the_backoff() -> None:
    rig = Rig(MemberSettings(heartbeat=HeartbeatSettings(retry_backoff_ms=300)))
    rig.joined()
    rig.clock.advance(5_000)
    beat = rig.one(COORDINATOR)
    rig.member.on_response(beat.request_id, heartbeat_response(1, code=ErrorCode.not_coordinator))
    effects = rig.poll()
    assert [type(e) for e in effects] == [FindCoordinator]
    assert rig.member.next_deadline_ms() == 5_300
    rig.clock.advance(300)
    again = rig.one(COORDINATOR)
    assert body(again).member_epoch == 1
    rig.member.on_failure(again.request_id, ConnectionError("reset"))
    assert [type(e) for e in rig.poll()] == [FindCoordinator]
    assert rig.member.failure is None


def test_a_fatal_heartbeat_error_is_the_members_failure_and_stops_heartbeats() -> None:
    rig = Rig()
    join = rig.one(COORDINATOR)
    rig.member.on_response(
        join.request_id, heartbeat_response(0, code=ErrorCode.group_id_not_found)
    )
    assert isinstance(rig.member.failure, KafkaError)
    assert rig.member.failure.name == "GROUP_ID_NOT_FOUND"
    assert rig.member.next_deadline_ms() is None
    rig.clock.advance(60_000)
    assert rig.poll() == []


# ---- share sessions over two leaders


def test_an_assignment_over_two_leaders_opens_one_session_per_leader() -> None:
    rig = Rig()
    rig.joined()
    ticket = rig.member.acquire(records_max=10, wait_ms=100)
    sends = rig.sends()
    assert sorted(sends) == [1, 2]
    one, two = body(sends[1]), body(sends[2])
    assert (one.share_session_epoch, two.share_session_epoch) == (0, 0)
    assert listed(one) == [P10] and listed(two) == [P11, P20]
    assert (one.max_records, two.max_records) == (5, 5)
    assert (one.share_acquire_mode, one.max_wait) == (rq.AcquireMode.RECORD_LIMIT, 100 * MS)
    rig.member.on_response(sends[2].request_id, fetch_response({P20: [(5, 6, 2)]}))
    assert rig.member.take_result(ticket) is None  # node 1 still out
    rig.member.on_response(sends[1].request_id, fetch_response({P10: [(0, 2, 1)]}))
    assert rig.member.take_result(ticket) == Acquired(
        {P10: (Span(0, 2, 1),), P20: (Span(5, 6, 2),)}, {}
    )
    assert (rig.member.session_epoch(1), rig.member.session_epoch(2)) == (1, 1)
    # the next round is incremental, each session at its own epoch
    rig.acquired({1: fetch_response(), 2: fetch_response()})
    rig.member.acquire(records_max=10, wait_ms=0, skip={P20})
    sends = rig.sends()
    assert (body(sends[1]).share_session_epoch, body(sends[2]).share_session_epoch) == (2, 2)
    assert (listed(body(sends[1])), listed(body(sends[2]))) == ([], [])
    assert forgotten(body(sends[2])) == [P20]
    assert rig.member.held() == {P10: (Span(0, 2, 1),), P20: (Span(5, 6, 2),)}


def test_one_request_in_flight_per_session() -> None:
    rig = Rig()
    rig.joined([P10])
    first = rig.member.acquire(records_max=5, wait_ms=500)
    (send,) = rig.sends().values()
    second = rig.member.acquire(records_max=5, wait_ms=500)
    assert rig.sends() == {}
    rig.member.on_response(send.request_id, fetch_response({P10: [(0, 0, 1)]}))
    (queued,) = rig.sends().values()
    assert body(queued).share_session_epoch == 1
    rig.member.on_response(queued.request_id, fetch_response({P10: [(1, 1, 1)]}))
    assert rig.member.take_result(first) == Acquired({P10: (Span(0, 0, 1),)}, {})
    assert rig.member.take_result(second) == Acquired({P10: (Span(1, 1, 1),)}, {})


def test_records_max_is_shared_between_leaders_in_turn() -> None:
    rig = Rig()
    rig.joined()
    picked = []
    for _ in range(2):
        rig.member.acquire(records_max=1, wait_ms=0)
        sends = rig.sends()
        assert len(sends) == 1
        ((node, send),) = sends.items()
        assert body(send).max_records == 1
        picked.append(node)
        rig.member.on_response(send.request_id, fetch_response())
    assert sorted(picked) == [1, 2]


def test_acquire_with_nothing_to_fetch_waits_as_a_fetch_would() -> None:
    rig = Rig()
    rig.one(COORDINATOR)  # joining, nothing assigned yet
    ticket = rig.member.acquire(records_max=10, wait_ms=250)
    assert rig.sends() == {}
    assert rig.member.take_result(ticket) is None
    assert rig.member.next_deadline_ms() == 250
    rig.clock.advance(250)
    rig.poll()
    assert rig.member.take_result(ticket) == Acquired({}, {})


def test_leadership_moved_asks_for_the_leader_and_follows_it() -> None:
    rig = Rig()
    rig.joined([P10])
    rig.member.acquire(records_max=10, wait_ms=0)
    (send,) = rig.sends().values()
    moved = fetch_response(errors={P10: ErrorCode.not_leader_or_follower})
    rig.member.on_response(send.request_id, moved)
    assert rig.poll() == [FindLeaders(frozenset({P10}))]
    rig.member.set_leaders({P10: 2})
    rig.member.acquire(records_max=10, wait_ms=0)
    sends = rig.sends()
    assert list(sends) == [2]
    assert (body(sends[2]).share_session_epoch, listed(body(sends[2]))) == (0, [P10])


def test_session_epochs_wrap_to_1_after_int32_max() -> None:
    assert next_session_epoch(0) == 1
    assert next_session_epoch(INT32_MAX - 1) == INT32_MAX
    assert next_session_epoch(INT32_MAX) == 1
    rig = Rig()
    rig.holding()
    rig.member._sessions[1].epoch = INT32_MAX  # white box: 2**31 round trips is too many
    rig.member.acquire(records_max=10, wait_ms=0, skip={P11, P20})
    (send,) = rig.sends().values()
    assert body(send).share_session_epoch == INT32_MAX
    rig.member.on_response(send.request_id, fetch_response())
    assert rig.member.session_epoch(1) == 1


# ---- acknowledgements


def test_acknowledgements_go_to_the_session_that_acquired_the_records() -> None:
    rig = Rig()
    rig.holding()
    ticket = rig.member.acknowledge(
        {P10: [Span(0, 1, 1)], P20: [Span(5, 5, 2)], P11: [Span(9, 9, 1)]}, ACCEPT
    )
    sends = rig.sends()
    assert sorted(sends) == [1, 2]
    one, two = body(sends[1]), body(sends[2])
    assert (one.share_session_epoch, two.share_session_epoch) == (1, 1)
    assert acks_of(one) == {P10: [(0, 1, (1,))]}
    assert acks_of(two) == {P20: [(5, 5, (1,))]}
    assert not one.is_renew_ack
    rig.member.on_response(sends[1].request_id, ack_response(one))
    rig.member.on_response(
        sends[2].request_id, ack_response(two, errors={P20: ErrorCode.invalid_record_state})
    )
    assert rig.member.take_result(ticket) == Acknowledged(
        {P11: NOT_HELD, P20: "INVALID_RECORD_STATE"}
    )
    assert rig.member.held() == {P10: (Span(2, 4, 1),), P20: (Span(6, 6, 2),)}
    assert (rig.member.session_epoch(1), rig.member.session_epoch(2)) == (2, 2)


def test_renew_and_gap_are_not_the_callers_to_send() -> None:
    rig = Rig()
    rig.holding()
    with pytest.raises(ValueError, match="RENEW"):
        rig.member.acknowledge({P10: [Span(0, 0)]}, rq.AcknowledgeType.RENEW)
    with pytest.raises(ValueError, match="GAP"):
        rig.member.acknowledge({P10: [Span(0, 0)]}, 0)  # type: ignore[arg-type]


# ---- renewals


def renewals(rig: Rig) -> dict[Any, Send]:
    return {t: s for t, s in rig.sends().items() if t != COORDINATOR}


def test_renew_fires_every_half_lock_duration_for_what_is_held() -> None:
    rig = Rig()
    rig.holding()  # the brokers report a 10 s lock
    assert rig.member.lock_duration_ms == 10_000
    rig.member.acknowledge({P10: [Span(0, 0, 1)]}, RELEASE)
    (release,) = rig.sends().values()
    rig.member.on_response(release.request_id, ack_response(body(release)))
    rig.clock.advance(4_999)
    assert renewals(rig) == {}
    rig.clock.advance(1)
    sends = renewals(rig)
    assert sorted(sends) == [1, 2]
    one, two = body(sends[1]), body(sends[2])
    assert (sends[1].call.min_version, one.is_renew_ack) == (2, True)
    assert acks_of(one) == {P10: [(1, 4, (4,))]}
    assert acks_of(two) == {P20: [(5, 6, (4,))]}
    assert one.share_session_epoch == 2
    for send in sends.values():
        rig.member.on_response(send.request_id, ack_response(body(send)))
    assert rig.member.held() == {P10: (Span(1, 4, 1),), P20: (Span(5, 6, 2),)}
    assert rig.member.next_deadline_ms() == 10_000
    rig.clock.advance(5_000)
    assert sorted(renewals(rig)) == [1, 2]


def test_renew_interval_can_be_configured() -> None:
    rig = Rig(MemberSettings(lock_renew_interval_ms=1_000))
    rig.holding()
    rig.clock.advance(999)
    assert renewals(rig) == {}
    rig.clock.advance(1)
    assert sorted(renewals(rig)) == [1, 2]


def test_lock_duration_is_assumed_until_a_broker_reports_one() -> None:
    rig = Rig()
    assert rig.member.lock_duration_ms == LOCK_DURATION_DEFAULT_MS
    rig.joined([P10], interval_ms=60_000)
    rig.acquired({1: fetch_response({P10: [(0, 0, 1)]}, lock_ms=0)})
    assert rig.member.next_deadline_ms() == LOCK_DURATION_DEFAULT_MS // 2


def test_nothing_held_nothing_renewed() -> None:
    rig = Rig()
    rig.holding()
    ticket = rig.member.acknowledge({P10: [Span(0, 4)], P20: [Span(5, 6)]}, ACCEPT)
    for send in rig.sends().values():
        rig.member.on_response(send.request_id, ack_response(body(send)))
    assert rig.member.take_result(ticket) == Acknowledged({})
    assert rig.member.next_deadline_ms() == 5_000  # the heartbeat only
    rig.clock.advance(5_000)
    assert list(rig.sends()) == [COORDINATOR]


def test_records_whose_renew_failed_are_lost_once() -> None:
    rig = Rig()
    rig.holding()
    rig.clock.advance(5_000)
    sends = renewals(rig)
    rig.member.on_response(
        sends[1].request_id,
        ack_response(body(sends[1]), errors={P10: ErrorCode.invalid_record_state}),
    )
    rig.member.on_response(sends[2].request_id, ack_response(body(sends[2])))
    assert rig.member.take_lost() == {P10: (Span(0, 4, 1),)}
    assert rig.member.take_lost() == {}
    assert rig.member.held() == {P20: (Span(5, 6, 2),)}
    assert rig.member.failure is None


def test_a_broker_without_renew_disables_renewals_and_loses_nothing() -> None:
    rig = Rig()
    rig.holding()
    rig.clock.advance(5_000)
    sends = renewals(rig)
    with pytest.raises(rq.FeatureUnsupported) as refused:
        sends[1].call.build(1)
    rig.member.on_failure(sends[1].request_id, refused.value)
    rig.member.on_response(sends[2].request_id, ack_response(body(sends[2])))
    assert rig.member.take_lost() == {}
    assert rig.member.failure is None
    assert rig.member.session_epoch(1) == 1  # never sent: the epoch stays
    rig.clock.advance(5_000)
    assert renewals(rig) == {}


# ---- lost sessions


def test_a_lost_session_connection_is_a_failure_and_its_records_are_lost() -> None:
    rig = Rig()
    rig.holding()
    ticket = rig.member.acquire(records_max=10, wait_ms=100)
    sends = rig.sends()
    rig.member.on_failure(sends[2].request_id, ConnectionError("connection reset"))
    rig.member.on_response(sends[1].request_id, fetch_response())
    outcome = rig.member.take_result(ticket)
    assert outcome == Acquired({}, {P11: "NETWORK_EXCEPTION", P20: "NETWORK_EXCEPTION"})
    failure = rig.member.failure
    assert isinstance(failure, SessionLost) and failure.node_id == 2
    assert "released the 2 records" in str(failure)
    assert rig.member.take_lost() == {P20: (Span(5, 6, 2),)}
    assert rig.member.held() == {P10: (Span(0, 4, 1),)}
    assert (rig.member.session_epoch(1), rig.member.session_epoch(2)) == (2, 0)
    # the caller may go on: a new session opens with every partition listed
    rig.member.acquire(records_max=10, wait_ms=0)
    reopen = body(rig.sends()[2])
    assert (reopen.share_session_epoch, listed(reopen)) == (0, [P11, P20])


def test_a_session_the_broker_no_longer_knows_is_lost() -> None:
    rig = Rig()
    rig.holding()
    ticket = rig.member.acknowledge({P10: [Span(0, 0)]}, ACCEPT)
    (send,) = rig.sends().values()
    gone = response_schema(79, 2).response(
        throttle_time=0 * MS,
        error_code=ErrorCode.share_session_not_found,
        acquisition_lock_timeout=0 * MS,
        responses=(),
        node_endpoints=(),
    )
    rig.member.on_response(send.request_id, gone)
    assert rig.member.take_result(ticket) == Acknowledged({P10: "SHARE_SESSION_NOT_FOUND"})
    assert isinstance(rig.member.failure, SessionLost)
    assert rig.member.take_lost() == {P10: (Span(1, 4, 1),)}
    assert rig.member.session_epoch(1) == 0


# ---- close


def test_close_ends_every_session_then_leaves() -> None:
    rig = Rig()
    rig.holding()
    rig.member.acknowledge({P10: [Span(0, 0)]}, ACCEPT)
    ticket = rig.member.close()
    assert rig.member.close() == ticket
    sends = rig.sends()
    assert sorted(sends) == [1, 2]  # the queued ACCEPT first on node 1, no leave yet
    assert acks_of(body(sends[1])) == {P10: [(0, 0, (1,))]}
    rig.member.on_response(sends[1].request_id, ack_response(body(sends[1])))
    closes = [sends[2], rig.one(1)]
    for close in closes:
        assert (body(close).share_session_epoch, body(close).topics) == (-1, ())
    assert rig.member.take_result(ticket) is None
    rig.member.on_response(closes[0].request_id, ack_response(body(closes[0])))
    assert rig.sends() == {}  # node 1 still closing
    rig.member.on_response(closes[1].request_id, ack_response(body(closes[1])))
    leave = rig.one(COORDINATOR)
    assert body(leave).member_epoch == -1
    assert rig.member.take_result(ticket) is None
    rig.member.on_response(leave.request_id, heartbeat_response(-1))
    assert rig.member.take_result(ticket) == Closed()
    assert rig.member.closed and rig.member.held() == {}
    rig.clock.advance(60_000)
    assert rig.poll() == [] and rig.member.next_deadline_ms() is None
    with pytest.raises(ClientError, match="closed"):
        rig.member.acquire(records_max=1, wait_ms=0)


def test_close_cancels_queued_fetches_and_skips_nodes_without_a_session() -> None:
    rig = Rig()
    rig.joined([P10])
    first = rig.member.acquire(records_max=5, wait_ms=500)
    (fetch,) = rig.sends().values()
    queued = rig.member.acquire(records_max=5, wait_ms=500)
    ticket = rig.member.close()
    assert rig.member.take_result(queued) == Acquired({}, {})
    rig.member.on_response(fetch.request_id, fetch_response({P10: [(0, 0, 1)]}, lock_ms=2_000))
    assert rig.member.take_result(first) == Acquired({P10: (Span(0, 0, 1),)}, {})
    assert rig.member.next_deadline_ms() == 5_000  # closing: no RENEW armed
    close = rig.one(1)
    assert body(close).share_session_epoch == -1
    rig.member.on_failure(close.request_id, ConnectionError("gone"))
    assert rig.member.failure is None  # a close that fails still ends the session
    leave = rig.one(COORDINATOR)
    rig.member.on_response(leave.request_id, heartbeat_response(-1))
    assert rig.member.take_result(ticket) == Closed()


def test_a_member_that_failed_sends_no_leave() -> None:
    rig = Rig()
    join = rig.one(COORDINATOR)
    rig.member.on_response(join.request_id, heartbeat_response(0, code=ErrorCode.invalid_request))
    ticket = rig.member.close()
    assert rig.poll() == []
    assert rig.member.take_result(ticket) == Closed()


def test_close_while_joining_leaves_once_the_join_is_answered() -> None:
    rig = Rig()
    join = rig.one(COORDINATOR)
    ticket = rig.member.close()
    assert rig.poll() == []
    rig.member.on_response(join.request_id, heartbeat_response(1, assigned=[P10]))
    leave = rig.one(COORDINATOR)
    assert body(leave).member_epoch == -1
    rig.member.on_response(leave.request_id, heartbeat_response(-1))
    assert rig.member.take_result(ticket) == Closed()


def test_an_acknowledgement_queued_on_a_session_that_is_then_lost_fails() -> None:
    rig = Rig()
    rig.holding()
    rig.member.acquire(records_max=10, wait_ms=500, skip={P11, P20})
    (fetch,) = rig.sends().values()
    ticket = rig.member.acknowledge({P10: [Span(0, 1)]}, ACCEPT)  # queued behind the fetch
    assert rig.sends() == {}
    rig.member.on_failure(fetch.request_id, TimeoutError("request timed out"))
    assert rig.sends() == {}  # nothing left to acknowledge on: the broker released them
    assert rig.member.take_result(ticket) == Acknowledged({P10: NOT_HELD})
    assert rig.member.take_lost() == {P10: (Span(2, 4, 1),)}


def test_unknown_leaders_are_asked_for_again_after_the_backoff() -> None:
    rig = Rig(MemberSettings(heartbeat=HeartbeatSettings(retry_backoff_ms=300)))
    join = rig.one(COORDINATOR)
    rig.member.on_response(join.request_id, heartbeat_response(1, assigned=[P10, P11]))
    assert rig.poll() == [FindLeaders(frozenset({P10, P11}))]
    rig.member.set_leaders({P10: 1, P11: -1})
    assert rig.member.leaderless == {P11}
    assert rig.member.next_deadline_ms() == 300
    rig.clock.advance(299)
    assert rig.poll() == []
    rig.clock.advance(1)
    assert rig.poll() == [FindLeaders(frozenset({P11}))]
    rig.member.set_leaders({P11: 2})
    assert rig.member.leaderless == frozenset()


def test_batch_optimized_acquisition_can_be_chosen() -> None:
    rig = Rig(MemberSettings(acquire_mode=rq.AcquireMode.BATCH_OPTIMIZED))
    rig.joined([P10])
    rig.member.acquire(records_max=7, wait_ms=0)
    request = body(rig.one(1))
    assert (request.share_acquire_mode, request.max_records, request.batch_size) == (0, 7, 7)


def test_one_acquisition_can_choose_its_own_mode() -> None:
    rig = Rig()  # record-limit by default
    rig.joined([P10])
    rig.member.acquire(records_max=7, wait_ms=0, acquire_mode=rq.AcquireMode.BATCH_OPTIMIZED)
    assert body(rig.one(1)).share_acquire_mode == 0


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(AssertionError):
        MemberSettings(lock_renew_interval_ms=0)
    with pytest.raises(AssertionError):
        HeartbeatSettings(retry_backoff_ms=0)
