"""The share coordinator in the running broker: `__share_group_state`, its sinks, and
the hook-up to the timer driver.

`ShareStateService.open` ensures the state topic (docs/design/coordinators.md §2.6:
`share.coordinator.state.topic.num.partitions` partitions, infinite retention, no
compression; an existing topic keeps its partition count), builds the
`ShareCoordinator` (share_coordinator/: its shards on one coordinator runtime) with
one sink per partition and the log reader as the runtime's loader, and loads every
partition before the broker serves anything. The coordinator is the broker's
`Persister`: the share-partition leader, the group coordinator's initialise/delete
effects and the state RPCs (83-87) call it synchronously, and a state write is in the
log (page cache; fsync per the topic's flush settings, like every Kafka log) before
its caller answers anyone: at once, or, with an append linger
(`share.coordinator.append.linger.ms`, server/services/state_linger.py), staged and written
before any response that made it leaves.

Timers (`timer_sources()`, fired by the broker's timer driver, server/services/timers.py): the
runtime's timed writes (cold snapshots every
`share.coordinator.cold.partition.snapshot.interval.ms`, and the pruning pass every
`share.coordinator.state.topic.prune.interval.ms`) as one source
(server/services/coordinator_host.py, which deletes what the pass reports), and the linger's
flush as another. Pruning also runs once when loaded: a broker that keeps
crashing sooner than one interval would otherwise replay an ever longer log at each
start (the crash soak saw load times grow to seconds).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from shoal.clock import Clock
from shoal.config import BrokerConfig, broker_keys
from shoal.coordinator.internal_topics import ensure_internal_topic
from shoal.coordinator.pruning import RemovePaths
from shoal.log import fileio
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.server.services.coordinator_host import LogLoader, RuntimeTimer, load_all, prune_logs
from shoal.server.services.state_linger import StateAppendLinger
from shoal.server.services.timers import TimerSource
from shoal.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from shoal.share_coordinator.coordinator import SHARE_STATE_TOPIC
from shoal.share_coordinator.records import CODEC

log = logging.getLogger(__name__)

__all__ = ["SHARE_STATE_TOPIC", "ShareStateService"]


class ShareStateService:
    """The durable share coordinator of this broker. See the module docstring."""

    def __init__(
        self,
        *,
        coordinator: ShareCoordinator,
        partitions: list[PartitionLog],
        append_linger: StateAppendLinger,
        remove_paths: RemovePaths = fileio.remove_paths,
    ) -> None:
        self.coordinator = coordinator
        self.append_linger = append_linger
        """Batching of state writes (`share.coordinator.append.linger.ms`)."""
        self.partitions = partitions
        self._remove_paths = remove_paths

    @classmethod
    def open(
        cls,
        logs: LogManager,
        config: BrokerConfig,
        clock: Clock,
        *,
        remove_paths: RemovePaths = fileio.remove_paths,
        rearm: Callable[[], None] = lambda: None,
    ) -> ShareStateService:
        """Ensure `__share_group_state`, then load every partition's shard. `rearm`
        tells the timer driver that a state write started a lingering batch."""
        partitions = ensure_internal_topic(
            logs,
            name=SHARE_STATE_TOPIC,
            partitions=config.get(broker_keys.SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS),
            configs={
                "segment.bytes": config.get(
                    broker_keys.SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES
                ),
            },
        )
        settings = dataclasses.replace(
            ShareCoordinatorSettings.from_config(config), num_partitions=len(partitions)
        )
        linger = StateAppendLinger(
            clock=clock,
            linger_ms=config.get(broker_keys.SHARE_COORDINATOR_APPEND_LINGER_MS),
            rearm=rearm,
        )
        sinks = linger.sinks(partitions, encode=CODEC.encode)
        loader = LogLoader(
            partitions,
            CODEC.decode,
            buffer_bytes=config.get(broker_keys.SHARE_COORDINATOR_LOAD_BUFFER_SIZE),
        )
        prune_interval_ms = config.get(broker_keys.SHARE_COORDINATOR_STATE_TOPIC_PRUNE_INTERVAL_MS)
        coordinator = ShareCoordinator(
            sink_for=sinks.__getitem__,
            clock=clock,
            settings=settings,
            loader=loader,
            prune_interval_ms=lambda: prune_interval_ms,
        )
        linger.attach(coordinator.runtime)
        load_all(coordinator.runtime, loader, clock=clock, what="share coordinator")
        service = cls(
            coordinator=coordinator,
            partitions=partitions,
            append_linger=linger,
            remove_paths=remove_paths,
        )
        moved = service.prune()
        if moved:
            log.info("share coordinator pruning at load: %d partitions", moved)
        return service

    def prune(self) -> int:
        """Delete each partition's records below what its shard still needs (the
        runtime's `prunable`, which leaves out partitions with staged writes);
        returns the number of partitions whose log start moved."""
        offsets = self.coordinator.runtime.prunable()
        return prune_logs(self.partitions, offsets, remove_paths=self._remove_paths)

    def timer_sources(self) -> list[TimerSource]:
        """The runtime's timed writes and the append linger, for the timer driver."""
        linger = [self.append_linger.timer_source()] if self.append_linger.enabled else []
        timed = RuntimeTimer(
            "share-coordinator",
            runtime=lambda: self.coordinator.runtime,
            partitions=lambda: self.partitions,
            remove_paths=self._remove_paths,
        )
        return [*linger, timed]
