"""Share-group offset administration: AlterShareGroupOffsets, DeleteShareGroupOffsets
and DescribeShareGroupOffsets.

Pure functions from a share group's replayed state (never changed here), the topic
image and a request to the records, effects and response of the operation, like
`membership` for heartbeats. The shard checks the group-id namespace first (another
group type, or a missing group for a delete, is GROUP_ID_NOT_FOUND); these rules
follow (docs/design/coordinators.md §3, Kafka 4.2 where the spec is silent):

- Both need an empty group (NON_EMPTY_GROUP, "The group is not empty.").
- **Alter.** A topic the cluster does not have, or a partition outside it, is
  UNKNOWN_TOPIC_OR_PARTITION for that partition; a start offset below -1 is
  INVALID_REQUEST (-1 = resolve by `share.auto.offset.reset` on next load). The
  remaining partitions are reset: the group epoch +1 (a missing group is created
  empty by that record), the partitions marked initializing (record 15; they stay
  initialized meanwhile, so a failed reset leaves the old state in place), and an
  `InitializeShareState` at StateEpoch = the new epoch with the requested start
  offsets, which replaces their state (in-flight records, delivery counts) and fences
  writers of the old state epoch. Nothing valid to reset: no records.
- **Delete.** A topic the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION with
  Kafka's default message; one the group has no initialized or deleting state for
  is UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.". The
  others move to deleting (record 15) and a `DeleteShareState` deletes their state;
  `complete_state_deletion` then drops them from the metadata. No epoch bump.
- **Outcomes.** Once the effects ran, `with_initialization_errors` and
  `with_deletion_errors` fold the persister's per-partition errors into the answer.
- **Describe.** `describe_partition`: a partition's StartOffset, LeaderEpoch and lag
  from the share coordinator's summary and the high watermark.

Topics are answered once each, in request order (a name repeated merges into its
first row); an alter's partitions likewise (the last start offset given wins).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from shoal.coordinator.result import CoordinatorResult
from shoal.group.results import (
    AlterOffsetsResponse,
    AlterOffsetsTopic,
    DeleteOffsetsResponse,
    DeleteOffsetsTopic,
    DescribedOffsetsPartition,
    GroupResult,
    OffsetPartitionResult,
)
from shoal.group.share import lifecycle
from shoal.group.share.group import ShareGroup, StatePartitionMetadata
from shoal.group.share.membership import epoch_record, state_metadata_record
from shoal.group.topic_image import TopicImage
from shoal.protocol.errors import ErrorCode, error_name
from shoal.share.persister import StateSummary

NOT_EMPTY_MESSAGE = "The group is not empty."
INVALID_GROUP_ID_MESSAGE = "The group id is invalid."
"""Kafka's default message of INVALID_GROUP_ID, which Alter- and
DeleteShareGroupOffsets send for an empty group id."""
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
"""Kafka's default message of UNKNOWN_TOPIC_OR_PARTITION."""
NO_OFFSETS_MESSAGE = "There is no offset information to delete."

TopicOffsets = tuple[str, Sequence[tuple[int, int]]]
"""One topic of an alter request: its name and (partition, start offset) pairs."""


def alter(
    *, group_id: str, group: ShareGroup | None, topics: Iterable[TopicOffsets], image: TopicImage
) -> GroupResult[AlterOffsetsResponse]:
    """AlterShareGroupOffsets on an empty or missing share group (module docstring)."""
    assert group is None or group.is_empty, group_id
    rows: list[AlterOffsetsTopic] = []
    resets: list[lifecycle.OffsetReset] = []
    for name, offsets in _merged(topics):
        row, reset = _alter_topic(name, offsets, image)
        rows.append(row)
        if reset is not None:
            resets.append(reset)
    epoch = group.group_epoch if group is not None else 0
    if not resets:
        return CoordinatorResult(
            records=(), response=AlterOffsetsResponse(group_epoch=epoch, topics=tuple(rows))
        )
    epoch += 1
    metadata = group.state_metadata if group is not None else StatePartitionMetadata()
    hash_value = group.metadata_hash if group is not None else 0
    return CoordinatorResult(
        records=(
            epoch_record(group_id, epoch, hash_value),
            state_metadata_record(group_id, lifecycle.add_initializing(metadata, resets)),
        ),
        response=AlterOffsetsResponse(group_epoch=epoch, topics=tuple(rows)),
        effects=(lifecycle.reset_effect(group_id=group_id, state_epoch=epoch, resets=resets),),
    )


def _merged(topics: Iterable[TopicOffsets]) -> list[tuple[str, dict[int, int]]]:
    merged: dict[str, dict[int, int]] = {}
    for name, offsets in topics:
        partitions = merged.setdefault(name, {})
        for partition, start_offset in offsets:
            partitions[partition] = start_offset
    return list(merged.items())


def _alter_topic(
    name: str, offsets: dict[int, int], image: TopicImage
) -> tuple[AlterOffsetsTopic, lifecycle.OffsetReset | None]:
    topic = image.by_name(name)
    results: list[OffsetPartitionResult] = []
    valid: list[tuple[int, int]] = []
    for partition, start_offset in offsets.items():
        error: ErrorCode | None = None
        message: str | None = None
        if topic is None or not 0 <= partition < topic.partition_count:
            error, message = ErrorCode.unknown_topic_or_partition, UNKNOWN_TOPIC_MESSAGE
        elif start_offset < lifecycle.START_OFFSET_UNKNOWN:
            error = ErrorCode.invalid_request
            message = f"Invalid start offset {start_offset} for partition {partition}."
        else:
            valid.append((partition, start_offset))
        results.append(
            OffsetPartitionResult(partition=partition, error=error, error_message=message)
        )
    row = AlterOffsetsTopic(
        topic_name=name,
        topic_id=topic.topic_id if topic is not None else None,
        partitions=tuple(results),
    )
    if topic is None or not valid:
        return row, None
    reset = lifecycle.OffsetReset(
        topic_id=topic.topic_id, topic_name=topic.name, start_offsets=tuple(sorted(valid))
    )
    return row, reset


def delete(
    *, group_id: str, group: ShareGroup, topic_names: Iterable[str], image: TopicImage
) -> GroupResult[DeleteOffsetsResponse]:
    """DeleteShareGroupOffsets on an empty share group (module docstring)."""
    assert group.is_empty, group_id
    metadata = group.state_metadata
    rows: list[DeleteOffsetsTopic] = []
    eligible: list[uuid.UUID] = []
    for name in dict.fromkeys(topic_names):
        topic = image.by_name(name)
        if topic is None:
            rows.append(_delete_row(name, None, UNKNOWN_TOPIC_MESSAGE))
        elif topic.topic_id not in metadata.initialized and topic.topic_id not in (
            metadata.deleting
        ):
            rows.append(_delete_row(name, None, NO_OFFSETS_MESSAGE))
        else:
            eligible.append(topic.topic_id)
            rows.append(DeleteOffsetsTopic(topic_name=name, topic_id=topic.topic_id))
    response = DeleteOffsetsResponse(topics=tuple(rows))
    if not eligible:
        return CoordinatorResult(records=(), response=response)
    new_metadata, deletes = lifecycle.move_to_deleting(metadata, eligible, image)
    records = (state_metadata_record(group_id, new_metadata),) if new_metadata != metadata else ()
    return CoordinatorResult(
        records=records,
        response=response,
        effects=(lifecycle.delete_effect(group_id=group_id, topics=deletes),),
    )


def _delete_row(name: str, topic_id: uuid.UUID | None, message: str) -> DeleteOffsetsTopic:
    return DeleteOffsetsTopic(
        topic_name=name,
        topic_id=topic_id,
        error=ErrorCode.unknown_topic_or_partition,
        error_message=message,
    )


# ---- folding the persister's outcomes into the answers ------------------------------


def with_initialization_errors(
    response: AlterOffsetsResponse, failed: Mapping[tuple[uuid.UUID, int], ErrorCode]
) -> AlterOffsetsResponse:
    """An alter's answer after its `InitializeShareState` ran: each partition the
    persister did not initialise answers the persister's error (`failed`: (topic id,
    partition) -> the persister's error)."""
    if not failed:
        return response
    return replace(
        response, topics=tuple(_topic_with_init_errors(row, failed) for row in response.topics)
    )


def _topic_with_init_errors(
    row: AlterOffsetsTopic, failed: Mapping[tuple[uuid.UUID, int], ErrorCode]
) -> AlterOffsetsTopic:
    topic_id = row.topic_id
    if topic_id is None:
        return row
    return replace(
        row,
        partitions=tuple(
            OffsetPartitionResult(
                partition=p.partition,
                error=failed[(topic_id, p.partition)],
                error_message="Initialising the share-partition state failed: "
                f"{error_name(failed[(topic_id, p.partition)])}.",
            )
            if p.error is None and (topic_id, p.partition) in failed
            else p
            for p in row.partitions
        ),
    )


def with_deletion_errors(
    response: DeleteOffsetsResponse, failed: Mapping[uuid.UUID, ErrorCode]
) -> DeleteOffsetsResponse:
    """A delete's answer after its `DeleteShareState` ran: each topic whose state
    the persister did not delete answers the persister's error (`failed`: topic id ->
    the persister's error); it stays deleting, retried by the next request."""
    if not failed:
        return response
    return replace(
        response,
        topics=tuple(
            replace(
                row,
                error=failed[row.topic_id],
                error_message="Deleting the share-partition state failed: "
                f"{error_name(failed[row.topic_id])}.",
            )
            if row.error is None and row.topic_id is not None and row.topic_id in failed
            else row
            for row in response.topics
        ),
    )


# ---- DescribeShareGroupOffsets -------------------------------------------------------


def describe_partition(
    *,
    topic_id: uuid.UUID,
    partition: int,
    summary: StateSummary,
    high_watermark: int | None,
) -> DescribedOffsetsPartition:
    """One partition of DescribeShareGroupOffsets (90) from the share coordinator's
    summary and the partition's high watermark (None = no log): the lag is the high
    watermark minus the start offset minus the delivery-complete count, -1 unless
    both are known (docs/design/coordinators.md §3). A summary error answers StartOffset -1."""
    if summary.error is not None:
        return DescribedOffsetsPartition(partition=partition)
    described = DescribedOffsetsPartition(
        partition=partition,
        start_offset=summary.start_offset,
        # Never read by a leader: the persisters keep -1, Kafka answers its default 0.
        leader_epoch=max(summary.leader_epoch, 0),
    )
    if summary.start_offset < 0 or summary.delivery_complete_count < 0:
        return described
    if high_watermark is None:
        return replace(
            described,
            error=ErrorCode.unknown_topic_or_partition,
            error_message=f"No log for partition {partition} of topic {topic_id}.",
        )
    lag = high_watermark - summary.start_offset - summary.delivery_complete_count
    return replace(described, lag=lag)
