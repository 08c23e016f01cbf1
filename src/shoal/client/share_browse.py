"""Browsing a share group's in-flight records with ShareGroupBrowse (30000), Shoal's
extension API (protocol/extensions/): the records of each share-partition's in-flight
window with their state, delivery count, lock holder, lock expiry and redelivery due
time (delayed redelivery), read from the
share-partition leader's memory without acquiring anything; and what Shoal's key-ordered
and scheduled delivery hold back (`BrowsedHolds`, `BrowsedEntry.deliver_at_ms` and
`key_blocked`: tagged fields, read as "nothing held" from a broker without them).

`browse` sends one request per partition leader (`Client.to_leaders`, which follows
moved leaders), then returns the partitions in order. A top-level error (authorization,
unknown topic) raises `KafkaError`; so does a partition-level one, naming the
partition. A broker that is not Shoal does not advertise the API, and the call fails
with UNSUPPORTED_VERSION naming it ("ShareGroupBrowse (API 30000)").

States are carried as names as well as codes, so a state the broker adds reads here
without a change (`BrowsedEntry.state`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shoal.client.calls import Call
from shoal.client.errors import check
from shoal.client.metadata import TopicPartition
from shoal.client.sync import Client
from shoal.protocol.extensions import SHARE_GROUP_BROWSE
from shoal.protocol.schema import request_schema


@dataclass(frozen=True, slots=True)
class BrowsedEntry:
    first_offset: int
    last_offset: int
    state: str
    """The state's name as the broker spells it ("ACQUIRED", ...)."""
    delivery_count: int
    holder: str | None
    """The member id holding the acquisition lock, or None."""
    lock_expires_in_ms: int | None
    pending_write: bool
    redelivery_due_in_ms: int | None = None
    """Time left before a record held back by delayed redelivery may be acquired
    again; None when it is not held back (or the broker predates the field)."""
    deliver_at_ms: int | None = None
    """When a record waiting for its `shoal.deliver.at` comes due (epoch ms of the
    broker's clock); None when it does not wait."""
    key_blocked: bool = False
    """Held back because an earlier record of its key is still in flight."""


@dataclass(frozen=True, slots=True)
class BrowsedHolds:
    """What key-ordered and scheduled delivery hold back in one share-partition."""

    blocked_keys: int = 0
    blocked_records: int = 0
    """AVAILABLE records held back behind an earlier record of their key."""
    top_blocked_keys: tuple[tuple[bytes, int], ...] = ()
    """(key, records held back), most first."""
    scheduled_records: int = 0
    """Records waiting for their `shoal.deliver.at` time."""
    next_due_ms: int | None = None
    """The earliest of those times (epoch ms), None when none wait."""
    malformed_deliver_at: int = 0
    """Records delivered at once because their `shoal.deliver.at` did not parse."""

    @property
    def anything(self) -> bool:
        """Whether anything is held back (or a malformed header was seen)."""
        return bool(self.blocked_records or self.scheduled_records or self.malformed_deliver_at)


@dataclass(frozen=True, slots=True)
class BrowsedPartition:
    topic: str
    partition: int
    loaded: bool
    """False when the share-partition is not in its leader's memory: nothing of it is
    acquired, and the offsets below are None."""
    start_offset: int | None
    end_offset: int | None
    truncated: bool
    entries: tuple[BrowsedEntry, ...]
    holds: BrowsedHolds = BrowsedHolds()


def share_group_browse(
    group_id: str, topic: str, partitions: Sequence[int], *, max_entries: int
) -> Call:
    """ShareGroupBrowse (30000) v0 of `partitions` of one topic."""
    return Call(
        SHARE_GROUP_BROWSE,
        0,
        0,
        lambda version: request_schema(SHARE_GROUP_BROWSE, version).make(
            "ShareGroupBrowseRequest",
            group_id=group_id,
            topic_name=topic,
            partitions=tuple(partitions),
            max_entries=max_entries,
        ),
    )


def browse(
    client: Client, group_id: str, topic: str, partitions: Sequence[int], *, max_entries: int
) -> list[BrowsedPartition]:
    """The in-flight window of each of `partitions`, in partition order."""
    answered = client.to_leaders(
        [(topic, p) for p in partitions],
        lambda tps: share_group_browse(
            group_id, topic, [p for _, p in tps], max_entries=max_entries
        ),
        lambda response: _errors(topic, response),
    )
    out = []
    for tp in sorted(answered):
        response = answered[tp]
        check(
            response.error_code,
            response.error_message,
            context=f"browsing {topic} in share group '{group_id}'",
        )
        (p,) = (p for p in response.partitions if int(p.partition_index) == tp[1])
        check(p.error_code, p.error_message, context=f"browsing {topic}-{tp[1]} in '{group_id}'")
        out.append(_partition(topic, p))
    return out


def _errors(topic: str, response: Any) -> Mapping[TopicPartition, int]:
    """Partition errors of a response (a leadership error makes `to_leaders` resend)."""
    return {(topic, int(p.partition_index)): int(p.error_code) for p in response.partitions}


def _partition(topic: str, p: Any) -> BrowsedPartition:
    return BrowsedPartition(
        topic=topic,
        partition=int(p.partition_index),
        loaded=bool(p.loaded),
        start_offset=int(p.start_offset) if p.loaded else None,
        end_offset=int(p.end_offset) if p.loaded else None,
        truncated=bool(p.truncated),
        entries=tuple(
            BrowsedEntry(
                first_offset=int(e.first_offset),
                last_offset=int(e.last_offset),
                state=str(e.state_name),
                delivery_count=int(e.delivery_count),
                holder=None if e.member_id is None else str(e.member_id),
                lock_expires_in_ms=None if e.lock_expires_in_ms < 0 else int(e.lock_expires_in_ms),
                pending_write=bool(e.pending_write),
                redelivery_due_in_ms=None
                if e.redelivery_due_in_ms < 0
                else int(e.redelivery_due_in_ms),
                deliver_at_ms=None if e.deliver_at_ms < 0 else int(e.deliver_at_ms),
                key_blocked=bool(e.key_blocked),
            )
            for e in p.entries
        ),
        holds=BrowsedHolds(
            blocked_keys=int(p.blocked_keys),
            blocked_records=int(p.blocked_records),
            top_blocked_keys=tuple((bytes(k.key), int(k.held_records)) for k in p.top_blocked_keys),
            scheduled_records=int(p.scheduled_records),
            next_due_ms=None if p.next_due_ms < 0 else int(p.next_due_ms),
            malformed_deliver_at=int(p.malformed_deliver_at),
        ),
    )
