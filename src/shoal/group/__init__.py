"""Group coordinator for KIP-932 share groups and classic consumer groups (sans-I/O,
event-sourced).

Modules: `records` (the `__consumer_offsets` record types 1-3 and 10-15 as kio
entities in the one coordinator record model, and their `CODEC`); for classic groups
`classic` (membership), `classic_state` (its responses and live groups),
`committed_offsets` (offset commits), `subscriptions` (topics of a consumer
subscription) and `classic_coordinator` (all of them behind the group-id namespace);
for share groups `share_group` (replayed state of one group), `assignor` (the simple
assignor), `membership` (heartbeat rules), `lifecycle` (share-partition
initialisation and deletion), `results` (responses and effects), `settings`,
`topics`; for KIP-848 consumer groups `consumer_group` (replayed state),
`consumer_membership` (heartbeat rules), `regex_refresh` (regex subscriptions,
resolved after the heartbeat), `consumer_classic` and `migration`; and `coordinator`
(the `GroupCoordinatorShard` tying them together). See `coordinator`'s docstring for
how a caller drives the shard.
"""

from shoal.group.coordinator import DurableState, GroupCoordinatorShard
from shoal.group.results import (
    DeleteShareState,
    GroupResult,
    InitializeShareState,
)
from shoal.group.settings import ShareGroupSettings
from shoal.group.topics import TopicMetadata

__all__ = [
    "DeleteShareState",
    "DurableState",
    "GroupCoordinatorShard",
    "GroupResult",
    "InitializeShareState",
    "ShareGroupSettings",
    "TopicMetadata",
]
