"""The kio requests the `shoal-share` member sends, built in one place (pure; no I/O).

Versions: IncrementalAlterConfigs v1, Metadata v12, ListOffsets v7,
ShareGroupHeartbeat v1, ShareFetch v2 (record-limit acquisition) and ShareAcknowledge
v2 (IsRenewAck for RENEW). Partitions are `(topic id, partition)` pairs.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import request_schema

GROUP_RESOURCE_TYPE: Final = 32
CONFIG_SET: Final = 0
RECORD_LIMIT_MODE: Final = 1
"""ShareAcquireMode of ShareFetch v2: never more records than MaxRecords."""
FETCH_MAX_BYTES: Final = 16 * 1024 * 1024
"""MaxBytes of an acquiring ShareFetch: the response carries the records, which the
driver does not read (executors fetch them again), so keep it moderate."""

IdPartition = tuple[uuid.UUID, int]


def error_name(code: int) -> str:
    """Kafka's spelling of an error code's name, e.g. INVALID_RECORD_STATE."""
    return ErrorCode(code).name.upper()


def group_configs_request(group_id: str, configs: Mapping[str, str]) -> Any:
    schema = request_schema(44, 1)
    return schema.make(
        "IncrementalAlterConfigsRequest",
        resources=(
            schema.make(
                "AlterConfigsResource",
                resource_type=GROUP_RESOURCE_TYPE,
                resource_name=group_id,
                configs=tuple(
                    schema.make("AlterableConfig", name=k, config_operation=CONFIG_SET, value=v)
                    for k, v in sorted(configs.items())
                ),
            ),
        ),
        validate_only=False,
    )


def metadata_request(topics: Iterable[str]) -> Any:
    schema = request_schema(3, 12)
    return schema.make(
        "MetadataRequest",
        topics=tuple(schema.make("MetadataRequestTopic", topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def list_offsets_request(partition_counts: Mapping[str, int], *, read_committed: bool) -> Any:
    """The latest offset (high watermark, or last stable offset) of every partition."""
    schema = request_schema(2, 7)
    return schema.make(
        "ListOffsetsRequest",
        replica_id=-1,
        isolation_level=1 if read_committed else 0,
        topics=tuple(
            schema.make(
                "ListOffsetsTopic",
                name=name,
                partitions=tuple(
                    schema.make("ListOffsetsPartition", partition_index=i, timestamp=-1)
                    for i in range(count)
                ),
            )
            for name, count in sorted(partition_counts.items())
        ),
    )


def heartbeat_request(
    group_id: str, member_id: str, epoch: int, subscribed: Sequence[str] | None
) -> Any:
    """Join with `subscribed` at epoch 0, heartbeat with None, leave at epoch -1."""
    return request_schema(76, 1).make(
        "ShareGroupHeartbeatRequest",
        group_id=group_id,
        member_id=member_id,
        member_epoch=epoch,
        rack_id=None,
        subscribed_topic_names=None if subscribed is None else tuple(subscribed),
    )


def share_fetch_request(
    group_id: str,
    member_id: str,
    epoch: int,
    *,
    partitions: Sequence[IdPartition],
    forgotten: Sequence[IdPartition],
    wait_ms: int,
    records_max: int,
) -> Any:
    """An acquiring ShareFetch (no piggy-backed acknowledgements), record-limit mode."""
    schema = request_schema(78, 2)
    listed: dict[uuid.UUID, list[Any]] = {}
    for topic_id, index in partitions:
        listed.setdefault(topic_id, []).append(
            schema.make("FetchPartition", partition_index=index, acknowledgement_batches=())
        )
    dropped: dict[uuid.UUID, list[int]] = {}
    for topic_id, index in forgotten:
        dropped.setdefault(topic_id, []).append(index)
    return schema.make(
        "ShareFetchRequest",
        group_id=group_id,
        member_id=member_id,
        share_session_epoch=epoch,
        max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=1,
        max_bytes=FETCH_MAX_BYTES,
        max_records=records_max,
        batch_size=records_max,
        share_acquire_mode=RECORD_LIMIT_MODE,
        is_renew_ack=False,
        topics=tuple(
            schema.make("FetchTopic", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in listed.items()
        ),
        forgotten_topics_data=tuple(
            schema.make("ForgottenTopic", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in dropped.items()
        ),
    )


def share_acknowledge_request(
    group_id: str,
    member_id: str,
    epoch: int,
    acks: Mapping[IdPartition, Sequence[tuple[int, int]]],
    ack_type: int,
    *,
    renew: bool = False,
) -> Any:
    """One acknowledgement type for every (first, last) range; epoch -1 with no acks
    closes the share session."""
    schema = request_schema(79, 2)
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, index), ranges in acks.items():
        by_topic.setdefault(topic_id, []).append(
            schema.make(
                "AcknowledgePartition",
                partition_index=index,
                acknowledgement_batches=tuple(
                    schema.make(
                        "AcknowledgementBatch",
                        first_offset=first,
                        last_offset=last,
                        acknowledge_types=(ack_type,),
                    )
                    for first, last in ranges
                ),
            )
        )
    return schema.make(
        "ShareAcknowledgeRequest",
        group_id=group_id,
        member_id=member_id,
        share_session_epoch=epoch,
        is_renew_ack=renew,
        topics=tuple(
            schema.make("AcknowledgeTopic", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in by_topic.items()
        ),
    )
