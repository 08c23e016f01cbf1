"""The share coordinator's settings, read from the broker's `share.coordinator.*` keys.

Bounds are enforced by `shoal.config` when the broker config is loaded; the
assertions here only restate them for settings built by hand (tests).
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.config import BrokerConfig, broker_keys


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareCoordinatorSettings:
    num_partitions: int = 50
    """`share.coordinator.state.topic.num.partitions`: partitions of `__share_group_state`."""
    records_per_snapshot: int = 500
    """`share.coordinator.snapshot.update.records.per.snapshot`: updates between
    snapshots of one key (0: every write is a snapshot)."""
    cold_partition_snapshot_interval_ms: int = 300_000
    """`share.coordinator.cold.partition.snapshot.interval.ms`: a key left on updates
    for this long gets a snapshot."""

    def __post_init__(self) -> None:
        assert self.num_partitions >= 1, self
        assert self.records_per_snapshot >= 0, self
        assert self.cold_partition_snapshot_interval_ms >= 1, self

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ShareCoordinatorSettings:
        return cls(
            num_partitions=config.get(broker_keys.SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS),
            records_per_snapshot=config.get_int(
                "share.coordinator.snapshot.update.records.per.snapshot"
            ),
            cold_partition_snapshot_interval_ms=config.get_int(
                "share.coordinator.cold.partition.snapshot.interval.ms"
            ),
        )
