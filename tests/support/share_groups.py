"""Share-group wire helpers: a member that tracks its epoch, and readers of
ShareGroupHeartbeat / ShareGroupDescribe answers (the requests are the client's
`share_requests.heartbeat` and `requests.share_group_describe`).

`Member` plays the client side of ShareGroupHeartbeat the way librdkafka does: join
at epoch 0 with a subscription, then heartbeat at the epoch it was given with a null
subscription, adopting every non-null assignment.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.client.requests import share_group_describe
from shoal.client.share_requests import LEAVE_EPOCH, heartbeat
from tests.support.wire import send

Assignment = dict[uuid.UUID, tuple[int, ...]]


def new_member_id() -> str:
    """A member id as librdkafka makes one: a 22-character base64 UUID (standard
    alphabet, so `+` and `/` may occur), unpadded."""
    return base64.b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def assignment_of(response: Any) -> Assignment | None:
    """The heartbeat response's assignment as {topic id: partitions}, None if null."""
    if response.assignment is None:
        return None
    return {tp.topic_id: tuple(tp.partitions) for tp in response.assignment.topic_partitions}


def described_assignment(member: Any) -> dict[str, tuple[int, ...]]:
    """A described member's assignment as {topic name: partitions}."""
    return {tp.topic_name: tuple(tp.partitions) for tp in member.assignment.topic_partitions}


async def describe_one(conn: Connection, group_id: str) -> Any:
    response = await send(conn, share_group_describe([group_id]))
    (group,) = response.groups
    return group


class Member:
    """One share-group member's client-side state."""

    def __init__(self, group_id: str, member_id: str | None = None) -> None:
        self.group_id = group_id
        self.member_id = member_id or new_member_id()
        self.epoch = 0
        self.assignment: Assignment = {}

    async def send(
        self,
        conn: Connection,
        epoch: int,
        subscribed: Sequence[str] | None = None,
        *,
        rack_id: str | None = None,
    ) -> Any:
        """One heartbeat at `epoch`; adopts the epoch and assignment on success."""
        response = await send(
            conn, heartbeat(self.group_id, self.member_id, epoch, subscribed, rack_id=rack_id)
        )
        if response.error_code == ErrorCode.none:
            assert response.member_id == self.member_id, response
            self.epoch = int(response.member_epoch)
            assigned = assignment_of(response)
            if assigned is not None:
                self.assignment = assigned
        return response

    async def join(self, conn: Connection, topics: Sequence[str], **kw: Any) -> Any:
        response = await self.send(conn, 0, topics, **kw)
        assert response.error_code == ErrorCode.none, response
        return response

    async def beat(self, conn: Connection) -> Any:
        response = await self.send(conn, self.epoch)
        assert response.error_code == ErrorCode.none, response
        return response

    async def leave(self, conn: Connection) -> Any:
        response = await send(conn, heartbeat(self.group_id, self.member_id, LEAVE_EPOCH, None))
        assert response.error_code == ErrorCode.none, response
        assert response.member_epoch == LEAVE_EPOCH, response
        self.epoch = LEAVE_EPOCH
        self.assignment = {}
        return response

    def partitions(self, topic_id: uuid.UUID) -> tuple[int, ...]:
        return self.assignment.get(topic_id, ())


async def settle(conn: Connection, members: Iterable[Member], *, rounds: int = 10) -> None:
    """Heartbeat every member at its epoch until no epoch moves."""
    members = list(members)
    for _ in range(rounds):
        before = [m.epoch for m in members]
        for member in members:
            await member.beat(conn)
        if [m.epoch for m in members] == before and len(set(before)) == 1:
            return
    raise AssertionError(f"group did not settle: {[(m.member_id, m.epoch) for m in members]}")
