"""The share-group requests, built in one place: ShareGroupHeartbeat (76, v1),
ShareFetch (78, v1-2) and ShareAcknowledge (79, v1-2), as `Call`s whose `build(version)`
makes the kio request of the version the client picked, plus readers of the responses.

Version rules (docs/design/wire.md §3):

- ShareAcquireMode and IsRenewAck exist from v2 on. `Schema.make` drops them at v1, so
  a v1 ShareFetch acquires in batch-optimized mode (MaxRecords may then be exceeded to
  whole batches) whatever mode was asked.
- A RENEW (acknowledge type 4, which needs IsRenewAck) cannot be said at v1: such a
  `Call` has min_version 2, and `build(1)` raises `FeatureUnsupported`.

Partitions are `TopicIdPartition`s; acknowledgements are
`{partition: [AckBatch(first, last, types), ...]}` with one type for the whole range or
one per offset. Builders keep the caller's order and never validate what the broker
validates, so tests can send hostile requests through them too.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from kio.schema.errors import ErrorCode

from shoal.client.calls import Call
from shoal.client.errors import ClientError
from shoal.client.ranges import Span, TopicIdPartition
from shoal.protocol.schema import request_schema
from shoal.protocol.share import AcknowledgeType, AcquireMode

SHARE_GROUP_HEARTBEAT: Final = 76
SHARE_FETCH: Final = 78
SHARE_ACKNOWLEDGE: Final = 79
HEARTBEAT_VERSIONS: Final = (1, 1)
SHARE_FETCH_VERSIONS: Final = (1, 2)
SHARE_ACKNOWLEDGE_VERSIONS: Final = (1, 2)
RENEW_MIN_VERSION: Final = 2
"""The first ShareFetch / ShareAcknowledge version with IsRenewAck (and ShareAcquireMode)."""
FETCH_MAX_BYTES_DEFAULT: Final = 52_428_800
"""MaxBytes of a ShareFetch unless told otherwise (librdkafka's fetch.max.bytes)."""
LEAVE_EPOCH: Final = -1
"""MemberEpoch of a leave heartbeat, and ShareSessionEpoch of a session close."""


class AckBatch(NamedTuple):
    first: int
    last: int
    types: tuple[int, ...]
    """One type for first..last, or one per offset."""


IdPartition = tuple[uuid.UUID, int]
"""A `TopicIdPartition` or any (topic id, partition) pair."""
Acks = Mapping[TopicIdPartition, Sequence[AckBatch]]


class FeatureUnsupported(ClientError):
    """The version the client chose lacks a field this request needs; nothing was sent."""


def ack_batches(spans: Iterable[Span], ack_type: int) -> tuple[AckBatch, ...]:
    """One batch of `ack_type` per span."""
    return tuple(AckBatch(s.first, s.last, (int(ack_type),)) for s in spans)


def _has_renew(acks: Acks) -> bool:
    return any(
        AcknowledgeType.RENEW in types for batches in acks.values() for _f, _l, types in batches
    )


def _check_renew(api: str, version: int, renew: bool) -> None:
    if renew and version < RENEW_MIN_VERSION:
        raise FeatureUnsupported(
            f"{api} v{version} cannot RENEW acquisition locks (IsRenewAck needs "
            f"v{RENEW_MIN_VERSION}; the broker does not serve it)"
        )


# ---- ShareGroupHeartbeat


def heartbeat(
    group_id: str,
    member_id: str,
    member_epoch: int,
    subscribed: Sequence[str] | None,
    *,
    rack_id: str | None = None,
) -> Call:
    """Join with `subscribed` at epoch 0, heartbeat with None (unchanged) at the epoch
    given, leave at epoch -1."""

    def build(version: int) -> Any:
        return request_schema(SHARE_GROUP_HEARTBEAT, version).make(
            "ShareGroupHeartbeatRequest",
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            rack_id=rack_id,
            subscribed_topic_names=None if subscribed is None else tuple(subscribed),
        )

    return Call(SHARE_GROUP_HEARTBEAT, *HEARTBEAT_VERSIONS, build)


# ---- ShareFetch


def share_fetch(
    *,
    group_id: str | None,
    member_id: str | None,
    session_epoch: int,
    partitions: Iterable[IdPartition] = (),
    acks: Acks | None = None,
    forgotten: Iterable[IdPartition] = (),
    max_wait_ms: int,
    min_bytes: int = 1,
    max_bytes: int = FETCH_MAX_BYTES_DEFAULT,
    max_records: int,
    batch_size: int | None = None,
    acquire_mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
    is_renew_ack: bool | None = None,
    split_topics: bool = False,
) -> Call:
    """A ShareFetch listing `partitions` (then the partitions carrying `acks`), one
    `Topics` entry per topic id, or with `split_topics` separate entries for listed
    partitions and partitions with acks (as librdkafka writes them). `batch_size`
    defaults to `max_records`; `is_renew_ack` defaults to whether an ack is a RENEW."""
    acks = acks or {}
    renew = _has_renew(acks) if is_renew_ack is None else is_renew_ack
    listed = list(dict.fromkeys(partitions))
    forgotten = list(forgotten)

    def build(version: int) -> Any:
        _check_renew("ShareFetch", version, renew)
        schema = request_schema(SHARE_FETCH, version)

        def topics(items: Iterable[IdPartition], with_acks: bool) -> list[Any]:
            grouped: dict[uuid.UUID, list[Any]] = {}
            for topic_id, index in items:
                batches = acks.get(TopicIdPartition(topic_id, index), ()) if with_acks else ()
                grouped.setdefault(topic_id, []).append(
                    schema.make(
                        "FetchPartition",
                        partition_index=index,
                        acknowledgement_batches=_batches(schema, batches),
                    )
                )
            return [
                schema.make("FetchTopic", topic_id=topic_id, partitions=tuple(ps))
                for topic_id, ps in grouped.items()
            ]

        if split_topics:
            entries = topics([tp for tp in listed if tp not in acks], False) + topics(acks, True)
        else:
            entries = topics(list(dict.fromkeys([*listed, *acks])), True)
        return schema.make(
            "ShareFetchRequest",
            group_id=group_id,
            member_id=member_id,
            share_session_epoch=session_epoch,
            max_wait=datetime.timedelta(milliseconds=max_wait_ms),
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            max_records=max_records,
            batch_size=max_records if batch_size is None else batch_size,
            share_acquire_mode=int(acquire_mode),
            is_renew_ack=renew,
            topics=tuple(entries),
            forgotten_topics_data=_forgotten(schema, forgotten),
        )

    return Call(SHARE_FETCH, RENEW_MIN_VERSION if renew else 1, SHARE_FETCH_VERSIONS[1], build)


def _batches(schema: Any, batches: Iterable[AckBatch]) -> tuple[Any, ...]:
    return tuple(
        schema.make(
            "AcknowledgementBatch",
            first_offset=first,
            last_offset=last,
            acknowledge_types=tuple(types),
        )
        for first, last, types in batches
    )


def _forgotten(schema: Any, forgotten: Iterable[IdPartition]) -> tuple[Any, ...]:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for topic_id, index in forgotten:
        by_topic.setdefault(topic_id, []).append(index)
    return tuple(
        schema.make("ForgottenTopic", topic_id=topic_id, partitions=tuple(ps))
        for topic_id, ps in by_topic.items()
    )


# ---- ShareAcknowledge


def share_acknowledge(
    *,
    group_id: str | None,
    member_id: str | None,
    session_epoch: int,
    acks: Acks | None = None,
    is_renew_ack: bool | None = None,
) -> Call:
    """A ShareAcknowledge of `acks`; at epoch -1 (with or without acks) it closes the
    share session. `is_renew_ack` defaults to whether an ack is a RENEW."""
    acks = acks or {}
    renew = _has_renew(acks) if is_renew_ack is None else is_renew_ack

    def build(version: int) -> Any:
        _check_renew("ShareAcknowledge", version, renew)
        schema = request_schema(SHARE_ACKNOWLEDGE, version)
        grouped: dict[uuid.UUID, list[Any]] = {}
        for (topic_id, index), batches in acks.items():
            grouped.setdefault(topic_id, []).append(
                schema.make(
                    "AcknowledgePartition",
                    partition_index=index,
                    acknowledgement_batches=_batches(schema, batches),
                )
            )
        return schema.make(
            "ShareAcknowledgeRequest",
            group_id=group_id,
            member_id=member_id,
            share_session_epoch=session_epoch,
            is_renew_ack=renew,
            topics=tuple(
                schema.make("AcknowledgeTopic", topic_id=topic_id, partitions=tuple(ps))
                for topic_id, ps in grouped.items()
            ),
        )

    low = RENEW_MIN_VERSION if renew else SHARE_ACKNOWLEDGE_VERSIONS[0]
    return Call(SHARE_ACKNOWLEDGE, low, SHARE_ACKNOWLEDGE_VERSIONS[1], build)


# ---- reading ShareFetch / ShareAcknowledge responses


def partitions_of(response: Any) -> dict[TopicIdPartition, Any]:
    """{partition: its PartitionData}; a partition listed twice is a broker bug
    (ValueError)."""
    found: dict[TopicIdPartition, Any] = {}
    for topic in response.responses:
        for p in topic.partitions:
            tp = TopicIdPartition(topic.topic_id, int(p.partition_index))
            if tp in found:
                raise ValueError(f"partition {tp} answered twice")
            found[tp] = p
    return found


def acquired_of(response: Any) -> dict[TopicIdPartition, tuple[Span, ...]]:
    """The AcquiredRecords of a ShareFetch response as spans (partitions that acquired
    nothing are left out)."""
    return {
        tp: tuple(
            Span(int(r.first_offset), int(r.last_offset), int(r.delivery_count))
            for r in p.acquired_records
        )
        for tp, p in partitions_of(response).items()
        if p.acquired_records
    }


def partition_errors(response: Any) -> dict[TopicIdPartition, ErrorCode]:
    """Partitions answered with an error code (ShareFetch: the fetch error;
    ShareAcknowledge: the acknowledgement error)."""
    return {
        tp: ErrorCode(p.error_code)
        for tp, p in partitions_of(response).items()
        if p.error_code != ErrorCode.none
    }


def lock_timeout_ms(response: Any) -> int | None:
    """AcquisitionLockTimeoutMs of the response, None where absent (ShareAcknowledge
    v1) or 0 (top-level errors)."""
    value = getattr(response, "acquisition_lock_timeout", None)
    if value is None:
        return None
    ms = int(value.total_seconds() * 1000)
    return ms if ms > 0 else None
