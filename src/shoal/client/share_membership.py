"""The ShareGroupHeartbeat side of a share-group member, for `ShareMember`
(share_member.py): member epoch, heartbeat schedule, assignment, rejoin and leave.

Rules (docs/design/wire.md §3, §6.16-18):

- join at epoch 0 with the subscription, then heartbeat at the epoch the coordinator
  gave with a null subscription (unchanged), every HeartbeatIntervalMs (sooner while
  nothing is assigned yet, so a new member gets its partitions quickly);
- adopt every non-null assignment; a null one means unchanged;
- FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: the assignment is lost; rejoin at once at
  epoch 0 with the same member id;
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a failed connection: ask the driver to
  find the coordinator again, retry after the backoff; other retriable errors: retry
  after the backoff; any other error is fatal (no more heartbeats, no leave);
- leave: one heartbeat at epoch -1 (none if the member never joined or failed).

At most one heartbeat is in flight. Time is the caller's `now_ms`.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from shoal.client import share_requests
from shoal.client.calls import Call
from shoal.client.errors import COORDINATOR_MOVED, RETRIABLE, ErrorCode, KafkaError, error_name
from shoal.client.ranges import TopicIdPartition

log = logging.getLogger(__name__)

REJOIN_CODES: Final = frozenset({ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id})


@dataclass(frozen=True, slots=True)
class HeartbeatSettings:
    retry_backoff_ms: int = 500
    """Pause before a heartbeat is retried after a retriable error or a lost connection."""
    unassigned_interval_ms: int = 200
    """Heartbeat interval while the member has no partition yet."""
    interval_min_ms: int = 100
    """Floor of the interval the coordinator asks for (never heartbeat in a tight loop)."""

    def __post_init__(self) -> None:
        assert self.retry_backoff_ms > 0 and self.unassigned_interval_ms > 0, self
        assert self.interval_min_ms > 0, self


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    assignment_changed: bool = False
    find_coordinator: bool = False


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


class Membership:
    """See the module docstring."""

    def __init__(
        self,
        *,
        group_id: str,
        member_id: str,
        topics: Sequence[str],
        settings: HeartbeatSettings,
        now_ms: int,
    ) -> None:
        assert topics, "a share-group member subscribes to at least one topic"
        self.group_id = group_id
        self.member_id = member_id
        self.topics = tuple(topics)
        self.settings = settings
        self.member_epoch = 0
        self.interval_ms = settings.unassigned_interval_ms
        self.assignment: frozenset[TopicIdPartition] = frozenset()
        self.next_ms: int | None = now_ms
        """When the next heartbeat is due; None: no more heartbeats."""
        self.in_flight: int | None = None
        self.fatal: KafkaError | None = None
        self.leaving = False
        self._leave_sent = False

    # ---- sending

    def due(self, now_ms: int) -> bool:
        return self.in_flight is None and self.next_ms is not None and now_ms >= self.next_ms

    def deadline_ms(self) -> int | None:
        return None if self.in_flight is not None else self.next_ms

    @property
    def next_epoch(self) -> int:
        """The MemberEpoch the next heartbeat carries."""
        return share_requests.LEAVE_EPOCH if self.leaving else self.member_epoch

    def send(self, request_id: int) -> Call:
        """The heartbeat that is due (a join at epoch 0, a leave when leaving)."""
        assert self.in_flight is None and self.next_ms is not None
        self.in_flight = request_id
        self.next_ms = None
        self._leave_sent = self.leaving
        epoch = self.next_epoch
        subscribed = self.topics if epoch == 0 else None
        return share_requests.heartbeat(self.group_id, self.member_id, epoch, subscribed)

    def leave(self, now_ms: int) -> None:
        """Send a leave heartbeat as soon as none is in flight; none at all if the member
        is not in the group (never joined, fenced, or failed)."""
        self.leaving = True
        in_group = self.member_epoch > 0 and self.fatal is None
        self.next_ms = now_ms if in_group and self.in_flight is None else None

    @property
    def done(self) -> bool:
        """Left the group (or was not in it) with nothing in flight."""
        return self.leaving and self.in_flight is None and self.next_ms is None

    # ---- replies

    def on_response(self, request_id: int, response: Any, now_ms: int) -> HeartbeatOutcome:
        assert request_id == self.in_flight, (request_id, self.in_flight)
        self.in_flight = None
        code = ErrorCode(response.error_code)
        if self._leave_sent:
            return self._left(code)
        outcome = self._on_code(code, response, now_ms)
        if self.leaving:
            self.leave(now_ms)
        return outcome

    def on_failure(self, request_id: int, error: Exception, now_ms: int) -> HeartbeatOutcome:
        """The heartbeat got no reply (connection lost, timeout, refused locally)."""
        assert request_id == self.in_flight, (request_id, self.in_flight)
        self.in_flight = None
        if self._leave_sent:
            log.warning("share member %s: leave heartbeat failed: %s", self.member_id, error)
            return self._left(None)
        if self.leaving:
            self.leave(now_ms)
            return HeartbeatOutcome()
        log.warning(
            "share member %s of group %s: heartbeat failed (%s); retrying in %d ms",
            self.member_id,
            self.group_id,
            error,
            self.settings.retry_backoff_ms,
        )
        self.next_ms = now_ms + self.settings.retry_backoff_ms
        return HeartbeatOutcome(find_coordinator=True)

    def _on_code(self, code: ErrorCode, response: Any, now_ms: int) -> HeartbeatOutcome:
        if code == ErrorCode.none:
            return self._adopt(response, now_ms)
        if code in REJOIN_CODES:
            log.warning(
                "share member %s of group %s at epoch %d: %s; rejoining at epoch 0",
                self.member_id,
                self.group_id,
                self.member_epoch,
                error_name(code),
            )
            self.member_epoch = 0
            changed = bool(self.assignment)
            self.assignment = frozenset()
            self.next_ms = now_ms
            return HeartbeatOutcome(assignment_changed=changed)
        if code in RETRIABLE:
            log.info(
                "share member %s of group %s: heartbeat %s; retrying in %d ms",
                self.member_id,
                self.group_id,
                error_name(code),
                self.settings.retry_backoff_ms,
            )
            self.next_ms = now_ms + self.settings.retry_backoff_ms
            return HeartbeatOutcome(find_coordinator=code in COORDINATOR_MOVED)
        self.fatal = KafkaError(
            code,
            response.error_message,
            context=f"ShareGroupHeartbeat of member {self.member_id} of group {self.group_id!r}",
        )
        log.error("share member %s: %s; no more heartbeats", self.member_id, self.fatal)
        self.next_ms = None
        return HeartbeatOutcome()

    def _left(self, code: ErrorCode | None) -> HeartbeatOutcome:
        if code not in (None, ErrorCode.none):
            log.warning("share member %s: leave answered %s", self.member_id, error_name(code))
        self.member_epoch = share_requests.LEAVE_EPOCH
        changed = bool(self.assignment)
        self.assignment = frozenset()
        return HeartbeatOutcome(assignment_changed=changed)

    def _adopt(self, response: Any, now_ms: int) -> HeartbeatOutcome:
        self.member_epoch = int(response.member_epoch)
        self.interval_ms = max(_ms(response.heartbeat_interval), self.settings.interval_min_ms)
        changed = False
        if response.assignment is not None:
            assigned = frozenset(
                TopicIdPartition(tp.topic_id, int(p))
                for tp in response.assignment.topic_partitions
                for p in tp.partitions
            )
            changed = assigned != self.assignment
            self.assignment = assigned
        interval = self.interval_ms
        if not self.assignment:
            interval = min(interval, self.settings.unassigned_interval_ms)
        self.next_ms = now_ms + interval
        return HeartbeatOutcome(assignment_changed=changed)
