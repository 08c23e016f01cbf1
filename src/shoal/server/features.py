"""Feature levels this broker runs at: what ApiVersions (v3+) reports as supported and
finalized features, and what UpdateFeatures checks a change against.

Kafka 4.2 finalizes, on a fresh single node formatted with `--standalone`:
metadata.version 29, group.version 1, share.version 1, streams.version 1,
transaction.version 2, kraft.version 1 and eligible.leader.replicas.version 1. Shoal
reports the level it actually honours, each fixed for the life of the process:

- metadata.version 29, group.version 1 (KIP-848 consumer groups),
  eligible.leader.replicas.version 1 (one node: the ELR lists are always empty): as Kafka.
- share.version: the `share.version` config (1 unless a config turns share groups off);
  the only feature whose supported range has more than one level.
- transaction.version 1, not 2: with 2 a Java producer stops sending AddPartitionsToTxn
  and relies on Produce v12 adding the partition to its transaction (KIP-890 part 2),
  which Shoal does not do; at 1 it uses AddPartitionsToTxn, which Shoal serves.
- kraft.version 0: Shoal is a static quorum of one voter (as Kafka formatted with
  `controller.quorum.voters` instead of `--standalone`); voters cannot be added or removed.
- streams.version 0: Shoal does not serve streams groups (KIP-1071); Kafka Streams uses
  its default classic protocol.

A feature's supported range is the levels the broker can run at: its one level, except
share.version (0-1). A level 0 feature is not finalized (left out of the list).
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.config import BrokerConfig
from shoal.server import quorum

SHARE_VERSION = "share.version"


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_supported: int
    max_supported: int
    level: int
    """The finalized level (0: not finalized)."""


_FIXED = (
    ("metadata.version", 29),
    ("group.version", 1),
    ("transaction.version", 1),
    ("kraft.version", quorum.KRAFT_VERSION),
    ("streams.version", 0),
    ("eligible.leader.replicas.version", 1),
)
SHARE_VERSION_MAX = 1


def features(config: BrokerConfig) -> tuple[Feature, ...]:
    """Every feature this broker knows, with its supported range and level now."""
    fixed = tuple(Feature(name, level, level, level) for name, level in _FIXED)
    share = Feature(SHARE_VERSION, 0, SHARE_VERSION_MAX, config.get_int(SHARE_VERSION))
    return (*fixed, share)


def by_name(config: BrokerConfig) -> dict[str, Feature]:
    return {feature.name: feature for feature in features(config)}
