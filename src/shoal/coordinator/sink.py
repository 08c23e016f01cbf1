"""Where a coordinator's records go before they are replayed: the `RecordSink` contract.

A sink stores every record of one append, in order, or none of them (it raises a
`RecordSinkError`: `RecordSinkFull` when a bound refuses it, `RecordSinkUnavailable`
when storage fails). It returns the offset of the first record (the i-th has that
offset + i), each record's offset (a sink whose offsets are not consecutive), or
`NO_OFFSET` (a sink that does not count). The sinks: `InMemoryRecordSink` here (a
bounded list, for tests and brokers without a log), `LogRecordSink` on an internal
topic (coordinator/log_sink.py) and `LingeringRecordSink`
(coordinator/append_linger.py), which stages several appends into one batch.

A leaf of coordinator/: the runtime, the log sinks, the linger and pruning all
build on it, so none of them imports another to reach these names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

from shoal import limits

RecordT = TypeVar("RecordT")
RecordT_contra = TypeVar("RecordT_contra", contravariant=True)

NO_OFFSET = -1
"""The offset replayed records get when the sink assigns none (in-memory sinks that
do not count, routed sinks spanning several partitions)."""


class RecordSink(Protocol[RecordT_contra]):
    """Where a shard's records go before they are replayed."""

    def append(self, records: Sequence[RecordT_contra], /) -> int | Sequence[int]:
        """Store every record in order, or none (raise a `RecordSinkError`): a
        partial append is never allowed. Returns the offset of the first
        record (the i-th has that offset + i), each record's offset (a sink over
        several partitions: each in its own partition), or `NO_OFFSET`."""
        ...


class CoordinatorUnavailable(Exception):
    """The coordinator could not serve a write: nothing was replayed, so the shard is as
    it was. Callers answer COORDINATOR_NOT_AVAILABLE (the client retries)."""


class RecordSinkError(CoordinatorUnavailable):
    """The sink stored none of the records; nothing was replayed, so the shard is as it
    was. Callers answer COORDINATOR_NOT_AVAILABLE (the client retries)."""


class RecordSinkFull(RecordSinkError):
    """The sink refused an append because it would exceed its bound."""


class RecordSinkUnavailable(RecordSinkError):
    """The sink's storage failed the append (for a log sink: the partition is offline
    or closed)."""


class InMemoryRecordSink(Generic[RecordT]):
    """A list of records bounded by `records_max` (default
    `limits.COORDINATOR_RECORDS_IN_MEMORY_MAX`). An append that would exceed the
    bound raises `RecordSinkFull` and stores nothing."""

    def __init__(self, *, records_max: int = limits.COORDINATOR_RECORDS_IN_MEMORY_MAX) -> None:
        assert records_max >= 1, records_max
        self._records: list[RecordT] = []
        self._records_max = records_max

    def append(self, records: Sequence[RecordT], /) -> int:
        if len(self._records) + len(records) > self._records_max:
            raise RecordSinkFull(
                f"in-memory coordinator log holds {len(self._records)} records; "
                f"{len(records)} more would exceed its bound of {self._records_max}"
            )
        first = len(self._records)
        self._records.extend(records)
        return first

    @property
    def records(self) -> tuple[RecordT, ...]:
        """Everything appended so far, in order."""
        return tuple(self._records)

    @property
    def records_max(self) -> int:
        return self._records_max

    def __len__(self) -> int:
        return len(self._records)


def record_offsets(appended: int | Sequence[int], count: int) -> Sequence[int]:
    """The offset of each of `count` records from what `RecordSink.append` returned."""
    if isinstance(appended, int):
        if appended == NO_OFFSET:
            return [NO_OFFSET] * count
        return range(appended, appended + count)
    assert len(appended) == count, (len(appended), count)
    return appended
