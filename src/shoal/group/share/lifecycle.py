"""Share-partition state lifecycle: which partitions need initialising or deleting.

Pure functions over a group's `StatePartitionMetadata` (record 15) and the topic
image. A partition becomes assignable only once it is *initialized*:

    subscribed, no state --(InitializeShareState, record 15)--> initializing
    initializing --complete_initialization(success)--> initialized (+ epoch bump)
    initializing --complete_initialization(failure)--> no state, retried later
    initialized --topic deleted / DeleteGroups--> deleting --deleted--> no state
    initialized --AlterShareGroupOffsets--> initialized + initializing (new start
        offsets, new state epoch) --success--> initialized
    initialized --DeleteShareGroupOffsets--> deleting --deleted--> no state

Start offsets follow Kafka (KAFKA-20742): -1 (resolved by `share.auto.offset.reset`)
for a topic new to the group, 0 for partitions added to a topic the group already
has state for (initialized or initializing), so nothing produced to a new partition
before its initialisation is skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shoal.group.results import (
    DeleteShareState,
    DeleteTopic,
    InitializePartition,
    InitializeShareState,
    InitializeTopic,
)
from shoal.group.share.group import StatePartitionMetadata, TopicState
from shoal.group.topic_image import TopicImage

START_OFFSET_UNKNOWN = -1
START_OFFSET_EARLIEST = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingInit:
    """Partitions of one topic to initialise, with their start offset."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: frozenset[int]
    start_offset: int


def initialization_needed(
    *,
    metadata: StatePartitionMetadata,
    subscribed_topic_names: Iterable[str],
    image: TopicImage,
) -> list[PendingInit]:
    """Subscribed partitions that have no state and are not being initialised."""
    needed: list[PendingInit] = []
    for name in sorted(set(subscribed_topic_names)):
        topic = image.by_name(name)
        if topic is None:
            continue
        known = metadata.initialized_partitions(topic.topic_id)
        known |= metadata.initializing_partitions(topic.topic_id)
        missing = frozenset(range(topic.partition_count)) - known
        if missing:
            needed.append(
                PendingInit(
                    topic_id=topic.topic_id,
                    topic_name=topic.name,
                    partitions=missing,
                    start_offset=START_OFFSET_EARLIEST if known else START_OFFSET_UNKNOWN,
                )
            )
    return needed


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetReset:
    """Partitions of one topic an AlterShareGroupOffsets sets, each with its own
    start offset: (partition, start offset) pairs in ascending partition order."""

    topic_id: uuid.UUID
    topic_name: str
    start_offsets: tuple[tuple[int, int], ...]

    @property
    def partitions(self) -> frozenset[int]:
        return frozenset(partition for partition, _ in self.start_offsets)


def add_initializing(
    metadata: StatePartitionMetadata, pending: Iterable[PendingInit | OffsetReset]
) -> StatePartitionMetadata:
    """Mark partitions initializing; a topic initialising again leaves `deleting`
    (as Kafka's `addInitializingTopicsRecords`)."""
    initializing = dict(metadata.initializing)
    deleting = dict(metadata.deleting)
    for item in pending:
        previous = initializing.get(item.topic_id)
        partitions = item.partitions | (previous.partitions if previous else frozenset())
        initializing[item.topic_id] = TopicState(name=item.topic_name, partitions=partitions)
        deleting.pop(item.topic_id, None)
    return StatePartitionMetadata(
        initializing=initializing, initialized=dict(metadata.initialized), deleting=deleting
    )


def initialize_effect(
    *, group_id: str, state_epoch: int, pending: Iterable[PendingInit]
) -> InitializeShareState:
    return InitializeShareState(
        group_id=group_id,
        state_epoch=state_epoch,
        topics=tuple(
            InitializeTopic(
                topic_id=item.topic_id,
                topic_name=item.topic_name,
                partitions=tuple(
                    InitializePartition(partition=p, start_offset=item.start_offset)
                    for p in sorted(item.partitions)
                ),
            )
            for item in sorted(pending, key=lambda i: i.topic_id)
        ),
    )


def reset_effect(
    *, group_id: str, state_epoch: int, resets: Iterable[OffsetReset]
) -> InitializeShareState:
    """The initialisation an offset reset sends: every partition at its own start
    offset, under the new state epoch (which fences the previous state's writers)."""
    return InitializeShareState(
        group_id=group_id,
        state_epoch=state_epoch,
        topics=tuple(
            InitializeTopic(
                topic_id=reset.topic_id,
                topic_name=reset.topic_name,
                partitions=tuple(
                    InitializePartition(partition=p, start_offset=offset)
                    for p, offset in reset.start_offsets
                ),
            )
            for reset in sorted(resets, key=lambda r: r.topic_id)
        ),
    )


def pending_from_initializing(metadata: StatePartitionMetadata) -> list[PendingInit]:
    """Re-issue what a reload found initializing (Kafka's onElected does the same):
    0 for a topic that already has initialized partitions, else -1. Partitions both
    initialized and initializing were being reset by an AlterShareGroupOffsets whose
    requested offsets are not in the records: they are left out (see
    `interrupted_resets`), never re-initialised at a guessed offset."""
    pending = []
    for topic_id, entry in sorted(metadata.initializing.items()):
        partitions = entry.partitions - metadata.initialized_partitions(topic_id)
        if partitions:
            pending.append(
                PendingInit(
                    topic_id=topic_id,
                    topic_name=entry.name,
                    partitions=partitions,
                    start_offset=(
                        START_OFFSET_EARLIEST
                        if metadata.initialized_partitions(topic_id)
                        else START_OFFSET_UNKNOWN
                    ),
                )
            )
    return pending


def interrupted_resets(metadata: StatePartitionMetadata) -> StatePartitionMetadata:
    """The metadata without the initializing marks of an offset reset a restart
    interrupted (partitions both initialized and initializing): they keep whatever
    state the persister holds, the old or the reset one, and the reset's caller, who
    got no answer, retries."""
    initializing: dict[uuid.UUID, TopicState] = {}
    for topic_id, entry in metadata.initializing.items():
        remaining = entry.partitions - metadata.initialized_partitions(topic_id)
        if remaining:
            initializing[topic_id] = TopicState(name=entry.name, partitions=remaining)
    return StatePartitionMetadata(
        initializing=initializing,
        initialized=dict(metadata.initialized),
        deleting=dict(metadata.deleting),
    )


def mark_initialized(
    metadata: StatePartitionMetadata, topics: Mapping[uuid.UUID, Iterable[int]]
) -> tuple[StatePartitionMetadata, dict[uuid.UUID, frozenset[int]]]:
    """Move the given partitions that are initializing to initialized. Returns the
    new metadata and what actually moved (partitions not initializing are ignored:
    their topic was deleted or their initialisation superseded)."""
    initializing = dict(metadata.initializing)
    initialized = dict(metadata.initialized)
    moved: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in topics.items():
        entry = initializing.get(topic_id)
        if entry is None:
            continue
        done = entry.partitions & frozenset(partitions)
        if not done:
            continue
        moved[topic_id] = done
        remaining = entry.partitions - done
        if remaining:
            initializing[topic_id] = TopicState(name=entry.name, partitions=remaining)
        else:
            del initializing[topic_id]
        before = initialized.get(topic_id)
        initialized[topic_id] = TopicState(
            name=entry.name, partitions=done | (before.partitions if before else frozenset())
        )
    new = StatePartitionMetadata(
        initializing=initializing, initialized=initialized, deleting=dict(metadata.deleting)
    )
    return new, moved


def remove_initializing(
    metadata: StatePartitionMetadata, topics: Mapping[uuid.UUID, Iterable[int]]
) -> StatePartitionMetadata:
    """Forget failed initialisations (Kafka's `uninitializeShareGroupState`)."""
    initializing = dict(metadata.initializing)
    for topic_id, partitions in topics.items():
        entry = initializing.get(topic_id)
        if entry is None:
            continue
        remaining = entry.partitions - frozenset(partitions)
        if remaining:
            initializing[topic_id] = TopicState(name=entry.name, partitions=remaining)
        else:
            del initializing[topic_id]
    return StatePartitionMetadata(
        initializing=initializing,
        initialized=dict(metadata.initialized),
        deleting=dict(metadata.deleting),
    )


def move_to_deleting(
    metadata: StatePartitionMetadata, topic_ids: Iterable[uuid.UUID], image: TopicImage
) -> tuple[StatePartitionMetadata, list[DeleteTopic]]:
    """Move topics with state to deleting; the delete requests cover their
    initialized and initializing partitions. A topic already deleting is requested
    again with every partition of the topic (or, if the topic is gone, with
    `partitions=None`)."""
    initializing = dict(metadata.initializing)
    initialized = dict(metadata.initialized)
    deleting = dict(metadata.deleting)
    requests: list[DeleteTopic] = []
    for topic_id in sorted(set(topic_ids)):
        partitions: set[int] = set()
        name: str | None = None
        for entries in (initialized, initializing):
            entry = entries.pop(topic_id, None)
            if entry is not None:
                partitions |= entry.partitions
                name = entry.name
        if name is not None:
            deleting[topic_id] = name
            requests.append(
                DeleteTopic(
                    topic_id=topic_id, topic_name=name, partitions=tuple(sorted(partitions))
                )
            )
        elif topic_id in deleting:
            requests.append(retry_delete_topic(topic_id, deleting[topic_id], image))
    new = StatePartitionMetadata(
        initializing=initializing, initialized=initialized, deleting=deleting
    )
    return new, requests


def retry_delete_topic(topic_id: uuid.UUID, name: str, image: TopicImage) -> DeleteTopic:
    """A delete request for a topic found deleting (after a reload or a failure)."""
    topic = image.by_id(topic_id)
    partitions = None if topic is None else tuple(range(topic.partition_count))
    return DeleteTopic(topic_id=topic_id, topic_name=name, partitions=partitions)


def topics_with_state(metadata: StatePartitionMetadata) -> set[uuid.UUID]:
    return set(metadata.initializing) | set(metadata.initialized) | set(metadata.deleting)


def remove_deleting(
    metadata: StatePartitionMetadata, topic_ids: Iterable[uuid.UUID]
) -> StatePartitionMetadata:
    deleting = dict(metadata.deleting)
    for topic_id in topic_ids:
        deleting.pop(topic_id, None)
    return StatePartitionMetadata(
        initializing=dict(metadata.initializing),
        initialized=dict(metadata.initialized),
        deleting=deleting,
    )


def delete_effect(
    *, group_id: str, topics: Iterable[DeleteTopic], for_group_deletion: bool = False
) -> DeleteShareState:
    return DeleteShareState(
        group_id=group_id,
        topics=tuple(sorted(topics, key=lambda t: t.topic_id)),
        for_group_deletion=for_group_deletion,
    )


def vanished_topics(metadata: StatePartitionMetadata, image: TopicImage) -> set[uuid.UUID]:
    """Initialized or initializing topics whose id the image no longer has."""
    return {
        topic_id
        for topic_id in set(metadata.initialized) | set(metadata.initializing)
        if image.by_id(topic_id) is None
    }
