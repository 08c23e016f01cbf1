"""This node as a KRaft quorum: a static quorum of one voter, itself, always its leader.

Shoal's metadata log (`__cluster_metadata-0`, docs/design/metadata-log.md) is no Raft log (one
node, Shoal's own record encoding, no epochs), so the answers about the quorum
(DescribeQuorum, AddRaftVoter, RemoveRaftVoter) describe the quorum Kafka runs on one
combined node, with what Shoal does not have left at its empty value:

- the metadata partition is `__cluster_metadata`-0, its leader this node at epoch 1
  (the one election, at start), its high watermark and the voter's log end offset 0;
- kraft.version is 0 (server/metadata/features.py): the voter set comes from configuration and
  has no directory ids, so voters cannot be added or removed (Kafka answers
  UNSUPPORTED_VERSION for that, KafkaRaftClient's AddVoterHandler / RemoveVoterHandler);
- a request naming another cluster id gets INCONSISTENT_CLUSTER_ID, checked first.
"""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
LEADER_EPOCH = 1
LOG_END_OFFSET = 0
KRAFT_VERSION = 0


def cluster_id_refusal(asked: str | None, cluster_id: str) -> tuple[ErrorCode, str] | None:
    """INCONSISTENT_CLUSTER_ID unless `asked` is None or this cluster's id (Kafka's
    KafkaRaftClient.hasValidClusterId and its message)."""
    if asked is None or asked == cluster_id:
        return None
    return (
        ErrorCode.inconsistent_cluster_id,
        f'The given id "{asked}" doesn\'t match the cluster id "{cluster_id}"',
    )


def reconfiguration_refusal(action: str) -> tuple[ErrorCode, str]:
    """Kafka's answer to adding or removing a voter at kraft.version 0 (`action`:
    "adding" or "removing")."""
    return (
        ErrorCode.unsupported_version,
        f"Cluster doesn't support {action} voter because the kraft.version feature is "
        f"{KRAFT_VERSION}",
    )
