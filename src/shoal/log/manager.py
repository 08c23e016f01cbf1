"""All topics and partition logs of one data directory. (INTERFACE STUB: to be implemented.)

Owns: the data directory layout, durable topic metadata (name, topic id, partition
count, config overrides), the cluster id, opening/recovering every partition log on
start, creating and deleting topics and partitions, and the producer-id allocator.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from shoal.clock import Clock
from shoal.config import BrokerConfig
from shoal.log.api import TopicInfo
from shoal.log.partition import PartitionLog


class LogManager:
    @classmethod
    def open(cls, *, data_dir: Path, broker_config: BrokerConfig, clock: Clock) -> LogManager:
        raise NotImplementedError

    @property
    def cluster_id(self) -> str:
        raise NotImplementedError

    def topics(self) -> list[TopicInfo]:
        raise NotImplementedError

    def topic(self, name: str) -> TopicInfo | None:
        raise NotImplementedError

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        raise NotImplementedError

    def partition(self, topic: str, index: int) -> PartitionLog | None:
        raise NotImplementedError

    def create_topic(self, name: str, *, partitions: int, configs: dict[str, Any],
                     validate_only: bool = False, internal: bool = False) -> TopicInfo:
        """Raises LogError TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION,
        INVALID_PARTITIONS, POLICY_VIOLATION (topic/partition limits)."""
        raise NotImplementedError

    def delete_topic(self, name: str) -> TopicInfo:
        raise NotImplementedError

    def create_partitions(self, name: str, *, count: int, validate_only: bool = False) -> None:
        raise NotImplementedError

    def alter_topic_configs(self, name: str, configs: dict[str, Any]) -> None:
        """Replace the topic's overrides (already validated) and apply them live."""
        raise NotImplementedError

    def update_broker_config(self, broker_config: BrokerConfig) -> None:
        raise NotImplementedError

    def allocate_producer_id(self) -> int:
        """A producer id never handed out before, even across restarts."""
        raise NotImplementedError

    def enforce_retention(self, *, now_wall_ms: int) -> int:
        raise NotImplementedError

    def flush_if_due(self, *, now_ms: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
