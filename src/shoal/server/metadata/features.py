"""Feature levels this broker runs at: what ApiVersions (v3+) reports as supported and
finalized features, and what UpdateFeatures checks a change against.

Kafka 4.2 finalizes, on a fresh single node formatted with `--standalone`:
metadata.version 29, group.version 1, share.version 1, streams.version 1,
transaction.version 2, kraft.version 1 and eligible.leader.replicas.version 1. Shoal
reports the level it actually honours, each fixed for the life of the process:

- metadata.version 29, group.version 1 (KIP-848 consumer groups), transaction.version 2
  (below), eligible.leader.replicas.version 1 (one node: the ELR lists are always
  empty): as Kafka.
- share.version: the `share.version` config (1 unless a config turns share groups off);
  the only feature whose supported range has more than one level.
- transaction.version 2 (KIP-890 part 2), as Kafka: a Java producer then sends no
  AddPartitionsToTxn nor AddOffsetsToTxn (Produce v12+ and TxnOffsetCommit v5 add the
  partitions to its transaction) and ends each transaction with EndTxn v5, which bumps
  its epoch (a new producer id when the epoch runs out, txn/shard.py). Clients that do
  not read the feature (librdkafka) keep the older requests, which Shoal serves too
  (tests/differential/test_java_transactions.py runs a Java producer on both brokers).
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
from shoal.server.metadata import quorum

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
    ("transaction.version", 2),
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
