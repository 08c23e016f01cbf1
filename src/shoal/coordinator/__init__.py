"""Hosting of event-sourced coordinator shards (sans-I/O).

`runtime.CoordinatorRuntime` writes a shard's records to a `RecordSink`, replays them
into the shard, and only then hands back the response; `load` rebuilds a shard by
replaying a record stream through the same `replay`. The shards themselves (group
coordinator, share coordinator) live in their own packages and know nothing of the
runtime: any object with `replay(record)` is a shard. `records` is the one record model and
framing (`CoordinatorRecord`, `RecordCodec`) both coordinators' records use; `pruning`
is how both keep their internal topic bounded (the lowest offset a reload needs, and
deleting below it).
"""

from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import (
    NO_OFFSET,
    CoordinatorRuntime,
    InMemoryRecordSink,
    RecordSink,
    RecordSinkError,
    RecordSinkFull,
    RecordSinkUnavailable,
    Shard,
    WriteResult,
)

__all__ = [
    "NO_OFFSET",
    "CoordinatorResult",
    "CoordinatorRuntime",
    "InMemoryRecordSink",
    "RecordSink",
    "RecordSinkError",
    "RecordSinkFull",
    "RecordSinkUnavailable",
    "Shard",
    "WriteResult",
]
