"""Manual replica assignments (CreateTopics, CreatePartitions) on a single node.

A replica list is acceptable only if it is exactly this node: Kafka refuses an empty
list, a repeated broker and a broker that is not registered, each with
INVALID_REPLICA_ASSIGNMENT, and a single node has one broker.
"""

from __future__ import annotations

from collections.abc import Sequence


def replica_list_problem(broker_ids: Sequence[int], *, node_id: int) -> str | None:
    """Why `broker_ids` cannot be a partition's replicas here, or None if it can."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    seen: set[int] = set()
    for broker_id in broker_ids:
        if broker_id in seen:
            return (
                f"The manual partition assignment includes the broker {broker_id} more than once."
            )
        seen.add(broker_id)
        if broker_id != node_id:
            return (  # Kafka's words (ReplicationControlManager)
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered."
            )
    return None
