"""The share coordinator in the running broker: `__share_group_state`, loading and
maintenance timers.

`ShareStateService.open` ensures the state topic (coordinators.md §2.6:
`share.coordinator.state.topic.num.partitions` partitions, infinite retention, no
compression; an existing topic keeps its partition count), builds the
`ShareCoordinator` (share_coordinator/) with one `LogRecordSink` per partition, and
replays every partition into its shard before the broker serves anything. The
coordinator is the broker's `Persister`: the share-partition leader, the group
coordinator's initialise/delete effects and the state RPCs (83-87) all call it
synchronously, and a state write is in the log (page cache; fsync per the topic's
flush settings, like every Kafka log) before its caller answers anyone: at once, or,
with an append linger, staged and written before any response that made it leaves.

Timers (`timer_sources()`, fired by the broker's timer driver, server/timers.py):

- every `share.coordinator.cold.partition.snapshot.interval.ms`: a snapshot for every
  key left on updates for that long (`write_cold_snapshots`);
- the append linger (`share.coordinator.append.linger.ms`, server/state_linger.py):
  with a linger of 0 or more, state writes are staged and written as one batch per
  partition when it has passed, and requests wait for their writes before answering;
- once when loaded, and every `share.coordinator.state.topic.prune.interval.ms`:
  each partition's log is
  deleted below the lowest offset any key's latest snapshot still needs
  (`prune_offsets`, then `PartitionLog.delete_records_before`: the log start offset
  moves there and whole segments below it are set aside, then removed by the
  `remove_paths` the service was given: the broker's disk worker threads, so the
  unlinks do not block the loop). Replay after a restart
  starts at the log start offset and so still sees every key's latest snapshot and
  the updates after it.

A timer failure is logged with context by the driver and the timer goes on after
its backoff.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from shoal.clock import Clock
from shoal.config import BrokerConfig
from shoal.coordinator.internal_topics import ensure_internal_topic
from shoal.coordinator.log_sink import read_log
from shoal.coordinator.pruning import RemovePaths, prune_log
from shoal.log import fileio
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.server.state_linger import NO_LINGER, StateAppendLinger
from shoal.server.timers import PeriodicTimer, TimerSource
from shoal.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from shoal.share_coordinator.records import CODEC

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"


class ShareStateService:
    """The durable share coordinator of this broker. See the module docstring."""

    def __init__(
        self,
        *,
        coordinator: ShareCoordinator,
        partitions: list[PartitionLog],
        clock: Clock,
        config: BrokerConfig,
        remove_paths: RemovePaths = fileio.remove_paths,
        append_linger: StateAppendLinger | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.append_linger = append_linger or StateAppendLinger(clock=clock, linger_ms=NO_LINGER)
        """Batching of state writes (`share.coordinator.append.linger.ms`)."""
        self.partitions = partitions
        self._clock = clock
        self._remove_paths = remove_paths
        self._prune_interval_ms = config.get_int("share.coordinator.state.topic.prune.interval.ms")
        self._cold_interval_ms = config.get_int(
            "share.coordinator.cold.partition.snapshot.interval.ms"
        )

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
            partitions=config.get_int("share.coordinator.state.topic.num.partitions"),
            configs={
                "segment.bytes": config.get_int("share.coordinator.state.topic.segment.bytes"),
            },
        )
        settings = dataclasses.replace(
            ShareCoordinatorSettings.from_config(config), num_partitions=len(partitions)
        )
        linger = StateAppendLinger(
            clock=clock, linger_ms=config.get_int("share.coordinator.append.linger.ms"), rearm=rearm
        )
        sinks = linger.sinks(partitions, encode=CODEC.encode)
        coordinator = ShareCoordinator(sink_for=sinks.__getitem__, clock=clock, settings=settings)
        buffer_bytes = config.get_int("share.coordinator.load.buffer.size")
        linger.reload = lambda index: coordinator.load_partition(
            index, read_log(partitions[index], CODEC.decode, buffer_bytes=buffer_bytes)
        )
        started = clock.monotonic_ms()
        records = 0
        for index, partition in enumerate(partitions):
            pairs = list(read_log(partition, CODEC.decode, buffer_bytes=buffer_bytes))
            records += len(pairs)
            coordinator.load_partition(index, pairs)
        log.info(
            "share coordinator loaded %d records from %d partitions of %s in %d ms",
            records,
            len(partitions),
            SHARE_STATE_TOPIC,
            clock.monotonic_ms() - started,
        )
        service = cls(
            coordinator=coordinator,
            partitions=partitions,
            clock=clock,
            config=config,
            remove_paths=remove_paths,
            append_linger=linger,
        )
        # Prune once now, not only one interval after the start: a broker that keeps
        # crashing sooner than that would otherwise replay an ever longer log at each
        # start (the crash soak saw load times grow to seconds).
        service._logged(service.prune(), "pruning at load")
        return service

    # ---- maintenance --------------------------------------------------------------------

    def prune(self) -> int:
        """Delete each partition's records below what its shard still needs; returns
        the number of partitions whose log start moved. A partition with state writes
        staged under the append linger is skipped: its shard is ahead of its log, and
        if that batch were lost the shard reloads from records below its offset."""
        moved = 0
        for index, offset in sorted(self.coordinator.prune_offsets().items()):
            if self.append_linger.staged(index):
                continue
            if prune_log(self.partitions[index], offset, remove_paths=self._remove_paths):
                moved += 1
        return moved

    def write_cold_snapshots(self) -> int:
        return self.coordinator.write_cold_snapshots(self._clock.wall_ms())

    def timer_sources(self) -> list[TimerSource]:
        """Cold snapshots, pruning and the append linger, for the broker's timer driver."""
        linger = [self.append_linger.timer_source()] if self.append_linger.enabled else []
        return [
            *linger,
            PeriodicTimer(
                "share-coordinator-cold-snapshots",
                interval_ms=lambda: self._cold_interval_ms,
                action=lambda _now: self._logged(self.write_cold_snapshots(), "cold snapshots"),
            ),
            PeriodicTimer(
                "share-coordinator-prune",
                interval_ms=lambda: self._prune_interval_ms,
                action=lambda _now: self._logged(self.prune(), "pruning"),
            ),
        ]

    @staticmethod
    def _logged(done: int, what: str) -> None:
        if done:
            log.info("share coordinator %s: %s partitions or keys", what, done)
