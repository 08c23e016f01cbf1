"""Where the group coordinator's records live: `__consumer_offsets`, a shard per partition.

`open_group_log` ensures the topic (`offsets.topic.num.partitions` partitions,
`offsets.topic.segment.bytes` segments; see coordinator/internal_topics.py) and
returns a `GroupLog`: one `LogRecordSink` per partition and the runtime's loader of
each partition's records (server/services/coordinator_host.py). The group coordinator's
runtime (server/services/group_service.py) hosts a `GroupCoordinatorShard` per partition over
that partition's sink, as Kafka's GroupCoordinatorService does, and places each
group on `partition_for(group_id, n)`:
every record of a group goes to its partition, in order, and its shard alone holds
the group. Loading replays each partition into its own shard, records carrying their
offset in that partition (coordinator/pruning.py: the shard knows where each key's
latest record is). A shard sees one partition, so its log bookkeeping spans one.

`GroupLogMaintenance` keeps the topic bounded (Shoal has no compaction). The pass is
a timed write of the group runtime (group/log_maintenance.py), fired by the group
service's timer like the group's other timed writes: every
`offsets.topic.prune.interval.ms`, and as soon as a window
(`offsets.topic.rewrite.window.records`) of records was appended since the last one
(the log's `appended` events make it due with `runtime.due_now` and re-arm the timer;
the pass itself runs from the timer, never inside an append). For each partition it
writes, through the runtime, what that partition's shard's `rewrite_old_records`
returns (live keys more than a window plus the live key count below the partition's
end, re-appended; at most `limits.GROUP_LOG_REWRITE_RECORDS_PER_PASS_MAX` per pass
over all partitions, in appends of `limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND`);
then (`fired`, told by the group service) it deletes each partition below the
shard's `prune_offset` that the runtime reported, with the shared `prune_log` step
(as the share coordinator prunes `__share_group_state`). A failed re-write is logged
and tried again at the next pass. So a partition holds at most about
twice its live keys plus two windows, whatever the commit rate. A re-write that
fails leaves the old records in place (nothing is pruned past them), so a crash at
any point loses no key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shoal import limits
from shoal.clock import Clock
from shoal.config import BrokerConfig, broker_keys
from shoal.coordinator.internal_topics import ensure_internal_topic
from shoal.coordinator.log_sink import LogRecordSink
from shoal.coordinator.pruning import RemovePaths
from shoal.coordinator.runtime import Fired
from shoal.group.log_maintenance import (
    MAINTENANCE,
    GroupRuntime,
    MaintenancePass,
    maintenance_write,
)
from shoal.group.records import CODEC, CoordinatorRecord
from shoal.log import fileio
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.server.services.coordinator_host import LogLoader, prune_logs

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class GroupLog:
    """`__consumer_offsets` opened: a sink per partition, and the loader of each
    partition's records (raises `CoordinatorLogCorrupt` on a bad record)."""

    partitions: tuple[PartitionLog, ...]
    sinks: tuple[LogRecordSink[CoordinatorRecord], ...]
    loader: LogLoader[CoordinatorRecord]


def open_group_log(logs: LogManager, config: BrokerConfig, clock: Clock) -> GroupLog:
    """The sinks over `__consumer_offsets` and the records they hold. Raises
    `LogError` if the topic cannot be created or opened."""
    partitions = ensure_internal_topic(
        logs,
        name=GROUP_METADATA_TOPIC,
        partitions=config.get(broker_keys.OFFSETS_TOPIC_NUM_PARTITIONS),
        configs={"segment.bytes": config.get(broker_keys.OFFSETS_TOPIC_SEGMENT_BYTES)},
    )
    return GroupLog(
        partitions=tuple(partitions),
        sinks=tuple(LogRecordSink(log=log, encode=CODEC.encode, clock=clock) for log in partitions),
        loader=LogLoader(
            partitions, CODEC.decode, buffer_bytes=config.get(broker_keys.OFFSETS_LOAD_BUFFER_SIZE)
        ),
    )


class GroupLogMaintenance:
    """Re-writes old keys and prunes `__consumer_offsets` (module docstring): the
    pass is the group runtime's timed write (group/log_maintenance.py); this shell
    makes it due when a window of records was appended and deletes the logs below
    the offsets it reports."""

    def __init__(
        self,
        *,
        runtime: GroupRuntime,
        partitions: Sequence[PartitionLog],
        config: Callable[[], BrokerConfig],
        remove_paths: RemovePaths = fileio.remove_paths,
        records_per_pass_max: int = limits.GROUP_LOG_REWRITE_RECORDS_PER_PASS_MAX,
        rearm: Callable[[], None] = lambda: None,
    ) -> None:
        assert len(partitions) == runtime.partitions, (len(partitions), runtime.partitions)
        self._runtime = runtime
        self._partitions = tuple(partitions)
        self._config = config
        self._remove_paths = remove_paths
        self._rearm = rearm
        self._seen_ends = [p.log_end_offset for p in self._partitions]
        self._grown = 0
        """Records appended to the topic since the last pass."""
        self._pass = MaintenancePass(
            window_records=self._window, records_per_pass_max=records_per_pass_max
        )
        runtime.add_timed(maintenance_write(self._pass, interval_ms=self._interval_ms))

    def appended(self, topic: str, partition: int) -> None:
        """The log's `appended` event: once a window's worth of records was appended
        since the last pass, the pass is due now (`runtime.due_now`; the timer driver
        is re-armed; the pass runs from the timer, never inside the append that
        announced this)."""
        if topic != GROUP_METADATA_TOPIC or partition >= len(self._partitions):
            return
        end = self._partitions[partition].log_end_offset
        self._grown += max(0, end - self._seen_ends[partition])
        self._seen_ends[partition] = end
        if self._grown >= max(1, self._window()):
            self._runtime.due_now(MAINTENANCE)
            self._rearm()

    def _window(self) -> int:
        return self._config().get(broker_keys.OFFSETS_TOPIC_REWRITE_WINDOW_RECORDS)

    def _interval_ms(self) -> int:
        return self._config().get(broker_keys.OFFSETS_TOPIC_PRUNE_INTERVAL_MS)

    def fired(self, fired: Fired) -> int:
        """After the group runtime's `fire` (the group service calls this): when the
        pass ran, delete each partition below the offset it reported. Returns how many
        partitions' log start moved. The pass's own re-writes do not count towards
        the next one."""
        if MAINTENANCE not in fired.names:
            return 0
        self._grown = 0
        moved = prune_logs(self._partitions, fired.prune, remove_paths=self._remove_paths)
        self._logged(self._pass.rewritten, moved)
        return moved

    def run(self, now_ms: int) -> tuple[int, int]:
        """One pass now (the runtime's `fire` at `now_ms` with the pass due), as the
        timer would run it. Returns (records re-written, partitions whose log start
        moved)."""
        self._runtime.due_now(MAINTENANCE)
        moved = self.fired(self._runtime.fire(now_ms))
        return self._pass.rewritten, moved

    def _logged(self, rewritten: int, moved: int) -> None:
        if rewritten or moved:
            sizes = [p.log_end_offset - p.log_start_offset for p in self._partitions]
            log.info(
                "%s maintenance: %d old records re-written, %d partitions pruned, "
                "%d records retained",
                GROUP_METADATA_TOPIC,
                rewritten,
                moved,
                sum(sizes),
            )
