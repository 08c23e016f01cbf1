"""What the share-group member (share_member.py) asks of its driver, and what it
answers: the effects `ShareMember.poll()` returns (`Send` a request to a target,
`FindLeaders`, `FindCoordinator`), the outcomes of its intents (`Acquired`,
`Acknowledged`, `Closed`), and `SessionLost`, the failure a dropped share session is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from shoal.client.calls import Call
from shoal.client.errors import ClientError
from shoal.client.ranges import SpanMap, TopicIdPartition

COORDINATOR: Final = "coordinator"
Target = int | Literal["coordinator"]
"""A broker's node id, or the group coordinator (the driver resolves it)."""


# ---- effects and outcomes


@dataclass(frozen=True, slots=True)
class Send:
    request_id: int
    target: Target
    call: Call
    what: str
    """For logs: e.g. "ShareFetch epoch 3 to node 2"."""


@dataclass(frozen=True, slots=True)
class FindLeaders:
    """The member needs the leaders of these assigned partitions (`set_leaders`)."""

    partitions: frozenset[TopicIdPartition]


@dataclass(frozen=True, slots=True)
class FindCoordinator:
    """The coordinator moved or is unreachable: look it up again before the next
    COORDINATOR send."""

    reason: str


Effect = Send | FindLeaders | FindCoordinator


@dataclass(frozen=True, slots=True)
class Acquired:
    records: SpanMap
    """Newly acquired records by partition."""
    errors: dict[TopicIdPartition, str]
    """Partitions whose fetch failed, with Kafka's error name."""


@dataclass(frozen=True, slots=True)
class Acknowledged:
    failed: dict[TopicIdPartition, str]
    """Partitions whose acknowledgement failed, with Kafka's error name (the records
    are no longer held either way: the broker redelivers what it did not take)."""


@dataclass(frozen=True, slots=True)
class Closed:
    pass


Outcome = Acquired | Acknowledged | Closed


class SessionLost(ClientError):
    """A broker dropped this member's share session: it released the records held there."""

    def __init__(self, node_id: int, reason: str, released: SpanMap) -> None:
        self.node_id = node_id
        self.released = released
        count = sum(s.size for spans in released.values() for s in spans)
        super().__init__(
            f"share session with node {node_id} lost ({reason}); the broker released the "
            f"{count} records held there (they will be redelivered)"
        )
