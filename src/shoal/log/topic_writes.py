"""A topic's metadata change as data: its disk work done on any thread, adopted on the
log manager's owner.

Owns `TopicWrite`: what creating a topic, growing it or replacing its config
overrides writes. The log manager makes it on its owner (`LogManager.plan_topic`,
`plan_partitions`, `plan_topic_configs`: validation only, nothing changes); `run`
does the disk work once, on any thread (the broker runs it in a disk worker, so its
fsyncs stay off the event loop); the manager then adopts the change on its owner
(`finish_topic`, `finish_topic_change`).

`run` records the change in the topic catalog first (`TopicCatalog.record`: in the
broker a durable write to the metadata log; a crash then leaves the change listed,
and partition directories it lacks are made on the next start), then makes each new
partition directory durable (`topics.prepare_partition_directory`: an empty segment
and partition.metadata; for an internal topic, made by the broker at start, the
partitions' own directories are fsynced at each one's first flush instead:
docs/performance/startup.md), then opens their logs: new objects nobody holds until the owner
adopts them (or `discard`s them). A directory that already existed is left
alone, for the owner's open to decide whose it is (its stray check). The catalog's
adoption of the record (`adopt`) runs on the owner, first thing in the finish.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoal.clock import Clock
from shoal.log.api import LogError, TopicInfo
from shoal.log.events import LogEvents
from shoal.log.fileio import fsync_directory, storage_errors
from shoal.log.partition import PartitionLog
from shoal.log.topics import TopicCatalog, prepare_partition_directory


@dataclass(slots=True)
class TopicWrite:
    """One topic's creation, growth or config change (see the module docstring)."""

    info: TopicInfo
    """The topic as the change leaves it (a new object; the manager's own is updated
    by the finish)."""
    context: str
    """What the change is, for errors: "creating topic t"."""
    data_dir: Path
    catalog: TopicCatalog
    new_partitions: dict[int, Path]
    """The partitions the change adds, by index, with their directories."""
    partition_config: dict[str, Any]
    clock: Clock
    events: LogEvents
    opened: dict[int, PartitionLog] = field(default_factory=dict)
    """The new partitions `run` made and opened; the finish opens any other."""
    pending: Callable[[], None] | None = None
    """The catalog's adoption of the recorded change, until `adopt` runs it."""

    def run(self) -> None:
        """The change's disk work, once, on any thread. Raises LogError
        KAFKA_STORAGE_ERROR naming the change (nothing opened is left open then)."""
        sync = not self.info.internal
        with storage_errors(self.context):
            self.pending = self.catalog.record(self.info)
            fresh = [
                index
                for index, directory in self.new_partitions.items()
                if prepare_partition_directory(directory, self.info.topic_id, sync=sync)
            ]
            if fresh:
                fsync_directory(self.data_dir)
        try:
            for index in fresh:
                self.opened[index] = PartitionLog.open(
                    directory=self.new_partitions[index],
                    config=self.partition_config,
                    clock=self.clock,
                    events=self.events.for_partition(self.info.name, index),
                    directory_durable=sync,
                )
        except LogError:
            self.discard()
            raise

    def adopt(self) -> None:
        """Run the catalog's adoption of the recorded change (on the owner, once)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            pending()

    def discard(self) -> None:
        """Close the logs `run` opened that nobody adopted."""
        for log in self.opened.values():
            log.abandon()
        self.opened.clear()
