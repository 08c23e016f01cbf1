"""The group coordinator's share-state effects, performed against the persister.

A group shard asks for share state with effects (group/results.py) and learns how
they went through an outcome it writes like any result. `ShareStateEffects.outcome`
performs one effect through the persister (in-process and synchronous: the share
coordinator's writes are durable when a call returns) and returns that outcome:

- `InitializeShareState` -> `persister.initialize` for every share-partition ->
  `complete_initialization` (success only if every partition succeeded);
- `DeleteShareState` -> `persister.delete` for every share-partition (those the
  persister holds, for a topic deleted before a reload) -> `complete_state_deletion`
  of the topics that went, or `complete_group_deletion` for a DeleteGroups.

`Outcomes` collects what one write's effects came to (persister errors by
share-partition, the group deletions that finished), which the admin operations
fold into their answers (group/share/offsets.py). `describe_offsets` reads the state
summaries a DescribeShareGroupOffsets answers with.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence

from shoal.group import DeleteShareState, GroupCoordinatorShard, InitializeShareState
from shoal.group.results import (
    DescribedOffsetsPartition,
    DescribedOffsetsTopic,
    GroupEpochResponse,
    GroupResult,
)
from shoal.group.share import offsets as group_offsets
from shoal.protocol.errors import ErrorCode
from shoal.share.persister import Persister, SharePartitionKey

log = logging.getLogger(__name__)

_SUMMARY_LEADER_EPOCH = 0
"""Leader epoch sent with a state summary read (Kafka's request default; a summary
never fences)."""

HighWatermark = Callable[[uuid.UUID, int], int | None]
"""(topic id, partition) -> the partition's high watermark, None if it has no log."""


@dataclasses.dataclass(slots=True)
class Outcomes:
    """What performing one write's effects came to."""

    state_errors: dict[SharePartitionKey, ErrorCode] = dataclasses.field(default_factory=dict)
    """Persister errors by share-partition."""
    deleted_groups: dict[str, ErrorCode | None] = dataclasses.field(default_factory=dict)
    """Each group deletion that finished: None = deleted, else why it was not."""

    def errors_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], ErrorCode]:
        return {
            (key.topic_id, key.partition): error
            for key, error in self.state_errors.items()
            if key.group_id == group_id
        }


class ShareStateEffects:
    """Performs share-state effects through the persister (module docstring)."""

    def __init__(self, persister: Persister) -> None:
        self._persister = persister

    def outcome(
        self,
        shard: GroupCoordinatorShard,
        effect: InitializeShareState | DeleteShareState,
        outcomes: Outcomes,
    ) -> GroupResult[GroupEpochResponse]:
        """Perform `effect`, note its errors in `outcomes`, and return what `shard`
        makes of how it went (to be written on the shard's partition)."""
        errors = outcomes.state_errors
        if isinstance(effect, InitializeShareState):
            return shard.complete_initialization(
                group_id=effect.group_id,
                topic_partitions=effect.partitions_by_topic(),
                success=self._initialize_state(effect, errors),
            )
        failed_before = len(errors)
        self._delete_state(effect, errors)
        if effect.for_group_deletion:
            return shard.complete_group_deletion(
                group_id=effect.group_id, success=len(errors) == failed_before
            )
        failed = {key.topic_id for key in errors if key.group_id == effect.group_id}
        return shard.complete_state_deletion(
            group_id=effect.group_id,
            topic_ids=[t.topic_id for t in effect.topics if t.topic_id not in failed],
            success=True,
        )

    def describe_offsets(
        self,
        group_id: str,
        wanted: Sequence[tuple[str, uuid.UUID | None, Sequence[int]]],
        high_watermark: HighWatermark,
    ) -> list[DescribedOffsetsTopic]:
        """DescribeShareGroupOffsets (90) rows of the partitions the shard named
        (`offsets_to_describe`): each one's state summary and lag; a topic the
        cluster does not have answers StartOffset -1."""
        return [
            DescribedOffsetsTopic(
                topic_name=name,
                topic_id=topic_id,
                partitions=tuple(
                    DescribedOffsetsPartition(partition=p)
                    if topic_id is None
                    else self._describe_partition(group_id, topic_id, p, high_watermark)
                    for p in partitions
                ),
            )
            for name, topic_id, partitions in wanted
        ]

    def _describe_partition(
        self, group_id: str, topic_id: uuid.UUID, partition: int, high_watermark: HighWatermark
    ) -> DescribedOffsetsPartition:
        key = SharePartitionKey(group_id, topic_id, partition)
        summary = self._persister.read_summary(key=key, leader_epoch=_SUMMARY_LEADER_EPOCH)
        if summary.error is not None:
            log.info(
                "share group %s: no state summary of %s: %s", group_id, key, summary.error.name
            )
        return group_offsets.describe_partition(
            topic_id=topic_id,
            partition=partition,
            summary=summary,
            high_watermark=high_watermark(topic_id, partition),
        )

    def _initialize_state(
        self, effect: InitializeShareState, errors: dict[SharePartitionKey, ErrorCode]
    ) -> bool:
        ok = True
        for topic in effect.topics:
            for partition in topic.partitions:
                key = SharePartitionKey(effect.group_id, topic.topic_id, partition.partition)
                error = self._persister.initialize(
                    key=key, state_epoch=effect.state_epoch, start_offset=partition.start_offset
                )
                if error is not None:
                    errors[key] = error
                    log.warning(
                        "share group %s: initialising %s-%d (state epoch %d) failed: %s",
                        effect.group_id,
                        topic.topic_name,
                        partition.partition,
                        effect.state_epoch,
                        error.name,
                    )
                    ok = False
        return ok

    def _delete_state(
        self, effect: DeleteShareState, errors: dict[SharePartitionKey, ErrorCode]
    ) -> None:
        for topic in effect.topics:
            partitions = topic.partitions
            if partitions is None:
                # After a reload, for a topic deleted meanwhile: its partition count
                # is gone with it, but the share coordinator knows its keys.
                partitions = self._persister.partitions_with_state(
                    group_id=effect.group_id, topic_id=topic.topic_id
                )
            for partition in partitions:
                key = SharePartitionKey(effect.group_id, topic.topic_id, partition)
                error = self._persister.delete(key=key)
                if error is not None:
                    errors[key] = error
                    log.warning(
                        "share group %s: deleting the state of %s-%d failed: %s",
                        effect.group_id,
                        topic.topic_name,
                        partition,
                        error.name,
                    )
