"""Append batching for a coordinator's internal-topic partition (`*.append.linger.ms`).

Owns `LingeringRecordSink`: a `RecordSink` that stages the records of the writes
arriving within the linger and writes them to the partition log as ONE record batch
(one append, one flush decision) when the linger has passed, as Kafka's coordinator
runtime does with `share.coordinator.append.linger.ms`. With a linger of 0 the writes
made before the owner next looks at the deadline (those of one request, or of one
pass of the event loop) share a batch; the unbatched behaviour (linger -1) is the
plain `LogRecordSink`, not this class.

`append(records)` encodes the records, stages them and returns the offset the first
will have: this sink is the only writer of its log, so that is the log end offset
plus the records already staged. The runtime then replays them into the shard, so
the shard runs ahead of the log by the staged records, exactly until `flush`.
Whoever answers a client for a write must therefore wait until the sink has flushed
what was staged before the answer (`appends_staged` / `appends_written` count the
appends; the server's `StateAppendLinger` does the waiting), which keeps the
coordinator rule: nothing a client is told is ahead of what was written.

Bounds: the staged batch never exceeds `batch_bytes_max` (default
`limits.COORDINATOR_BATCH_BYTES_MAX`): a write whose records would push it past is
preceded by a flush of what is staged, and a write too large on its own raises
`CoordinatorBatchTooLarge` and stages nothing (as `LogRecordSink` does). Sizes are
counted with an upper bound per record (`RECORD_OVERHEAD_BYTES_MAX`), so the batch
built at the flush always fits.

Failures: a flush whose append fails (`RecordSinkUnavailable`, the log went offline)
loses the staged records; `on_flushed(failure)` tells the owner (the coordinator
runtime), which must fail the answers waiting for them and rebuild the shard from
the log (it replayed records the log does not hold). A flush forced by `append`
that fails raises from `append`: that write is refused whole (nothing of it staged
or replayed).

Sans-I/O in the layering sense: time from the injected clock, no asyncio; the owner
calls `flush_due(now_ms)` when `deadline_ms` comes (the broker's timer driver).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from shoal import limits
from shoal.clock import Clock
from shoal.coordinator.log_sink import CoordinatorBatchTooLarge, Encode, LogRecordSink
from shoal.coordinator.sink import RecordSinkError
from shoal.log.partition import PartitionLog

R = TypeVar("R")

Encoded = tuple[bytes, bytes | None]
"""A record as its (key, value) bytes (value None: a tombstone)."""

BATCH_OVERHEAD_BYTES = 61
"""A magic-2 record batch's header (offsets, length, epoch, CRC, attributes, ...)."""
RECORD_OVERHEAD_BYTES_MAX = 32
"""The most one record adds besides its key and value: length, attributes,
timestamp delta, offset delta, key and value lengths (varints) and a header count."""


def encoded_identity(record: Encoded) -> Encoded:
    """The `encode` of the log sink underneath: records are staged already encoded."""
    return record


class LingeringRecordSink(Generic[R]):
    """A `RecordSink` batching the appends of a linger (module docstring)."""

    def __init__(
        self,
        *,
        log: PartitionLog,
        encode: Encode[R],
        clock: Clock,
        linger_ms: int,
        batch_bytes_max: int = limits.COORDINATOR_BATCH_BYTES_MAX,
        on_staged: Callable[[], None] = lambda: None,
        on_flushed: Callable[[RecordSinkError | None], None] = lambda _failure: None,
    ) -> None:
        assert linger_ms >= 0, linger_ms
        assert batch_bytes_max > BATCH_OVERHEAD_BYTES, batch_bytes_max
        self._log_sink: LogRecordSink[Encoded] = LogRecordSink(
            log=log, encode=encoded_identity, clock=clock, batch_bytes_max=batch_bytes_max
        )
        self._encode = encode
        self._clock = clock
        self._linger_ms = linger_ms
        self._batch_bytes_max = batch_bytes_max
        self._on_staged = on_staged
        self.on_flushed = on_flushed
        """Told of each flush's outcome (None: written). The coordinator runtime
        hosting this sink sets it (coordinator/runtime.py)."""
        self._staged: list[Encoded] = []
        self._staged_bytes = BATCH_OVERHEAD_BYTES
        self._staged_since_ms: int | None = None
        self.appends_staged = 0
        """Appends accepted so far (staged or written)."""
        self.appends_written = 0
        """Appends whose records are in the log (or lost by a failed flush)."""
        self.batches_written = 0

    @property
    def linger_ms(self) -> int:
        return self._linger_ms

    @property
    def staged_records(self) -> int:
        return len(self._staged)

    @property
    def deadline_ms(self) -> int | None:
        """When the staged records are due to be written (None: nothing staged)."""
        if self._staged_since_ms is None:
            return None
        return self._staged_since_ms + self._linger_ms

    def append(self, records: Sequence[R], /) -> int:
        """Stage `records` for the next batch; returns the offset the first will have.
        Raises `CoordinatorBatchTooLarge` (alone above the bound) or, when staged
        records had to be flushed first and that failed, `RecordSinkUnavailable`."""
        assert records, "a coordinator append has at least one record"
        encoded = [self._encode(record) for record in records]
        size = sum(_size_bound(entry) for entry in encoded)
        if BATCH_OVERHEAD_BYTES + size > self._batch_bytes_max:
            return self._append_alone(encoded)
        if self._staged and self._staged_bytes + size > self._batch_bytes_max:
            self.flush()
        first = self._log_sink.log.log_end_offset + len(self._staged)
        self._staged.extend(encoded)
        self._staged_bytes += size
        self.appends_staged += 1
        if self._staged_since_ms is None:
            self._staged_since_ms = self._clock.monotonic_ms()
            self._on_staged()
        return first

    def flush_due(self, now_ms: int) -> bool:
        """Write the staged records if their linger has passed; True if it wrote (or
        tried to). A failure is reported to `on_flushed`, not raised."""
        deadline = self.deadline_ms
        if deadline is None or now_ms < deadline:
            return False
        try:
            self.flush()
        except RecordSinkError:
            pass  # reported through on_flushed
        return True

    def flush(self) -> None:
        """Write everything staged as one batch now. Raises what the log sink raises
        (after reporting it to `on_flushed`); the staged records are gone either way."""
        if not self._staged:
            return
        staged, expected = self._staged, self._log_sink.log.log_end_offset
        self._staged, self._staged_bytes, self._staged_since_ms = [], BATCH_OVERHEAD_BYTES, None
        self.appends_written = self.appends_staged
        try:
            first = self._log_sink.write(self._log_sink.prepare(staged))
        except RecordSinkError as exc:
            self.on_flushed(exc)
            raise
        assert first == expected, f"coordinator log written by someone else: {first} != {expected}"
        self.batches_written += 1
        self.on_flushed(None)

    def _append_alone(self, encoded: list[Encoded]) -> int:
        """A write near the bound on its own: checked exactly, then written at once
        (after what is staged) as a batch of its own."""
        prepared = self._log_sink.prepare(encoded)  # raises CoordinatorBatchTooLarge
        self.flush()
        first = self._log_sink.write(prepared)
        self.appends_staged += 1
        self.appends_written = self.appends_staged
        self.batches_written += 1
        return first


def _size_bound(entry: Encoded) -> int:
    key, value = entry
    return len(key) + (0 if value is None else len(value)) + RECORD_OVERHEAD_BYTES_MAX


__all__ = [
    "BATCH_OVERHEAD_BYTES",
    "RECORD_OVERHEAD_BYTES_MAX",
    "CoordinatorBatchTooLarge",
    "Encoded",
    "LingeringRecordSink",
    "encoded_identity",
]
