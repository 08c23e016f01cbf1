"""The public face of the log package: value types and errors shared by its users.

Handlers, and later share-partitions, use only what this module and
`PartitionLog` / `LogManager` expose. Errors carry the Kafka `ErrorCode` their
callers put in a response.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import BatchHeader

if TYPE_CHECKING:
    from shoal.log.flush import FlushPlan


class LogError(Exception):
    """A log operation failed in a way the client must hear about: `code` says which
    Kafka error, the message says what happened, naming the partition or topic."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class AppendResult:
    """What an append did. Never changed once built (not frozen: a frozen dataclass
    sets each field through `object.__setattr__`, several times the cost, and one is
    built per Produce partition and per coordinator write)."""

    base_offset: int
    """Offset of the first record appended (or, for a duplicate batch, first stored)."""
    last_offset: int
    log_append_time_ms: int
    """-1 unless the topic uses LogAppendTime."""
    log_start_offset: int
    duplicate: bool = False
    """The batch repeated one already stored (idempotent retry): nothing was written."""
    flush_plan: FlushPlan | None = None
    """With `append(defer_flush=True)`: the fsync the flush policy asks for, to run
    (any thread) and finish (`PartitionLog.finish_flush`) before acknowledging."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: bytes
    """Whole record batches, stored bytes as they are (possibly empty)."""
    headers: list[BatchHeader]
    """Headers of the batches in `records`; positions are relative to `records`."""
    high_watermark: int
    log_start_offset: int


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, Any] = field(default_factory=dict)
    """Typed topic-level overrides (see shoal.config.TOPIC_KEYS)."""
    internal: bool = False
