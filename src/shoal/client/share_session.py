"""One share session: the share-group member's session with one broker (the leader of
some of its partitions), for `ShareMember` (share_member.py).

A session owns its epoch, the partitions the broker has in it, the records acquired
through it and not yet acknowledged (`held`), and the FIFO of operations waiting to go
out on it. Invariants (docs/design/wire.md §6.10-12):

- at most one request in flight, so epochs go out in order;
- the first request is a ShareFetch at epoch 0 that opens the session; every reply
  (whatever its error) moves the epoch to the next one, INT32_MAX wrapping to 1;
- a session that the broker dropped (connection lost, SHARE_SESSION_NOT_FOUND,
  INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED) or that the member closed
  (epoch -1) is back at epoch 0 with no partitions and nothing held: the broker has
  released every record held there;
- `held` per partition: spans sorted and non-overlapping.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from kio.schema.errors import ErrorCode

from shoal.client import share_requests as rq
from shoal.client.calls import Call
from shoal.client.ranges import Span, SpanMap, TopicIdPartition, merge, normalized, split_by
from shoal.protocol.share import AcknowledgeType, AcquireMode

INT32_MAX: Final = 2**31 - 1
OPEN_EPOCH: Final = 0
SESSION_RESET_FETCH: Final = frozenset(
    {
        ErrorCode.share_session_not_found,
        ErrorCode.invalid_share_session_epoch,
        ErrorCode.share_session_limit_reached,
    }
)
"""Top-level ShareFetch errors after which the broker has no session for the member."""
SESSION_RESET_ACKNOWLEDGE: Final = frozenset(
    {ErrorCode.share_session_not_found, ErrorCode.invalid_share_session_epoch}
)
"""Top-level ShareAcknowledge errors after which the broker has no session."""


def next_session_epoch(epoch: int) -> int:
    """The epoch after a reply to a request sent at `epoch`."""
    assert epoch >= 0, epoch
    return 1 if epoch >= INT32_MAX else epoch + 1


@dataclass(slots=True)
class FetchOp:
    ticket: int
    records_max: int
    wait_ms: int
    skip: frozenset[TopicIdPartition]
    acquire_mode: AcquireMode | None = None
    """None: the member's `MemberSettings.acquire_mode`."""


@dataclass(slots=True)
class AckOp:
    ticket: int
    spans: SpanMap
    ack_type: int


@dataclass(slots=True)
class RenewOp:
    pass


@dataclass(slots=True)
class CloseOp:
    ticket: int


SessionOp = FetchOp | AckOp | RenewOp | CloseOp


@dataclass(frozen=True, slots=True)
class InFlight:
    """The request out on a session, and what its reply settles."""

    request_id: int
    op: SessionOp
    wanted: tuple[TopicIdPartition, ...] = ()
    """The partitions a ShareFetch fetches from."""
    listed: tuple[TopicIdPartition, ...] = ()
    forgotten: tuple[TopicIdPartition, ...] = ()
    spans: SpanMap = field(default_factory=dict)
    """The records an acknowledgement or RENEW covers."""

    @property
    def what(self) -> str:
        """For logs."""
        op = self.op
        if isinstance(op, FetchOp):
            return "ShareFetch"
        if isinstance(op, AckOp):
            return AcknowledgeType(op.ack_type).name
        return "RENEW" if isinstance(op, RenewOp) else "close"


@dataclass(slots=True)
class ShareSession:
    node_id: int
    epoch: int = OPEN_EPOCH
    partitions: set[TopicIdPartition] = field(default_factory=set)
    held: dict[TopicIdPartition, list[Span]] = field(default_factory=dict)
    queue: deque[SessionOp] = field(default_factory=deque)
    in_flight: InFlight | None = None

    @property
    def is_open(self) -> bool:
        return self.epoch != OPEN_EPOCH

    @property
    def busy(self) -> bool:
        return self.in_flight is not None or bool(self.queue)

    def advance(self) -> None:
        self.epoch = next_session_epoch(self.epoch)

    def reset(self) -> SpanMap:
        """The session is gone: back to epoch 0; returns the records it held (the broker
        released them)."""
        released = normalized(self.held)
        self.epoch = OPEN_EPOCH
        self.partitions.clear()
        self.held.clear()
        return released

    def hold(self, tp: TopicIdPartition, spans: Iterable[Span]) -> None:
        self.held[tp] = merge(self.held.get(tp, ()), spans)

    def take(self, tp: TopicIdPartition, spans: Iterable[Span]) -> list[Span]:
        """Stop holding `spans` of `tp` (sorted, non-overlapping); returns the held
        records among them."""
        inside, outside = split_by(self.held.get(tp, ()), sorted(spans))
        if outside:
            self.held[tp] = outside
        else:
            self.held.pop(tp, None)
        return inside

    def has_queued(self, kind: type[SessionOp]) -> bool:
        return any(isinstance(op, kind) for op in self.queue)

    # ---- requests (one at a time: each sets `in_flight`, `finish` clears it)

    def start_fetch(
        self,
        request_id: int,
        op: FetchOp,
        *,
        group_id: str,
        member_id: str,
        wanted: Iterable[TopicIdPartition],
        acquire_mode: AcquireMode,
        max_bytes: int,
    ) -> Call:
        """A ShareFetch from `wanted`: at epoch 0 listing them all, else incremental
        (new partitions listed, the others forgotten; an empty list fetches the whole
        session)."""
        wanted = set(wanted)
        if self.is_open:
            listed, forgotten = sorted(wanted - self.partitions), sorted(self.partitions - wanted)
        else:
            listed, forgotten = sorted(wanted), []
        self._start(
            InFlight(request_id, op, tuple(sorted(wanted)), tuple(listed), tuple(forgotten))
        )
        return rq.share_fetch(
            group_id=group_id,
            member_id=member_id,
            session_epoch=self.epoch,
            partitions=listed,
            forgotten=forgotten,
            max_wait_ms=op.wait_ms,
            max_bytes=max_bytes,
            max_records=op.records_max,
            acquire_mode=acquire_mode,
        )

    def start_acknowledge(
        self,
        request_id: int,
        op: AckOp | RenewOp,
        *,
        group_id: str,
        member_id: str,
        spans: SpanMap,
        ack_type: int,
    ) -> Call:
        assert self.is_open, self.node_id
        self._start(InFlight(request_id, op, spans=spans))
        return rq.share_acknowledge(
            group_id=group_id,
            member_id=member_id,
            session_epoch=self.epoch,
            acks={tp: rq.ack_batches(s, ack_type) for tp, s in spans.items()},
        )

    def start_close(self, request_id: int, op: CloseOp, *, group_id: str, member_id: str) -> Call:
        assert self.is_open, self.node_id
        self._start(InFlight(request_id, op))
        return rq.share_acknowledge(
            group_id=group_id, member_id=member_id, session_epoch=rq.LEAVE_EPOCH
        )

    def finish(self, request_id: int) -> InFlight:
        """The reply (or failure) of the request in flight came."""
        request = self.in_flight
        assert request is not None and request.request_id == request_id, (request, request_id)
        self.in_flight = None
        return request

    def fetched(self, request: InFlight) -> None:
        """A ShareFetch succeeded: the broker's session has its partitions now."""
        self.partitions.update(request.listed)
        self.partitions.difference_update(request.forgotten)

    def _start(self, request: InFlight) -> None:
        assert self.in_flight is None, (self.node_id, self.in_flight)
        self.in_flight = request
