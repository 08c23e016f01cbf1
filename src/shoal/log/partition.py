"""One partition's log: segments of stored record batches. (INTERFACE STUB: to be implemented.)

Owns: the segment files of one partition directory, their offset and time indexes,
the log start and end offsets, the flush policy, retention, recovery on open, and the
idempotent-producer state of the partition. Batches are stored verbatim after offset
assignment (base offset and leader epoch patched in the header; records untouched).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shoal.clock import Clock
from shoal.log.api import AppendResult, ReadResult
from shoal.protocol.record_batch import BatchHeader


class PartitionLog:
    @classmethod
    def open(cls, *, directory: Path, config: dict[str, Any], clock: Clock) -> PartitionLog:
        """Open (creating if absent) and recover the log in `directory`. `config` is the
        topic's effective config (shoal.config.effective_topic_config)."""
        raise NotImplementedError

    @property
    def log_start_offset(self) -> int:
        raise NotImplementedError

    @property
    def log_end_offset(self) -> int:
        """Next offset to assign; the high watermark on a single node."""
        raise NotImplementedError

    @property
    def size_bytes(self) -> int:
        raise NotImplementedError

    def update_config(self, config: dict[str, Any]) -> None:
        raise NotImplementedError

    def append(self, records: bytes, headers: list[BatchHeader], *, leader_epoch: int) -> AppendResult:
        """Append validated batches (`headers` from validate_produced over `records`).
        Checks idempotent-producer sequences; raises LogError on a sequence gap or a
        fenced epoch; a duplicate batch returns its stored offsets with duplicate=True."""
        raise NotImplementedError

    def read(self, offset: int, *, max_bytes: int, min_one_batch: bool = True) -> ReadResult:
        """Whole batches from the batch containing `offset`, up to `max_bytes` (the
        first batch whole even if larger, when min_one_batch). Raises LogError
        OFFSET_OUT_OF_RANGE outside [log_start_offset, log_end_offset]."""
        raise NotImplementedError

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch with max timestamp >= timestamp_ms."""
        raise NotImplementedError

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp."""
        raise NotImplementedError

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to `offset`; returns the new log start offset."""
        raise NotImplementedError

    def enforce_retention(self, *, now_wall_ms: int) -> int:
        """Delete segments past retention.ms / retention.bytes; returns bytes freed."""
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError

    def flush_if_due(self, *, now_ms: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
