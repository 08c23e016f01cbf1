"""`MetadataImage`: the cluster metadata at one point of the metadata log, immutable.

The shard (metadata/shard.py) keeps its state in plain dicts that only `replay`
changes, and hands readers an image: a frozen snapshot whose mappings are read-only
views of copies taken when the image was built. A reader that holds an image sees one
consistent state, whatever is written afterwards (KRaft's MetadataImage plays the
same part for a broker). Words:

- `acls`: every ACL binding (security/authorizer.py's `AclBinding`);
- `quotas`: quota entity (sorted `(entity type, name or None)` pairs) -> key -> value;
- `scram`: user -> mechanism name (`SCRAM-SHA-256`...) -> credential;
- `configs`: (config resource type, resource name) -> key -> value, as Kafka shows
  it (resource types in metadata/records.py: BROKER "" is the cluster-wide layer,
  BROKER "<node id>" this node's, GROUP, CLIENT_METRICS, TOPIC);
- `topics`: topic name -> `TopicImage` (id, partition count, internal flag).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from shoal.security.authorizer import AclBinding
from shoal.security.quota import Entity
from shoal.security.scram import ScramCredential

K = TypeVar("K")
V = TypeVar("V")
_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: int
    internal: bool


@dataclass(frozen=True, slots=True)
class MetadataImage:
    acls: frozenset[AclBinding] = frozenset()
    quotas: Mapping[Entity, Mapping[str, float]] = field(default_factory=dict)
    scram: Mapping[str, Mapping[str, ScramCredential]] = field(default_factory=dict)
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=dict)
    topics: Mapping[str, TopicImage] = field(default_factory=dict)

    def config(self, resource_type: int, resource_name: str) -> Mapping[str, str]:
        """The keys one config resource sets (empty if none)."""
        return self.configs.get((resource_type, resource_name), _EMPTY)

    def config_resources(self, resource_type: int) -> list[str]:
        """The names of the resources of one type that set at least one key, sorted."""
        return sorted(name for kind, name in self.configs if kind == resource_type)


def frozen_mapping(items: Mapping[K, V]) -> Mapping[K, V]:
    """A read-only view of a copy of `items`."""
    return MappingProxyType(dict(items))
