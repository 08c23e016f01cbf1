"""Share sessions (docs/design/share-partition.md §11): which partitions a member fetches from this
broker, and the epoch its next ShareFetch or ShareAcknowledge must carry.

A session is keyed by (group id, member id) and belongs to the connection that opened
it. The cache is a plain synchronous object; the server calls it first for every
share request (order: session update, acknowledgements, fetch) and performs what the
returned `SessionStep` implies.

Epochs, per request:

- ShareFetch at 0: acknowledgements -> INVALID_REQUEST; else any session of the key
  is dropped and a new one opened from `Topics` (beyond
  `group.share.max.share.sessions` -> SHARE_SESSION_LIMIT_REACHED), expecting 1.
- ShareFetch at N > 0: no session -> SHARE_SESSION_NOT_FOUND; N != expected ->
  INVALID_SHARE_SESSION_EPOCH; else listed partitions are added (acknowledgement-only
  ones too), forgotten ones removed, and N + 1 expected.
- ShareFetch at -1: no session -> SHARE_SESSION_NOT_FOUND; else a final step.
- ShareAcknowledge: at 0 INVALID_SHARE_SESSION_EPOCH; otherwise the same checks as
  ShareFetch, never changing the partitions.

The expected epoch wraps from INT32_MAX to 1 (never back to 0). A failed check changes
nothing. A final step leaves the session in the cache: the caller applies the
request's acknowledgements first and then calls `close`, which removes it; releasing
the member's records is the caller's job, as is dropping a group's share-partitions
once its last session is gone (`group_session_count`). Replacing a session at epoch 0
releases nothing (as in Kafka: the member's records stay locked until they expire).

Response listing (§11.3, `response_partitions`): an epoch-0 response lists every
session partition; a later one lists a partition only when it has records or an
error, or was added since the last response that listed it; partitions whose
acknowledgements the request carried are appended; a final response lists only those.

Invariants: at most one session per key; `connection_id` indexes exactly the cached
sessions; the cache never holds more sessions than the limit in force when each was
opened; an expected epoch is always >= 1.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from shoal.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1


class TopicIdPartition(NamedTuple):
    topic_id: uuid.UUID
    partition: int


SessionKey = tuple[str, str]
"""(group id, member id)."""


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: INT32_MAX wraps to 1."""
    assert epoch >= INITIAL_EPOCH, epoch
    return 1 if epoch >= INT32_MAX else epoch + 1


@dataclass(eq=False, slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection_id: int
    """The connection that opened the session; its closing ends the session."""
    epoch: int
    """The epoch the next request must carry."""
    partitions: dict[TopicIdPartition, bool] = field(default_factory=dict)
    """The session's partitions in the order they were added; True = added since the
    last response that listed it (a later response must list it)."""

    @property
    def key(self) -> SessionKey:
        return (self.group_id, self.member_id)


@dataclass(frozen=True, slots=True)
class SessionStep:
    """What the session check decided for one request."""

    error: ErrorCode | None = None
    """Top-level error code; nothing else in the request is processed."""
    session: ShareSession | None = None
    full: bool = False
    """Epoch 0: a new session; the response lists every partition."""
    final: bool = False
    """Epoch -1: apply the acknowledgements, fetch nothing, then `close`."""
    dropped: ShareSession | None = None
    """A session of the same key that an epoch-0 request replaced."""


class ShareSessionCache:
    """Every share session of this broker. See the module docstring."""

    def __init__(self) -> None:
        self._sessions: dict[SessionKey, ShareSession] = {}
        self._by_connection: dict[int, set[SessionKey]] = {}
        self._per_group: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def group_session_count(self, group_id: str) -> int:
        return self._per_group.get(group_id, 0)

    # ---- requests

    def share_fetch(
        self,
        *,
        group_id: str,
        member_id: str,
        epoch: int,
        connection_id: int,
        partitions: Iterable[TopicIdPartition] = (),
        forgotten: Iterable[TopicIdPartition] = (),
        has_acknowledgements: bool = False,
        max_sessions: int | None = None,
    ) -> SessionStep:
        """The session step of a ShareFetch. `partitions` are those listed in `Topics`
        (acknowledgement-only ones included), duplicates merged by the caller or here.
        `max_sessions`: `group.share.max.share.sessions`, the limit an epoch-0 request
        opens a session under (required then; the caller reads it at each open)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                return SessionStep(error=ErrorCode.invalid_request)
            dropped = self._sessions.get(key)
            if dropped is not None:
                self._remove(dropped)
            assert max_sessions is not None, "an epoch-0 ShareFetch needs the session limit"
            if len(self._sessions) >= max_sessions:
                return SessionStep(error=ErrorCode.share_session_limit_reached, dropped=dropped)
            session = ShareSession(
                group_id,
                member_id,
                connection_id,
                next_epoch(INITIAL_EPOCH),
                dict.fromkeys(partitions, False),
            )
            self._add(session)
            return SessionStep(session=session, full=True, dropped=dropped)
        current = self._sessions.get(key)
        if current is None:
            return SessionStep(error=ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            return SessionStep(session=current, final=True)
        if epoch != current.epoch:
            return SessionStep(error=ErrorCode.invalid_share_session_epoch)
        session = current
        for tp in partitions:
            session.partitions.setdefault(tp, True)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.epoch = next_epoch(epoch)
        return SessionStep(session=session)

    def share_acknowledge(self, *, group_id: str, member_id: str, epoch: int) -> SessionStep:
        """The session step of a ShareAcknowledge: it never changes the partitions."""
        if epoch == INITIAL_EPOCH:
            return SessionStep(error=ErrorCode.invalid_share_session_epoch)
        session = self._sessions.get((group_id, member_id))
        if session is None:
            return SessionStep(error=ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            return SessionStep(session=session, final=True)
        if epoch != session.epoch:
            return SessionStep(error=ErrorCode.invalid_share_session_epoch)
        session.epoch = next_epoch(epoch)
        return SessionStep(session=session)

    # ---- ending sessions

    def close(self, session: ShareSession) -> bool:
        """Remove `session` (a final request); False if it was already gone or replaced."""
        if self._sessions.get(session.key) is not session:
            return False
        self._remove(session)
        return True

    def connection_closed(self, connection_id: int) -> list[ShareSession]:
        """Remove and return every session the connection opened."""
        keys = self._by_connection.pop(connection_id, set())
        removed = []
        for key in sorted(keys):
            session = self._sessions.get(key)
            if session is not None:
                self._remove(session)
                removed.append(session)
        return removed

    # ---- responses

    @staticmethod
    def response_partitions(
        session: ShareSession,
        *,
        full: bool,
        final: bool = False,
        notable: Collection[TopicIdPartition] = (),
        acknowledged: Iterable[TopicIdPartition] = (),
    ) -> list[TopicIdPartition]:
        """The partitions a ShareFetch response lists, in order (§11.3): `notable` =
        partitions with records or an error, `acknowledged` = partitions whose
        acknowledgements the request carried. Clears the "added" marks it lists."""
        listed: list[TopicIdPartition] = []
        if not final:
            marked: list[TopicIdPartition] = []
            for tp, added in session.partitions.items():
                if added:
                    listed.append(tp)
                    marked.append(tp)
                elif full or (notable and tp in notable):
                    listed.append(tp)
            for tp in marked:
                session.partitions[tp] = False
        if acknowledged:
            seen = set(listed)
            for tp in acknowledged:
                if tp not in seen:
                    seen.add(tp)
                    listed.append(tp)
        return listed

    # ---- bookkeeping

    def _add(self, session: ShareSession) -> None:
        key = session.key
        assert key not in self._sessions
        self._sessions[key] = session
        self._by_connection.setdefault(session.connection_id, set()).add(key)
        self._per_group[session.group_id] = self._per_group.get(session.group_id, 0) + 1

    def _remove(self, session: ShareSession) -> None:
        key = session.key
        assert self._sessions.get(key) is session
        del self._sessions[key]
        keys = self._by_connection.get(session.connection_id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_connection[session.connection_id]
        count = self._per_group[session.group_id] - 1
        if count:
            self._per_group[session.group_id] = count
        else:
            del self._per_group[session.group_id]
