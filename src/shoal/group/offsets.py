"""Share-group offset administration: AlterShareGroupOffsets and DeleteShareGroupOffsets.

Pure functions from a share group's replayed state (never changed here), the topic
image and a request to the records, effects and response of the operation, like
`membership` for heartbeats. The shard checks the group-id namespace first (another
group type, or a missing group for a delete, is GROUP_ID_NOT_FOUND); these rules
follow (coordinators.md §3, Kafka 4.2 where the spec is silent):

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

Topics are answered once each, in request order (a name repeated merges into its
first row); an alter's partitions likewise (the last start offset given wins).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from shoal.group import lifecycle
from shoal.group.membership import epoch_record, state_metadata_record
from shoal.group.results import (
    AlterOffsetsResponse,
    AlterOffsetsTopic,
    CoordinatorResult,
    DeleteOffsetsResponse,
    DeleteOffsetsTopic,
    GroupError,
    OffsetPartitionResult,
)
from shoal.group.share_group import ShareGroup, StatePartitionMetadata
from shoal.group.topics import TopicImage

NOT_EMPTY_MESSAGE = "The group is not empty."
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
"""Kafka's default message of UNKNOWN_TOPIC_OR_PARTITION."""
NO_OFFSETS_MESSAGE = "There is no offset information to delete."

TopicOffsets = tuple[str, Sequence[tuple[int, int]]]
"""One topic of an alter request: its name and (partition, start offset) pairs."""


def alter(
    *, group_id: str, group: ShareGroup | None, topics: Iterable[TopicOffsets], image: TopicImage
) -> CoordinatorResult[AlterOffsetsResponse]:
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
        error: GroupError | None = None
        message: str | None = None
        if topic is None or not 0 <= partition < topic.partition_count:
            error, message = GroupError.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE
        elif start_offset < lifecycle.START_OFFSET_UNKNOWN:
            error = GroupError.INVALID_REQUEST
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
) -> CoordinatorResult[DeleteOffsetsResponse]:
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
        error=GroupError.UNKNOWN_TOPIC_OR_PARTITION,
        error_message=message,
    )
