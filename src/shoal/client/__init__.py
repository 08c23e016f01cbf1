"""Shoal's one Kafka client: a sans-I/O core with a blocking and an asyncio driver.

- `Client` (sync.py) and `AsyncClient` (aio.py): calls to any broker, to a partition's
  leader, to a group's coordinator, with retries, backoff and deadlines.
- `requests`: the `Call` builders, one per API; `Call.exact(kio_request)` pins a version.
- `sync.Connection` / `aio.Connection`: one raw connection (tests, hostile input).
- The share-group member: `share_member.ShareMember` (sans-I/O), driven by
  `share_runner.ShareRunner` (asyncio) or `share_thread.ShareMemberThread` (blocking,
  its own loop thread); `offsets.list_offsets` asks each leader for offsets;
  `group_offsets.commit_offsets` commits a consumer group's offsets from outside it.
- Errors: `KafkaError`, `BrokerUnreachable`, `RequestTimeout` (all `ClientError`).
"""

from shoal.client.aio import AsyncClient
from shoal.client.bootstrap import Node, parse_bootstrap
from shoal.client.calls import Call
from shoal.client.errors import BrokerUnreachable, ClientError, KafkaError, RequestTimeout, check
from shoal.client.metadata import ClusterView, PartitionView, TopicView
from shoal.client.settings import ClientSettings
from shoal.client.sync import Client

__all__ = [
    "AsyncClient",
    "BrokerUnreachable",
    "Call",
    "Client",
    "ClientError",
    "ClientSettings",
    "ClusterView",
    "KafkaError",
    "Node",
    "PartitionView",
    "RequestTimeout",
    "TopicView",
    "check",
    "parse_bootstrap",
]
