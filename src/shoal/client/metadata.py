"""What the client knows of the cluster, sans-I/O: brokers, topics, leaders, coordinators.

`MetadataCache` is filled from Metadata responses (`update`) and FindCoordinator
answers (`set_coordinator`), and emptied where an error says it is stale
(`invalidate_topic`, `forget_coordinator`). Every update replaces whole immutable
views, so readers in other threads see either the old view or the new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from shoal.client.bootstrap import Node

TopicPartition = tuple[str, int]

GROUP_KEY_TYPE = 0
"""FindCoordinator key type of a consumer or share group."""
SHARE_KEY_TYPE = 2
"""FindCoordinator key type of a share-coordinator key ("group:topic_id:partition")."""


@dataclass(frozen=True, slots=True)
class PartitionView:
    partition: int
    leader: int
    """Node id of the leader, -1 when there is none."""
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int
    elr: tuple[int, ...] | None = None
    """Eligible leader replicas (KIP-966), None when the answer (Metadata) has none."""
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    topic_id: uuid.UUID | None
    internal: bool
    error_code: int
    """The topic's error in the Metadata response (0: none)."""
    partitions: dict[int, PartitionView] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """One Metadata answer: the brokers and the topics asked for (or every topic)."""

    brokers: dict[int, Node]
    topics: dict[str, TopicView]
    cluster_id: str | None = None
    controller_id: int = -1


def cluster_view(response: Any) -> ClusterView:
    """A ClusterView of a Metadata response of any version."""
    brokers = {
        int(b.node_id): Node(str(b.host), int(b.port), int(b.node_id)) for b in response.brokers
    }
    topics = {}
    for topic in response.topics:
        name = str(topic.name)
        partitions = {
            int(p.partition_index): PartitionView(
                partition=int(p.partition_index),
                leader=int(p.leader_id),
                leader_epoch=int(getattr(p, "leader_epoch", -1)),
                replicas=tuple(int(r) for r in p.replica_nodes),
                isr=tuple(int(r) for r in p.isr_nodes),
                error_code=int(p.error_code),
            )
            for p in topic.partitions
        }
        topics[name] = TopicView(
            name=name,
            topic_id=getattr(topic, "topic_id", None),
            internal=bool(getattr(topic, "is_internal", False)),
            error_code=int(topic.error_code),
            partitions=partitions,
        )
    return ClusterView(
        brokers=brokers,
        topics=topics,
        cluster_id=getattr(response, "cluster_id", None),
        controller_id=int(getattr(response, "controller_id", -1)),
    )


class MetadataCache:
    """See the module docstring."""

    def __init__(self) -> None:
        self._brokers: dict[int, Node] = {}
        self._topics: dict[str, TopicView] = {}
        self._coordinators: dict[tuple[int, str], Node] = {}

    # ---- brokers and topics

    def update(self, view: ClusterView) -> None:
        """Adopt a Metadata answer: its brokers replace the known ones; its topics
        replace theirs (a topic with an error is forgotten)."""
        if view.brokers:
            self._brokers = dict(view.brokers)
        topics = dict(self._topics)
        for name, topic in view.topics.items():
            if topic.error_code:
                topics.pop(name, None)
            else:
                topics[name] = topic
        self._topics = topics

    def brokers(self) -> list[Node]:
        return [self._brokers[node_id] for node_id in sorted(self._brokers)]

    def broker(self, node_id: int) -> Node | None:
        return self._brokers.get(node_id)

    def topic(self, name: str) -> TopicView | None:
        return self._topics.get(name)

    def leader(self, topic: str, partition: int) -> Node | None:
        """The leader's address, or None when unknown (refresh metadata)."""
        view = self._topics.get(topic)
        part = view.partitions.get(partition) if view is not None else None
        if part is None or part.leader < 0:
            return None
        return self._brokers.get(part.leader)

    def leaders(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Node | None]:
        return {tp: self.leader(*tp) for tp in partitions}

    def invalidate_topic(self, name: str) -> None:
        """Forget a topic's partitions and leaders (an error said they moved)."""
        topics = dict(self._topics)
        topics.pop(name, None)
        self._topics = topics

    # ---- coordinators

    def coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE) -> Node | None:
        return self._coordinators.get((key_type, key))

    def set_coordinator(self, key: str, node: Node, key_type: int = GROUP_KEY_TYPE) -> None:
        self._coordinators = {**self._coordinators, (key_type, key): node}

    def forget_coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE) -> None:
        coordinators = dict(self._coordinators)
        coordinators.pop((key_type, key), None)
        self._coordinators = coordinators
