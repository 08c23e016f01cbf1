"""The share coordinator (KIP-932): durable share-partition state on `__share_group_state`.

Modules, bottom up:
- `state`: the values state RPCs carry (`SharePartitionKey`, `StateBatch`,
  `StateWrite`, ...) and the batch merge rule.
- `records`: the ShareSnapshot / ShareUpdate records as kio entity dataclasses in
  the one coordinator record model (`shoal.coordinator.records`), their `CODEC`
  (Kafka's bytes) and their builders.
- `shard`: `ShareCoordinatorShard`, one partition's event-sourced state machine.
- `settings`: `ShareCoordinatorSettings` from the `share.coordinator.*` keys.
- `coordinator`: `ShareCoordinator`, the durable `Persister`: the shards of every
  partition on one coordinator runtime, with cold snapshots and pruning as its
  timed writes.
"""

from shoal.share_coordinator.coordinator import ShareCoordinator
from shoal.share_coordinator.records import ShareCoordinatorRecord
from shoal.share_coordinator.settings import ShareCoordinatorSettings
from shoal.share_coordinator.shard import ShareCoordinatorShard, ShareResult

__all__ = [
    "ShareCoordinator",
    "ShareCoordinatorRecord",
    "ShareCoordinatorSettings",
    "ShareCoordinatorShard",
    "ShareResult",
]
