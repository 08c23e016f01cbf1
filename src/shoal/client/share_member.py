"""The share-group member as a sans-I/O state machine: what a KIP-932 consumer does
between its application and the brokers, with no sockets, threads or event loop, time
from an injected `Clock` and the member id given. The Spark connector and the tests
drive it through a sync or async driver.

Theory of operation. The member works on a cluster of many brokers:

- heartbeats (share_membership.py) go to the group **coordinator** (`Send.target ==
  COORDINATOR`); the driver finds it, and finds it again on `FindCoordinator`;
- ShareFetch and ShareAcknowledge go to each partition's **leader**, with one share
  session per broker (share_session.py: its own epoch, partitions and held records).
  The driver owns metadata: it tells the member the leaders (`set_leaders`) and is
  asked for the ones missing by a `FindLeaders` effect. Acknowledgements go to the
  broker whose session acquired the records.

The driver loop: call the intents (`acquire`, `acknowledge`, `close`), each of which
returns a ticket; then repeatedly `poll()` for effects (send each `Send` to its target,
answer `FindLeaders`/`FindCoordinator`), feed every reply to `on_response` (the
decoded body, whatever its error codes) or `on_failure` (no reply: the connection was
lost or the request timed out; or the client refused it before sending, as
`FeatureUnsupported` or `KafkaError`), and wait for a reply or `next_deadline_ms()`.
`take_result(ticket)` gives the intent's outcome once every request it needed has
been answered.

The member also RENEWs, on its own, every record it holds and has not acknowledged,
every `lock_renew_interval_ms` (default: half the lock duration the brokers report).
Records whose RENEW failed, and records held on a session the broker dropped, are
*lost*: `take_lost()` reports them once. A dropped session is also a `failure`
(`SessionLost`) the caller sees: the broker released what was held there.
`close()` cancels queued fetches and renewals, sends the queued acknowledgements,
closes every open session (ShareAcknowledge at epoch -1), then leaves the group
(heartbeat at epoch -1).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from shoal.client import share_requests as rq
from shoal.client.errors import LEADERSHIP_MOVED, ClientError, ErrorCode, KafkaError, error_name
from shoal.client.ranges import Span, SpanMap, TopicIdPartition, merge, normalized, split_by
from shoal.client.share_effects import (
    COORDINATOR,
    Acknowledged,
    Acquired,
    Closed,
    Effect,
    FindCoordinator,
    FindLeaders,
    Outcome,
    Send,
    SessionLost,
)
from shoal.client.share_membership import HeartbeatOutcome, HeartbeatSettings, Membership
from shoal.client.share_session import (
    SESSION_RESET_ACKNOWLEDGE,
    SESSION_RESET_FETCH,
    AckOp,
    CloseOp,
    FetchOp,
    InFlight,
    RenewOp,
    SessionOp,
    ShareSession,
)
from shoal.clock import Clock
from shoal.config import broker_keys
from shoal.protocol.share import AcknowledgeType, AcquireMode

log = logging.getLogger(__name__)

NOT_HELD: Final = error_name(ErrorCode.invalid_record_state)
"""The failure of an acknowledgement of records the member does not hold."""
LOCK_DURATION_DEFAULT_MS: Final = broker_keys.GROUP_SHARE_RECORD_LOCK_DURATION_MS.default
"""The lock duration assumed until a broker reports one (Kafka's default
share.record.lock.duration.ms)."""


@dataclass(frozen=True, slots=True)
class MemberSettings:
    heartbeat: HeartbeatSettings = field(default_factory=HeartbeatSettings)
    lock_renew_interval_ms: int | None = None
    """None: half the lock duration the brokers report."""
    acquire_mode: AcquireMode = AcquireMode.RECORD_LIMIT
    """Record-limit mode takes no more records than asked (ShareFetch v2; a v1 broker
    acquires in batch-optimized mode)."""
    fetch_max_bytes: int = rq.FETCH_MAX_BYTES_DEFAULT

    def __post_init__(self) -> None:
        assert self.lock_renew_interval_ms is None or self.lock_renew_interval_ms > 0, self
        assert self.fetch_max_bytes > 0, self


@dataclass(slots=True)
class _Ticket:
    kind: Literal["acquire", "acknowledge", "close"]
    parts: int = 0
    records: dict[TopicIdPartition, list[Span]] = field(default_factory=dict)
    errors: dict[TopicIdPartition, str] = field(default_factory=dict)
    deadline_ms: int | None = None
    """An acquire with nothing to fetch completes at its wait time, as a fetch would."""

    def outcome(self) -> Outcome:
        if self.kind == "acquire":
            return Acquired(normalized(self.records), dict(sorted(self.errors.items())))
        if self.kind == "acknowledge":
            return Acknowledged(dict(sorted(self.errors.items())))
        return Closed()


class ShareMember:
    """See the module docstring."""

    def __init__(
        self,
        *,
        group_id: str,
        member_id: str,
        topics: Sequence[str],
        clock: Clock,
        settings: MemberSettings | None = None,
    ) -> None:
        self.settings = settings or MemberSettings()
        self._clock = clock
        self.membership = Membership(
            group_id=group_id,
            member_id=member_id,
            topics=topics,
            settings=self.settings.heartbeat,
            now_ms=clock.monotonic_ms(),
        )
        self._leaders: dict[TopicIdPartition, int] = {}
        self._leaders_asked: set[TopicIdPartition] = set()
        self._leaders_asked_ms = 0
        self._sessions: dict[int, ShareSession] = {}
        self._pending: dict[int, int] = {}
        """Request id of a session request -> its node id."""
        self._tickets: dict[int, _Ticket] = {}
        self._effects: list[Effect] = []
        self._lost: dict[TopicIdPartition, list[Span]] = {}
        self._next_id = 0
        self._acquire_round = 0
        self._next_renew_ms: int | None = None
        self._renew_supported = True
        self._close_ticket: int | None = None
        self.lock_duration_ms = LOCK_DURATION_DEFAULT_MS
        self.failure: ClientError | None = None
        """The first failure the caller must see: a fatal heartbeat error or a lost
        share session."""

    # ---- what the driver reads

    @property
    def group_id(self) -> str:
        return self.membership.group_id

    @property
    def member_id(self) -> str:
        return self.membership.member_id

    @property
    def member_epoch(self) -> int:
        return self.membership.member_epoch

    @property
    def assignment(self) -> frozenset[TopicIdPartition]:
        return self.membership.assignment

    @property
    def leaderless(self) -> frozenset[TopicIdPartition]:
        """Assigned partitions whose leader the driver has not told yet (an acquire
        fetches nothing from them)."""
        return frozenset(self.assignment - self._leaders.keys())

    @property
    def closed(self) -> bool:
        """close() was called and is complete: nothing more will be sent."""
        return (
            self._close_ticket is not None
            and self.membership.done
            and not any(s.busy for s in self._sessions.values())
        )

    def session_epoch(self, node_id: int) -> int:
        """The epoch the next request to `node_id` carries (0: no session)."""
        session = self._sessions.get(node_id)
        return 0 if session is None else session.epoch

    def held(self) -> SpanMap:
        """Records acquired and not acknowledged, over every session."""
        held: dict[TopicIdPartition, list[Span]] = {}
        for session in self._sessions.values():
            for tp, spans in session.held.items():
                held[tp] = merge(held.get(tp, ()), spans)
        return normalized(held)

    def take_lost(self) -> SpanMap:
        """Records lost since the last call (RENEW failed, or their session was lost)."""
        lost = normalized(self._lost)
        self._lost.clear()
        return lost

    def take_result(self, ticket: int) -> Outcome | None:
        """The intent's outcome once complete (then forgotten), else None."""
        state = self._tickets.get(ticket)
        if state is None:
            raise KeyError(f"unknown or already taken ticket {ticket}")
        if state.parts > 0 or state.deadline_ms is not None:
            return None
        if ticket == self._close_ticket and not self.membership.done:
            return None
        del self._tickets[ticket]
        return state.outcome()

    def set_leaders(self, leaders: Mapping[TopicIdPartition, int]) -> None:
        """The leader node of partitions (-1: unknown, asked for again after the retry
        backoff), from the driver's metadata."""
        for tp, node_id in leaders.items():
            if node_id < 0:
                self._leaders.pop(tp, None)
            else:
                self._leaders[tp] = node_id
                self._leaders_asked.discard(tp)

    # ---- intents

    def acquire(
        self,
        *,
        records_max: int,
        wait_ms: int,
        skip: Collection[TopicIdPartition] = (),
        acquire_mode: AcquireMode | None = None,
    ) -> int:
        """One round of ShareFetches, one per leader of the assigned partitions but
        `skip`, together acquiring at most `records_max` records (in record-limit mode;
        in batch-optimized mode whole batches, so maybe more), each waiting up to
        `wait_ms`. `acquire_mode` None: the settings'. Outcome: `Acquired`."""
        assert records_max > 0 and wait_ms >= 0, (records_max, wait_ms)
        self._check_open()
        ticket = self._ticket("acquire")
        skipped = frozenset(skip)
        nodes = sorted(
            {self._leaders[tp] for tp in self.assignment - skipped if tp in self._leaders}
        )
        if nodes:  # rotate who gets the remainder, so no leader starves
            shift = self._acquire_round % len(nodes)
            nodes = nodes[shift:] + nodes[:shift]
            self._acquire_round += 1
        for i, node_id in enumerate(nodes):
            share = records_max // len(nodes) + (1 if i < records_max % len(nodes) else 0)
            if share > 0:
                self._session(node_id).queue.append(
                    FetchOp(ticket, share, wait_ms, skipped, acquire_mode)
                )
                self._tickets[ticket].parts += 1
        if self._tickets[ticket].parts == 0:
            self._tickets[ticket].deadline_ms = self._clock.monotonic_ms() + wait_ms
        return ticket

    def acknowledge(
        self, spans: Mapping[TopicIdPartition, Iterable[Span]], ack_type: AcknowledgeType
    ) -> int:
        """ACCEPT, RELEASE or REJECT `spans`, each to the broker whose session acquired
        them; they are no longer held, whatever the outcome. Records not held fail at
        once (INVALID_RECORD_STATE). Outcome: `Acknowledged`."""
        ack_type = AcknowledgeType(ack_type)
        if ack_type in (AcknowledgeType.RENEW, AcknowledgeType.GAP):
            raise ValueError(f"{ack_type.name} is not an acknowledgement the caller makes")
        self._check_open()
        ticket = self._ticket("acknowledge")
        by_node: dict[int, dict[TopicIdPartition, list[Span]]] = {}
        for tp, items in normalized({tp: list(s) for tp, s in spans.items()}).items():
            rest = list(items)
            for node_id, session in sorted(self._sessions.items()):
                taken = session.take(tp, rest)
                if taken:
                    by_node.setdefault(node_id, {})[tp] = taken
                    rest = split_by(rest, taken)[1]
            if rest:
                self._tickets[ticket].errors[tp] = NOT_HELD
        for node_id, acks in sorted(by_node.items()):
            self._session(node_id).queue.append(AckOp(ticket, normalized(acks), int(ack_type)))
            self._tickets[ticket].parts += 1
        self._disarm_renew_if_idle()
        return ticket

    def close(self) -> int:
        """Cancel queued fetches and renewals, close every session, leave the group.
        Idempotent (the same ticket). Outcome: `Closed`."""
        if self._close_ticket is not None:
            return self._close_ticket
        self._close_ticket = ticket = self._ticket("close")
        self._next_renew_ms = None
        for state in self._tickets.values():
            if state.kind == "acquire":
                state.deadline_ms = None
        for session in self._sessions.values():
            for op in [op for op in session.queue if isinstance(op, FetchOp | RenewOp)]:
                session.queue.remove(op)
                if isinstance(op, FetchOp):
                    self._tickets[op.ticket].parts -= 1
            session.queue.append(CloseOp(ticket))
            self._tickets[ticket].parts += 1
        return ticket

    # ---- the driver loop

    def poll(self) -> list[Effect]:
        """What to do now: requests to send and lookups to make."""
        now = self._clock.monotonic_ms()
        self._expire_idle_acquires(now)
        if self._next_renew_ms is not None and now >= self._next_renew_ms:
            self._queue_renewals(now)
        for _node_id, session in sorted(self._sessions.items()):
            while session.in_flight is None and session.queue:
                send = self._start(session, session.queue.popleft())
                if send is not None:
                    self._effects.append(send)
        closing = self._close_ticket is not None and not self.membership.leaving
        if closing and not any(s.busy for s in self._sessions.values()):
            self.membership.leave(now)
        if self.membership.due(now):
            request_id = self._request_id()
            what = f"ShareGroupHeartbeat epoch {self.membership.next_epoch}"
            call = self.membership.send(request_id)
            self._effects.append(Send(request_id, COORDINATOR, call, what))
        self._ask_leaders(now)
        effects, self._effects = self._effects, []
        return effects

    def next_deadline_ms(self) -> int | None:
        """When `poll()` next has something to do on its own (None: only a reply or an
        intent can give it work)."""
        deadlines = [self.membership.deadline_ms(), self._next_renew_ms]
        deadlines += [t.deadline_ms for t in self._tickets.values()]
        if self.assignment - self._leaders.keys():  # ask for them again
            deadlines.append(self._leaders_asked_ms + self.settings.heartbeat.retry_backoff_ms)
        return min((d for d in deadlines if d is not None), default=None)

    def on_response(self, request_id: int, response: Any) -> None:
        """The decoded reply to `Send` `request_id`."""
        now = self._clock.monotonic_ms()
        if request_id == self.membership.in_flight:
            self._after_heartbeat(self.membership.on_response(request_id, response, now))
            return
        session = self._sessions[self._pending.pop(request_id)]
        pending = session.finish(request_id)
        op = pending.op
        code = ErrorCode(response.error_code)
        if isinstance(op, CloseOp):  # whatever the answer, the session is over
            session.reset()
            self._part_done(op.ticket)
            return
        resets = SESSION_RESET_FETCH if isinstance(op, FetchOp) else SESSION_RESET_ACKNOWLEDGE
        if code in resets:
            self._session_lost(session, error_name(code))
            self._fail_op(session, pending, error_name(code))
            return
        session.advance()
        lock_ms = rq.lock_timeout_ms(response)
        if lock_ms is not None:
            self.lock_duration_ms = lock_ms
        if code != ErrorCode.none:
            log.warning(
                "share member %s: request to node %d failed: %s: %s",
                self.member_id,
                session.node_id,
                error_name(code),
                response.error_message,
            )
            self._fail_op(session, pending, error_name(code))
        elif isinstance(op, FetchOp):
            self._fetched(session, pending, op, response)
        elif isinstance(op, AckOp):
            self._acknowledged(op, rq.partition_errors(response))
        else:
            self._renewed(session, pending, rq.partition_errors(response))

    def on_failure(self, request_id: int, error: Exception) -> None:
        """`Send` `request_id` got no reply: the connection was lost or the request
        timed out (for a share session: the session is lost), or the client refused it
        before sending (`FeatureUnsupported`, `KafkaError`: nothing changes)."""
        now = self._clock.monotonic_ms()
        if request_id == self.membership.in_flight:
            self._after_heartbeat(self.membership.on_failure(request_id, error, now))
            return
        session = self._sessions[self._pending.pop(request_id)]
        pending = session.finish(request_id)
        if isinstance(pending.op, CloseOp):
            session.reset()
        elif isinstance(error, rq.FeatureUnsupported | KafkaError):  # never sent
            if isinstance(pending.op, RenewOp):
                self._renew_supported = False
                self._next_renew_ms = None
                log.warning(
                    "share member %s: node %d cannot RENEW (%s); locks will not be renewed",
                    self.member_id,
                    session.node_id,
                    error,
                )
                return
        else:
            self._session_lost(session, f"{type(error).__name__}: {error}")
        self._fail_op(session, pending, _failure_name(error))

    # ---- session requests

    def _start(self, session: ShareSession, op: SessionOp) -> Send | None:
        """The request for `op`, or None when it completes without one."""
        request_id = self._request_id()
        ids = {"group_id": self.group_id, "member_id": self.member_id}
        if isinstance(op, FetchOp):
            led_here = {tp for tp, node in self._leaders.items() if node == session.node_id}
            wanted = (self.assignment - op.skip) & led_here
            if not wanted:  # nothing led here any more: forgotten by the next fetch
                self._part_done(op.ticket)
                return None
            call = session.start_fetch(
                request_id,
                op,
                **ids,
                wanted=wanted,
                acquire_mode=(
                    self.settings.acquire_mode if op.acquire_mode is None else op.acquire_mode
                ),
                max_bytes=self.settings.fetch_max_bytes,
            )
        elif not session.is_open:  # never opened, or dropped (releasing what was held)
            if isinstance(op, AckOp):
                self._tickets[op.ticket].errors.update(dict.fromkeys(op.spans, NOT_HELD))
            if isinstance(op, AckOp | CloseOp):
                self._part_done(op.ticket)
            return None
        elif isinstance(op, CloseOp):
            call = session.start_close(request_id, op, **ids)
        elif isinstance(op, AckOp):
            call = session.start_acknowledge(
                request_id, op, **ids, spans=op.spans, ack_type=op.ack_type
            )
        elif session.held:
            call = session.start_acknowledge(
                request_id,
                op,
                **ids,
                spans=normalized(session.held),
                ack_type=AcknowledgeType.RENEW,
            )
        else:
            return None
        self._pending[request_id] = session.node_id
        epoch = rq.LEAVE_EPOCH if isinstance(op, CloseOp) else session.epoch
        assert session.in_flight is not None
        what = f"{session.in_flight.what} epoch {epoch} to node {session.node_id}"
        return Send(request_id, session.node_id, call, what)

    # ---- session replies

    def _fetched(
        self, session: ShareSession, pending: InFlight, op: FetchOp, response: Any
    ) -> None:
        session.fetched(pending)
        ticket = self._tickets[op.ticket]
        for tp, spans in rq.acquired_of(response).items():
            session.hold(tp, spans)
            ticket.records[tp] = merge(ticket.records.get(tp, ()), spans)
        for tp, code in rq.partition_errors(response).items():
            ticket.errors[tp] = error_name(code)
            if code in LEADERSHIP_MOVED:
                self._leaders.pop(tp, None)
                self._leaders_asked.discard(tp)
        renewing = self._renew_supported and self._close_ticket is None
        if session.held and renewing and self._next_renew_ms is None:
            self._next_renew_ms = self._clock.monotonic_ms() + self._renew_interval_ms()
        self._part_done(op.ticket)

    def _acknowledged(self, op: AckOp, errors: Mapping[TopicIdPartition, ErrorCode]) -> None:
        for tp, code in errors.items():
            self._tickets[op.ticket].errors[tp] = error_name(code)
        self._part_done(op.ticket)

    def _renewed(
        self,
        session: ShareSession,
        pending: InFlight,
        errors: Mapping[TopicIdPartition, ErrorCode],
    ) -> None:
        for tp, code in errors.items():
            lost = session.take(tp, pending.spans.get(tp, ()))
            log.warning(
                "share member %s: RENEW of %s on node %d failed (%s): %d records lost",
                self.member_id,
                tp,
                session.node_id,
                error_name(code),
                sum(s.size for s in lost),
            )
            self._lose(tp, lost)

    def _fail_op(self, session: ShareSession, pending: InFlight, name: str) -> None:
        op = pending.op
        if isinstance(op, FetchOp):
            for tp in pending.wanted:
                self._tickets[op.ticket].errors[tp] = name
            self._part_done(op.ticket)
        elif isinstance(op, RenewOp):
            for tp, spans in pending.spans.items():
                self._lose(tp, session.take(tp, spans))
        elif isinstance(op, AckOp):
            for tp in op.spans:
                self._tickets[op.ticket].errors[tp] = name
            self._part_done(op.ticket)
        elif isinstance(op, CloseOp):
            self._part_done(op.ticket)

    def _session_lost(self, session: ShareSession, reason: str) -> None:
        released = session.reset()
        for tp, spans in released.items():
            self._lose(tp, spans)
        failure = SessionLost(session.node_id, reason, released)
        log.error("share member %s of group %s: %s", self.member_id, self.group_id, failure)
        if self.failure is None:
            self.failure = failure
        self._disarm_renew_if_idle()

    # ---- renewals

    def _renew_interval_ms(self) -> int:
        return self.settings.lock_renew_interval_ms or max(self.lock_duration_ms // 2, 1)

    def _queue_renewals(self, now: int) -> None:
        for session in self._sessions.values():
            if session.held and session.is_open and not session.has_queued(RenewOp):
                session.queue.append(RenewOp())
        self._next_renew_ms = now + self._renew_interval_ms()
        self._disarm_renew_if_idle()

    def _disarm_renew_if_idle(self) -> None:
        if not any(s.held for s in self._sessions.values()):
            self._next_renew_ms = None

    # ---- bookkeeping

    def _after_heartbeat(self, outcome: HeartbeatOutcome) -> None:
        if self.membership.fatal is not None and self.failure is None:
            self.failure = self.membership.fatal
        if outcome.find_coordinator:
            self._effects.append(FindCoordinator(f"heartbeat of group {self.group_id!r} failed"))

    def _ask_leaders(self, now: int) -> None:
        """Ask for leaders not asked for yet at once, and again for those still unknown
        after the retry backoff."""
        missing = self.assignment - self._leaders.keys()
        if not missing:
            return
        again = now >= self._leaders_asked_ms + self.settings.heartbeat.retry_backoff_ms
        if missing - self._leaders_asked or again:
            self._leaders_asked |= missing
            self._leaders_asked_ms = now
            self._effects.append(FindLeaders(frozenset(missing)))

    def _expire_idle_acquires(self, now: int) -> None:
        for state in self._tickets.values():
            if state.deadline_ms is not None and now >= state.deadline_ms:
                state.deadline_ms = None

    def _lose(self, tp: TopicIdPartition, spans: Sequence[Span]) -> None:
        if spans:
            self._lost[tp] = merge(self._lost.get(tp, ()), spans)

    def _part_done(self, ticket: int) -> None:
        state = self._tickets[ticket]
        assert state.parts > 0, (ticket, state)
        state.parts -= 1

    def _session(self, node_id: int) -> ShareSession:
        return self._sessions.setdefault(node_id, ShareSession(node_id))

    def _ticket(self, kind: Literal["acquire", "acknowledge", "close"]) -> int:
        ticket = self._request_id()
        self._tickets[ticket] = _Ticket(kind)
        return ticket

    def _request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _check_open(self) -> None:
        if self._close_ticket is not None:
            raise ClientError(f"share member {self.member_id} of group {self.group_id!r} is closed")


def _failure_name(error: Exception) -> str:
    if isinstance(error, KafkaError):
        return error.name
    if isinstance(error, rq.FeatureUnsupported):
        return error_name(ErrorCode.unsupported_version)
    return error_name(ErrorCode.network_exception)
