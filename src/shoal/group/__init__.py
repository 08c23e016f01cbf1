"""Group coordinator for share groups, classic groups and KIP-848 consumer groups
(sans-I/O, event-sourced).

By protocol: `classic/` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their
rebalances), `consumer/` (KIP-848 heartbeats, regex subscriptions, the range
assignor, migration from and to classic groups) and `share/` (KIP-932 share groups:
heartbeats, state lifecycle, offsets, describe and list).

What they share stays here: `records` (the `__consumer_offsets` record types and
their `CODEC`), `results`, `settings`, `configs`, `topic_image`, `simple_assignor`
(share groups, and consumer groups' `uniform`), `committed_offsets` and `txn_offsets`
(offsets of classic and consumer groups), `log_bound` and `log_maintenance` (keeping
the topic bounded), and `shard` (the `GroupCoordinatorShard` tying them together;
its docstring says how a caller drives it).
"""

from shoal.group.results import (
    DeleteShareState,
    GroupResult,
    InitializeShareState,
)
from shoal.group.settings import ShareGroupSettings
from shoal.group.shard import DurableState, GroupCoordinatorShard
from shoal.group.topic_image import TopicMetadata

__all__ = [
    "DeleteShareState",
    "DurableState",
    "GroupCoordinatorShard",
    "GroupResult",
    "InitializeShareState",
    "ShareGroupSettings",
    "TopicMetadata",
]
