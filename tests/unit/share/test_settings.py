"""Group configuration as the share-partition reads it (docs/reference/configs.md, Group
configs)."""

from __future__ import annotations

from shoal.config import BrokerConfig
from shoal.share.leader_settings import IsolationLevel, SharePartitionConfig


def test_broker_defaults_and_group_overrides() -> None:
    broker = BrokerConfig.from_raw({})
    assert SharePartitionConfig.resolve(broker=broker, group={}) == SharePartitionConfig()
    resolved = SharePartitionConfig.resolve(
        broker=broker,
        group={
            "share.record.lock.duration.ms": 20_000,
            "share.delivery.count.limit": 3,
            "share.partition.max.record.locks": 500,
            "share.renew.acknowledge.enable": False,
            "share.isolation.level": "read_committed",
            "share.session.timeout.ms": None,
        },
    )
    assert resolved == SharePartitionConfig(
        20_000, 3, 500, renew_enabled=False, isolation_level=IsolationLevel.READ_COMMITTED
    )


def test_overrides_are_clamped_into_broker_bounds() -> None:
    """Effective values are clamped when broker bounds change later (docs/reference/configs.md,
    Group configs)."""
    broker = BrokerConfig.from_raw({})
    resolved = SharePartitionConfig.resolve(
        broker=broker,
        group={
            "share.record.lock.duration.ms": 1_000,
            "share.delivery.count.limit": 25,
            "share.partition.max.record.locks": 100_000,
        },
    )
    assert (
        resolved.record_lock_duration_ms,
        resolved.delivery_count_limit,
        resolved.max_record_locks,
    ) == (15_000, 10, 4_000)
