"""The coordinator runtime: write a shard's records, replay them, then answer.

Theory of operation. A coordinator shard is an event-sourced state machine: its write
operations return a result carrying `records` and a `response` and change nothing;
only `shard.replay(record)` changes state. `CoordinatorRuntime.apply(result)`:

1. appends the result's records to the `RecordSink` (all of them or, if the sink
   refuses, none: `RecordSinkFull` propagates and the shard is untouched);
2. replays them into the shard, in order;
3. only then returns the response, so nothing a client is told is ahead of what
   was written.

`load(records)` builds a fresh shard (from the factory) and replays a record stream
into it through the same `replay`: start-up and live operation share one code path,
and a shard loaded from everything the sink holds equals the live one.

Invariants: the shard only ever sees records that the sink accepted, in sink order;
a result without records touches neither. Effects a result may carry (requests to the
outside world) are the caller's business, after `apply` returns.

The sink is a Protocol: `InMemoryRecordSink` (a bounded list) for tests, the log
sink on an internal topic (`coordinator/log_sink.py`) in the broker, or the lingering
sink (`coordinator/append_linger.py`), which stages the records of several writes and
appends them as one batch later: then "written" in step 3 means staged, and whoever
answers a client waits for the sink's flush first (server/state_linger.py), so the
rule holds at the wire. No I/O, no clock here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from shoal import limits

RecordT = TypeVar("RecordT")
RecordT_co = TypeVar("RecordT_co", covariant=True)
RecordT_contra = TypeVar("RecordT_contra", contravariant=True)
ResponseT = TypeVar("ResponseT")
ResponseT_co = TypeVar("ResponseT_co", covariant=True)


NO_OFFSET = -1
"""The offset replayed records get when the sink assigns none (in-memory sinks that
do not count, routed sinks spanning several partitions)."""


class Shard(Protocol[RecordT_contra]):
    """Anything whose state changes only through `replay`. `offset` is the record's
    offset in the coordinator's log (`NO_OFFSET` if the sink has none): shards that
    prune their log (the share coordinator) remember where their snapshots are."""

    def replay(self, record: RecordT_contra, offset: int = NO_OFFSET, /) -> None: ...


ShardT = TypeVar("ShardT", bound=Shard[Any])


class WriteResult(Protocol[RecordT_co, ResponseT_co]):
    """What a shard's write operation returns (effects, if any, are not read here)."""

    @property
    def records(self) -> Sequence[RecordT_co]: ...

    @property
    def response(self) -> ResponseT_co: ...


class RecordSink(Protocol[RecordT_contra]):
    """Where a shard's records go before they are replayed."""

    def append(self, records: Sequence[RecordT_contra], /) -> int | Sequence[int]:
        """Store every record in order, or none (raise a `RecordSinkError`): a
        partial append is never allowed. Returns the offset of the first
        record (the i-th has that offset + i), each record's offset (a sink over
        several partitions: each in its own partition), or `NO_OFFSET`."""
        ...


class RecordSinkError(Exception):
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


class CoordinatorRuntime(Generic[ShardT, RecordT]):
    """Hosts one shard: `apply` writes then replays then answers; `load` rebuilds the
    shard from a record stream. See the module docstring."""

    def __init__(self, *, shard_factory: Callable[[], ShardT], sink: RecordSink[RecordT]) -> None:
        self._shard_factory = shard_factory
        self._sink = sink
        self._shard = shard_factory()

    @property
    def shard(self) -> ShardT:
        """The live shard: read it freely, change it only through `apply`."""
        return self._shard

    def apply(self, result: WriteResult[RecordT, ResponseT]) -> ResponseT:
        """Append the result's records, replay them into the shard, then return the
        response. Raises what the sink raises (then nothing was replayed)."""
        records = result.records
        if records:
            if type(records) is not tuple:
                records = tuple(records)
            appended = self._sink.append(records)
            replay = self._shard.replay
            if type(appended) is int and appended != NO_OFFSET:  # the usual: a log's offset
                for index, record in enumerate(records):
                    replay(record, appended + index)
            else:
                offsets = record_offsets(appended, len(records))
                for record, offset in zip(records, offsets, strict=True):
                    replay(record, offset)
        return result.response

    def load(self, records: Iterable[RecordT]) -> ShardT:
        """Replace the shard by a fresh one that replayed `records` (records already
        in the log: they are not appended to the sink again). Returns the new shard;
        the caller then runs the shard's own after-load step, if it has one."""
        return self.load_at((offset, record) for offset, record in enumerate(records))

    def load_at(self, records: Iterable[tuple[int, RecordT]]) -> ShardT:
        """`load` from `(offset, record)` pairs read back from a log."""
        shard = self._shard_factory()
        for offset, record in records:
            shard.replay(record, offset)
        self._shard = shard
        return shard
