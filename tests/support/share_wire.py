"""ShareFetch (78) / ShareAcknowledge (79) at the wire: request builders, response
readers and set-up helpers (group configs, a joined member, produced records).

Partitions are `(topic id, partition)` pairs; acknowledgements are
`{(topic id, partition): [(first, last, (types...)), ...]}`.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.client import KafkaConnection
from shoal.protocol.schema import request_schema
from tests.support.batches import values_batch
from tests.support.share_groups import Member
from tests.support.topics import produce
from tests.support.wire import call1, with_connection

TP = tuple[uuid.UUID, int]
Ack = tuple[int, int, tuple[int, ...]]
Acks = Mapping[TP, Sequence[Ack]]
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
GROUP_RESOURCE = 32
SET = 0
MAX_BYTES = 52_428_800


def share_fetch_request(
    group_id: str | None,
    member_id: str | None,
    epoch: int,
    partitions: Iterable[TP] = (),
    *,
    acks: Acks | None = None,
    forgotten: Iterable[TP] = (),
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = MAX_BYTES,
    max_records: int = 500,
    batch_size: int = 500,
    version: int = 1,
    acquire_mode: int = 0,
    is_renew_ack: bool = False,
    split_topics: bool = False,
) -> Any:
    """A ShareFetch listing `partitions` then the acknowledged ones. One `Topics` entry
    per topic id, or with `split_topics` separate entries for new partitions and
    partitions with acks, as librdkafka writes them."""
    schema = request_schema(78, version)
    acks = acks or {}

    def topics(items: Iterable[TP], with_acks: bool) -> list[Any]:
        grouped: dict[uuid.UUID, list[Any]] = {}
        for topic_id, index in items:
            batches = acks.get((topic_id, index), ()) if with_acks else ()
            grouped.setdefault(topic_id, []).append(
                schema.make(
                    "FetchPartition",
                    partition_index=index,
                    acknowledgement_batches=tuple(
                        schema.make(
                            "AcknowledgementBatch",
                            first_offset=first,
                            last_offset=last,
                            acknowledge_types=types,
                        )
                        for first, last, types in batches
                    ),
                )
            )
        return [
            schema.make("FetchTopic", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in grouped.items()
        ]

    listed = list(dict.fromkeys(partitions))
    if split_topics:
        entries = topics([tp for tp in listed if tp not in acks], False) + topics(acks, True)
    else:
        entries = topics(list(dict.fromkeys([*listed, *acks])), True)
    forgotten_by_topic: dict[uuid.UUID, list[int]] = {}
    for topic_id, index in forgotten:
        forgotten_by_topic.setdefault(topic_id, []).append(index)
    return schema.make(
        "ShareFetchRequest",
        group_id=group_id,
        member_id=member_id,
        share_session_epoch=epoch,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        max_records=max_records,
        batch_size=batch_size,
        share_acquire_mode=acquire_mode,
        is_renew_ack=is_renew_ack,
        topics=tuple(entries),
        forgotten_topics_data=tuple(
            schema.make("ForgottenTopic", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in forgotten_by_topic.items()
        ),
    )


def share_ack_request(
    group_id: str | None,
    member_id: str | None,
    epoch: int,
    acks: Acks | None = None,
    *,
    version: int = 1,
    is_renew_ack: bool = False,
) -> Any:
    schema = request_schema(79, version)
    grouped: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, index), batches in (acks or {}).items():
        grouped.setdefault(topic_id, []).append(
            schema.make(
                "AcknowledgePartition",
                partition_index=index,
                acknowledgement_batches=tuple(
                    schema.make(
                        "AcknowledgementBatch",
                        first_offset=first,
                        last_offset=last,
                        acknowledge_types=types,
                    )
                    for first, last, types in batches
                ),
            )
        )
    return schema.make(
        "ShareAcknowledgeRequest",
        group_id=group_id,
        member_id=member_id,
        share_session_epoch=epoch,
        is_renew_ack=is_renew_ack,
        topics=tuple(
            schema.make("AcknowledgeTopic", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in grouped.items()
        ),
    )


# ---- reading responses


def partitions_of(response: Any) -> dict[TP, Any]:
    """{(topic id, partition): PartitionData}, every listed partition exactly once."""
    found: dict[TP, Any] = {}
    for topic in response.responses:
        for p in topic.partitions:
            tp = (topic.topic_id, int(p.partition_index))
            assert tp not in found, f"{tp} listed twice"
            found[tp] = p
    return found


def acquired(response: Any) -> dict[TP, list[tuple[int, int, int]]]:
    """{(topic id, partition): [(first, last, delivery count)]} of a ShareFetch response
    (partitions that acquired nothing are left out)."""
    assert response.error_code == ErrorCode.none, response
    return {
        tp: [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records]
        for tp, p in partitions_of(response).items()
        if p.acquired_records
    }


def acquired_offsets(response: Any) -> list[int]:
    return sorted(
        offset
        for ranges in acquired(response).values()
        for first, last, _count in ranges
        for offset in range(first, last + 1)
    )


# ---- set-up


def set_group_configs(bootstrap: str, group_id: str, configs: Mapping[str, str]) -> None:
    """IncrementalAlterConfigs SET of share-group configs; asserts success."""
    schema = request_schema(44, 1)
    request = schema.make(
        "IncrementalAlterConfigsRequest",
        resources=(
            schema.make(
                "AlterConfigsResource",
                resource_type=GROUP_RESOURCE,
                resource_name=group_id,
                configs=tuple(
                    schema.make("AlterableConfig", name=k, config_operation=SET, value=v)
                    for k, v in configs.items()
                ),
            ),
        ),
        validate_only=False,
    )
    (result,) = call1(bootstrap, request).responses
    assert result.error_code == ErrorCode.none, result


def join(bootstrap: str, group_id: str, *topics: str) -> str:
    """A member joins (initialising the group's share state for `topics`); returns its
    member id. It is never heartbeated again: share requests need no membership."""

    async def go(conn: KafkaConnection) -> str:
        member = Member(group_id)
        await member.join(conn, list(topics))
        return member.member_id

    return with_connection(bootstrap, go)


def produce_values(bootstrap: str, topic: str, *counts: int, partition: int = 0) -> None:
    """One batch of `count` records per count, in order."""
    for count in counts:
        produce(bootstrap, topic, values_batch(count), partition=partition)
