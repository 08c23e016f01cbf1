"""The metadata log in the broker: `__cluster_metadata-0` and the one metadata shard.

`MetadataLog.open` opens (creating if absent) the single-partition internal log
`<data_dir>/__cluster_metadata-0`, fsyncs what a crash may have left unsynced, and
rebuilds the `MetadataShard` (metadata/shard.py) by replaying the whole log through
the coordinator runtime (the broker then migrates the JSON and properties files older
versions kept the metadata in: server/metadata/migration.py). The log is no topic:
the log manager skips its directory and no API lists it, as Kafka's tools never list
`__cluster_metadata`.

`write(result)` is the one path by which any metadata changes, the coordinator
runtime's rule with the fsync taken off the event loop: the result's records are
appended as one batch (on the loop; the log's own flush policy is switched off), the
batch is fsynced in a disk worker (`flush`, the broker's `DiskIO.flush`), and only
then are the records replayed into the shard and the response returned (the runtime's
write split in two: `append`, then `replay_appended`; docs/design/coordinators.md). Callers run
their changes in the broker's change lane (server/services/disk_io.py), one at a time, so no
change is decided while another's records wait for their fsync; a reader on the loop
(an authorization check, Metadata, DescribeConfigs) sees the image before the change
until it is durable. A failed append or fsync raises `MetadataWriteError`, an
OSError as the stores' file writes raised before, so the handlers answer as they did;
nothing was replayed. (After a failed fsync the log is offline and refuses every
later append; what reached the disk is unknown, and may be replayed at the next
start.) `write_now` is the same on the caller's thread (start-up migration, tests);
`append_durably` appends and fsyncs on the caller's thread and hands back the replay
for the owner to run: a topic change's disk work, in a disk worker inside the change
lane (server/metadata/topic_catalog.py). At start-up `compact` replaces a long, mostly dead
history by the state's snapshot (docs/design/metadata-log.md, "Compaction").

Readers take `image`, an immutable snapshot (metadata/image.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from shoal import limits
from shoal.clock import Clock
from shoal.config import BrokerConfig, effective_topic_config, validate_topic_configs
from shoal.coordinator.internal_topics import INTERNAL_TOPIC_CONFIGS
from shoal.coordinator.log_sink import LogRecordSink, read_log
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import CoordinatorRuntime, RecordSinkError
from shoal.log.api import LogError
from shoal.log.flush import FlushPlan
from shoal.log.partition import PartitionLog
from shoal.log.topics import METADATA_LOG_DIR
from shoal.metadata.image import MetadataImage
from shoal.metadata.records import CODEC, MetadataRecord
from shoal.metadata.shard import MetadataShard

log = logging.getLogger(__name__)

METADATA_DIR = METADATA_LOG_DIR
"""The metadata log's directory in the data directory."""
_LOAD_BUFFER_BYTES = 1 << 20
"""Bytes read at a time when the log is replayed at start (a larger batch is read whole)."""
_RECORD_OVERHEAD_BYTES = 32
"""A record's framing in its batch beyond its key and value (varints, attributes),
rounded up."""
_NEVER = str(2**63 - 1)
"""flush.messages and flush.ms of the metadata log: it never fsyncs by policy, only
through `write` (off the loop)."""

Flush = Callable[[PartitionLog, FlushPlan], Awaitable[None]]
"""Runs a flush plan and finishes it on the log (`DiskIO.flush`); raises LogError."""

_PARTITION = 0
"""The metadata log's one partition, as the runtime numbers it."""

R = TypeVar("R")


class MetadataWriteError(OSError):
    """The metadata log refused or failed an append: nothing was replayed."""


class MetadataLog:
    """The metadata shard hosted on `__cluster_metadata-0` (module docstring)."""

    def __init__(self, *, partition: PartitionLog, clock: Clock) -> None:
        self.partition = partition
        self._sink = LogRecordSink(log=partition, encode=CODEC.encode, clock=clock)
        self.runtime: CoordinatorRuntime[MetadataShard, MetadataRecord] = CoordinatorRuntime(
            new_shard=lambda _partition: MetadataShard(),
            sinks=[self._sink],
            name=METADATA_DIR,
        )
        """Hosts the shard on its one partition (0) and loads it (`load_partition`).
        `write` is the runtime's write split in two (`append`, then
        `replay_appended`) with the fsync awaited between."""
        self.flush: Flush = _flush_in_place
        """How `write` fsyncs; the broker sets its `DiskIO.flush`."""

    @classmethod
    def open(cls, config: BrokerConfig, clock: Clock) -> MetadataLog:
        """Open and replay the metadata log of `config.data_dir` (the broker then
        migrates older versions' files: `open_metadata_log` in server/metadata/migration.py).
        Raises LogError if the log cannot be opened or read."""
        data_dir: Path = config.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        settings = validate_topic_configs(
            {
                **INTERNAL_TOPIC_CONFIGS,
                "segment.bytes": str(config.get_int("metadata.log.segment.bytes")),
                "flush.messages": _NEVER,
                "flush.ms": _NEVER,
            }
        )
        partition = PartitionLog.open(
            directory=data_dir / METADATA_DIR,
            config=effective_topic_config(config, settings),
            clock=clock,
        )
        partition.flush_loaded()  # what a crash left unsynced, before acting on it
        metadata = cls(partition=partition, clock=clock)
        shard = metadata.runtime.load_partition(
            _PARTITION, read_log(partition, CODEC.decode, buffer_bytes=_LOAD_BUFFER_BYTES)
        )
        log.info(
            "metadata log %s: %d records replayed (offsets %d..%d)",
            METADATA_DIR,
            shard.records_replayed,
            partition.log_start_offset,
            partition.log_end_offset,
        )
        metadata.compact()
        return metadata

    def compact(self) -> bool:
        """At start-up: when the log holds at least `limits.METADATA_COMPACT_RECORDS_MIN`
        records and more than twice as many as the state needs, append the state's
        snapshot (`MetadataShard.snapshot`) and move the log start to it, so the
        history below goes (whole segments are deleted). True if it did. A crash
        between the two leaves the history and the snapshot: replaying both gives the
        same state. Raises `MetadataWriteError` or the log's LogError."""
        partition = self.partition
        held = partition.log_end_offset - partition.log_start_offset
        if held < limits.METADATA_COMPACT_RECORDS_MIN:
            return False
        snapshot = self.shard.snapshot()
        if held <= 2 * len(snapshot):
            return False
        start = partition.log_end_offset
        self.write_now_in_batches(snapshot)
        partition.delete_records_before(start)
        log.info(
            "metadata log %s compacted: %d records of history replaced by a %d-record "
            "snapshot at offset %d",
            METADATA_DIR,
            held,
            len(snapshot),
            start,
        )
        return True

    @property
    def shard(self) -> MetadataShard:
        """Decide changes with it; change it only through `write`."""
        return self.runtime.shard_at(_PARTITION)

    @property
    def image(self) -> MetadataImage:
        """The metadata now, as an immutable snapshot."""
        return self.runtime.shard_at(_PARTITION).image

    async def write(self, result: CoordinatorResult[MetadataRecord, R]) -> R:
        """Append `result`'s records, fsync them off the loop, replay them, return the
        response. Raises `MetadataWriteError` (nothing replayed) if the log refuses
        or fails them. Call in the change lane."""
        records = result.records
        if records:
            base = self._append(records)
            plan = self._plan()
            if plan is not None:
                try:
                    await self.flush(self.partition, plan)
                except LogError as exc:
                    raise self._failed(records, exc) from exc
            self._replay(records, base)
        return result.response

    def write_now(self, result: CoordinatorResult[MetadataRecord, R]) -> R:
        """`write` with the fsync on the caller's thread."""
        return self.append_durably(result)()

    def write_now_in_batches(self, records: Sequence[MetadataRecord]) -> None:
        """Write `records` in order with `write_now`, cut into appends of at most
        `limits.METADATA_STARTUP_BATCH_BYTES` encoded bytes each: for the start-up's
        large writes (a migrated file, a snapshot), whose records may be more than
        one batch can hold (`limits.COORDINATOR_BATCH_BYTES_MAX`). Not atomic: each
        caller's records may be written again whole (they set values, they remove
        nothing)."""
        batch: list[MetadataRecord] = []
        size = 0
        for record in records:
            key, value = CODEC.encode(record)
            record_bytes = len(key) + len(value or b"") + _RECORD_OVERHEAD_BYTES
            if batch and size + record_bytes > limits.METADATA_STARTUP_BATCH_BYTES:
                self.write_now(CoordinatorResult(tuple(batch), None))
                batch, size = [], 0
            batch.append(record)
            size += record_bytes
        if batch:
            self.write_now(CoordinatorResult(tuple(batch), None))

    def append_durably(self, result: CoordinatorResult[MetadataRecord, R]) -> Callable[[], R]:
        """Append `result`'s records and fsync them on the caller's thread (any
        thread, while no other write runs: a topic change's disk work); returns the
        replay, which gives the response, to run on the owner. Raises
        `MetadataWriteError`."""
        records = result.records
        if not records:
            return lambda: result.response
        base = self._append(records)
        plan = self._plan()
        if plan is not None:
            try:
                _run_flush(self.partition, plan)
            except LogError as exc:
                raise self._failed(records, exc) from exc

        def replay() -> R:
            self._replay(records, base)
            return result.response

        return replay

    def _append(self, records: tuple[MetadataRecord, ...]) -> int | Sequence[int]:
        try:
            return self.runtime.append(_PARTITION, records)
        except RecordSinkError as exc:
            raise self._failed(records, exc) from exc

    def _plan(self) -> FlushPlan | None:
        try:
            return self.partition.flush_plan()
        except LogError as exc:
            raise MetadataWriteError(f"metadata not written: {exc}") from exc

    def _replay(self, records: tuple[MetadataRecord, ...], appended: int | Sequence[int]) -> None:
        self.runtime.replay_appended(_PARTITION, records, appended)

    @staticmethod
    def _failed(records: tuple[MetadataRecord, ...], exc: Exception) -> MetadataWriteError:
        log.error("metadata log: %d records not written: %s", len(records), exc)
        return MetadataWriteError(f"metadata not written: {exc}")

    def close(self) -> None:
        self.partition.close()


def _run_flush(partition: PartitionLog, plan: FlushPlan) -> None:
    plan.run()
    partition.finish_flush(plan)


async def _flush_in_place(partition: PartitionLog, plan: FlushPlan) -> None:
    _run_flush(partition, plan)
