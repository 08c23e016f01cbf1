"""The share coordinator (KIP-932): durable share-partition state on `__share_group_state`.

Modules, bottom up:
- `state`: the values state RPCs carry (`SharePartitionKey`, `StateBatch`,
  `StateWrite`, ...) and the batch merge rule.
- `records`: the ShareSnapshot / ShareUpdate records as kio entity dataclasses in
  the one coordinator record model (`shoal.coordinator.records`), their `CODEC`
  (Kafka's bytes) and their builders.
- `shard`: `ShareCoordinatorShard`, one partition's event-sourced state machine.
- `settings`: `ShareCoordinatorSettings` from the `share.coordinator.*` keys.
- `coordinator`: `ShareCoordinator`, the durable `Persister` over one coordinator
  runtime per partition, with cold snapshots and pruning offsets.
"""

from shoal.share_coordinator.coordinator import ShareCoordinator
from shoal.share_coordinator.records import ShareCoordinatorRecord
from shoal.share_coordinator.settings import ShareCoordinatorSettings
from shoal.share_coordinator.shard import ShardResult, ShareCoordinatorShard

__all__ = [
    "ShardResult",
    "ShareCoordinator",
    "ShareCoordinatorRecord",
    "ShareCoordinatorSettings",
    "ShareCoordinatorShard",
]
