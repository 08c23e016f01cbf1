"""Change events of the partition logs: who subscribed, and telling them.

The log announces its own changes, so no caller has to remember whom to tell:

    appended(topic, partition)          new batches are readable (not for a duplicate
                                        idempotent batch, which adds nothing)
    log_start_moved(topic, partition)   the log start offset went up (DeleteRecords,
                                        retention)
    topics_changed(change)              topics were created, deleted or grown

`LogManager` owns one `LogEvents` and hands each `PartitionLog` an emitter bound to
its `(topic, partition)`. Events are plain synchronous callbacks, called in
subscription order after the change is done (an append after its flush policy ran, a
deletion after its data is gone); no asyncio here. A subscriber that raises is logged
with the event and the others are still called: the change itself has happened and
stands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)

PartitionListener = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class TopicsChanged:
    """What one topic operation changed."""

    created: tuple[str, ...] = ()
    deleted: tuple[tuple[str, int], ...] = ()
    """Deleted topics with the partition count they had."""
    grown: tuple[str, ...] = ()

    def deleted_partitions(self) -> list[tuple[str, int]]:
        return [(name, index) for name, count in self.deleted for index in range(count)]


TopicsListener = Callable[[TopicsChanged], None]


class LogEvents:
    """The subscribers of one log manager's changes."""

    def __init__(self) -> None:
        self._appended: list[PartitionListener] = []
        self._log_start_moved: list[PartitionListener] = []
        self._topics_changed: list[TopicsListener] = []

    # -- subscribing

    def on_appended(self, listener: PartitionListener) -> None:
        self._appended.append(listener)

    def on_log_start_moved(self, listener: PartitionListener) -> None:
        self._log_start_moved.append(listener)

    def on_topics_changed(self, listener: TopicsListener) -> None:
        self._topics_changed.append(listener)

    # -- emitting (the log package calls these)

    def appended(self, topic: str, partition: int) -> None:
        for listener in self._appended:  # `_call` inlined: this runs on every append
            try:
                listener(topic, partition)
            except Exception:  # the change stands; the other subscribers still hear of it
                logger.exception(
                    "subscriber %r of appended %s-%d failed", listener, topic, partition
                )

    def log_start_moved(self, topic: str, partition: int) -> None:
        for listener in self._log_start_moved:
            self._call(listener, "log start moved", topic, partition)

    def topics_changed(self, change: TopicsChanged) -> None:
        for listener in self._topics_changed:
            try:
                listener(change)
            except Exception:  # the change stands; the other subscribers still hear of it
                logger.exception("subscriber %r of topic change %s failed", listener, change)

    def for_partition(self, topic: str, partition: int) -> PartitionEvents:
        return PartitionEvents(self, topic, partition)

    @staticmethod
    def _call(listener: PartitionListener, event: str, topic: str, partition: int) -> None:
        try:
            listener(topic, partition)
        except Exception:  # the change stands; the other subscribers still hear of it
            logger.exception("subscriber %r of %s %s-%d failed", listener, event, topic, partition)


@dataclass(frozen=True, slots=True)
class PartitionEvents:
    """The emitter one partition log holds: `LogEvents` bound to its topic-partition."""

    events: LogEvents
    topic: str
    partition: int

    def appended(self) -> None:
        self.events.appended(self.topic, self.partition)

    def log_start_moved(self) -> None:
        self.events.log_start_moved(self.topic, self.partition)
