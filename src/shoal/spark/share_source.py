"""`spark.readStream.format("shoal-share")`: a share group as a Spark streaming source.

The driver's member acquires records from the share group; a micro-batch is the set
of records acquired for it, named in its offset JSON (share_offsets.py); executors read
those offset ranges with plain Fetch (`reading.read_range`), keep only the acquired
offsets and add their `delivery_count`; the records are acknowledged ACCEPT only once
Spark has durably committed the batch (share_driver.py has the rules). Columns: those
of the batch source (`key`, `value`, `topic`, `partition`, `offset`, `timestamp`,
`timestampType`, `headers`) plus `delivery_count`.

Where things run (docs/design/spark-connector.md §2): `ShareSourceDataSource` and
`schema()` in short-lived planner workers (options are checked and the broker probed
there, so mistakes fail `load()`); `streamReader()` both in a planner worker (whose
reader is pickled to the executors for `read()`) and in the query's long-lived source
runner, which alone calls the offset methods. The reader therefore starts its
`ShareDriver` lazily, at its first offset call, and never pickles it. That first call
also installs a SIGTERM handler raising SystemExit, so that the runner's `finally:
reader.stop()` runs when Spark ends the runner (query stop, end of AvailableNow);
`stop()` is idempotent. Given the query's checkpoint as the `checkpointLocation`
option, the member joins with the member id kept there (a restarted query rejoins as
the member it was) and `stop()` also ACCEPTs the batches Spark committed after the last
trigger (share_checkpoint.py).

How many records the group archived after they kept failing: `arch` in every offset
JSON (durable, visible as the source's `endOffset` in the query progress) and
`archived` in `reportLatestOffset()` (the source's `latestOffset` in the progress).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any, Final

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from shoal.spark.options import require_reachable
from shoal.spark.reading import ARROW_SCHEMA, SCHEMA_DDL, read_range
from shoal.spark.share_checkpoint import ReplayLog, committed_offsets, kept_member_id
from shoal.spark.share_driver import ShareDriver
from shoal.spark.share_group import MemberSettings, ShareGroupMember
from shoal.spark.share_offsets import INITIAL_OFFSET, ChunkPart, ShareOffset, split
from shoal.spark.share_options import (
    RECORDS_PER_BATCH_MAX,
    SOURCE_NAME,
    ShareOptions,
    parse_share_options,
)

log = logging.getLogger(__name__)

SHARE_SCHEMA_DDL: Final = SCHEMA_DDL + ", delivery_count int"
SHARE_ARROW_SCHEMA: Final = ARROW_SCHEMA.append(pa.field("delivery_count", pa.int32()))


class ShareSourceDataSource(DataSource):
    """The `shoal-share` data source (streaming read only)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        options = parse_share_options(self.options)
        require_reachable(options.bootstrap, security=options.security)
        return SHARE_SCHEMA_DDL

    def streamReader(self, schema: Any) -> ShareStreamReader:
        return ShareStreamReader(parse_share_options(self.options))


class ShareChunk(InputPartition):
    """What one Spark task reads: spans of one or more topic-partitions."""

    def __init__(self, parts: Sequence[ChunkPart]) -> None:
        super().__init__(tuple(parts))
        self.parts = tuple(parts)


class ShareStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """See the module docstring."""

    def __init__(self, options: ShareOptions) -> None:
        self.options = options
        self._driver: ShareDriver | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_driver": None}

    # ---- driver side (the source runner)

    def _drive(self) -> ShareDriver:
        if self._driver is None:
            options = self.options
            checkpoint = options.checkpoint
            member = ShareGroupMember(
                MemberSettings(
                    bootstrap=options.bootstrap,
                    security=options.security,
                    group_id=options.group_id,
                    topics=options.topics,
                    group_configs=options.group_configs,
                    lock_renew_interval_ms=options.lock_renew_interval_ms,
                    read_committed=options.read_committed,
                    member_id=_kept_member_id(checkpoint, options.group_id),
                )
            )
            member.start()
            self._driver = ShareDriver(
                member,
                acquire_wait_ms=options.acquire_wait_ms,
                committed=None if checkpoint is None else partial(committed_offsets, checkpoint),
                replay_log=None if checkpoint is None else ReplayLog(checkpoint, options.group_id),
                records_per_batch=options.records_per_batch,
                delivery_count_limit=member.delivery_count_limit,
            )
            _install_sigterm_handler()
            log.info(
                "shoal-share source joined group %s as member %s (topics %s)",
                options.group_id,
                member.member_id,
                list(options.topics),
            )
        return self._driver

    def initialOffset(self) -> dict[str, Any]:
        return INITIAL_OFFSET.to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.options.records_per_batch)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        end = self._drive().latest_offset(
            ShareOffset.from_json(start), records_max=self._records_max(limit)
        )
        return start if end is None else end.to_json()

    def _records_max(self, limit: ReadLimit) -> int:
        if isinstance(limit, ReadAllAvailable):
            return RECORDS_PER_BATCH_MAX
        max_rows = getattr(limit, "max_rows", None)
        if isinstance(max_rows, int) and max_rows > 0:
            return min(max_rows, RECORDS_PER_BATCH_MAX)
        return self.options.records_per_batch

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._driver is None else self._driver.status()

    def prepareForTriggerAvailableNow(self) -> None:
        self._drive().bound()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[ShareChunk]:
        if start == end:
            return []
        spans = self._drive().batch(ShareOffset.from_json(end))
        tasks = self.options.tasks_per_batch or max(len(spans), 1)
        return [ShareChunk(parts) for parts in split(spans, tasks)]

    def commit(self, end: dict[str, Any]) -> None:
        if self._driver is not None:
            self._driver.commit(ShareOffset.from_json(end))

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.stop()

    # ---- executor side

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ShareChunk), type(partition)
        isolation_level = 1 if self.options.read_committed else 0
        for part in partition.parts:
            firsts = np.array([s.first for s in part.spans], np.int64)
            lasts = np.array([s.last for s in part.spans], np.int64)
            counts = np.array([s.delivery_count for s in part.spans], np.int32)
            for batch in read_range(
                self.options.bootstrap,
                part.topic,
                part.partition,
                part.start_offset,
                part.end_offset,
                isolation_level=isolation_level,
                security=self.options.security,
            ):
                yield _keep_acquired(batch, firsts, lasts, counts)


def _keep_acquired(
    batch: pa.RecordBatch, firsts: np.ndarray, lasts: np.ndarray, counts: np.ndarray
) -> pa.RecordBatch:
    """The rows of `batch` whose offset lies in one of the spans, with its delivery
    count appended (holes between spans belong to other consumers of the group)."""
    offsets = batch.column("offset").to_numpy()
    index = np.searchsorted(firsts, offsets, side="right") - 1
    clipped = np.clip(index, 0, None)
    keep = (index >= 0) & (offsets <= lasts[clipped])
    if not keep.all():
        batch = batch.filter(pa.array(keep))
        clipped = clipped[keep]
    return pa.RecordBatch.from_arrays(
        [*batch.columns, pa.array(counts[clipped], pa.int32())], schema=SHARE_ARROW_SCHEMA
    )


def _kept_member_id(checkpoint: Path | None, group_id: str) -> str | None:
    """The member id kept with the query's checkpoint (None: no checkpoint given, or it
    cannot be written; the member then joins with a new id)."""
    if checkpoint is None:
        return None
    try:
        return kept_member_id(checkpoint, group_id)
    except OSError:
        log.warning(
            "share group %s: the member id cannot be kept in checkpoint %s; joining as a new "
            "member (a restarted query leaves a ghost member until its session times out)",
            group_id,
            checkpoint,
            exc_info=True,
        )
        return None


def _install_sigterm_handler() -> None:
    """Make SIGTERM raise SystemExit in the runner's main thread, so Spark's
    `finally: reader.stop()` runs when it ends the runner."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut stop()
        raise SystemExit(f"shoal-share source runner got signal {signum}")

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread: Spark's runner always calls from it
        log.warning("shoal-share: SIGTERM handler not installed (not in the main thread)")
