"""Hosting of event-sourced coordinator shards (sans-I/O).

`runtime.CoordinatorRuntime` hosts a coordinator's shards, one per partition of its
internal topic (`placement` says which key lives where): it loads a partition by
replay, writes a shard's records to the partition's `RecordSink` (`sink`), replays
them, hands the effects to the host and only then the response (`result`), runs
timed writes, the append linger (`append_linger`) and the maintenance that bounds
the log. The shards themselves (transactions, share state, groups) live in their
own packages and know nothing of the runtime: any object with `replay(record,
offset)` is a shard. `records` is the one record model and
framing (`CoordinatorRecord`, `RecordCodec`) both coordinators' records use; `pruning`
is how both keep their internal topic bounded (the lowest offset a reload needs, and
deleting below it).
"""

from shoal.coordinator.placement import Placement
from shoal.coordinator.result import CoordinatorResult, decided
from shoal.coordinator.runtime import (
    NO_OFFSET,
    CoordinatorRuntime,
    CoordinatorUnavailable,
    Fired,
    InMemoryRecordSink,
    PartitionNotLoaded,
    RecordSink,
    RecordSinkError,
    RecordSinkFull,
    RecordSinkUnavailable,
    Shard,
    TimedWrite,
)

__all__ = [
    "NO_OFFSET",
    "CoordinatorResult",
    "CoordinatorRuntime",
    "CoordinatorUnavailable",
    "Fired",
    "InMemoryRecordSink",
    "PartitionNotLoaded",
    "Placement",
    "RecordSink",
    "RecordSinkError",
    "RecordSinkFull",
    "RecordSinkUnavailable",
    "Shard",
    "TimedWrite",
    "decided",
]
