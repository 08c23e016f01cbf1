"""The services handlers are given (`ctx.services`), instead of the broker.

`Services` is a frozen bundle of the broker's collaborators, built once by the broker
and handed to every connection:

    node           this node's identity: id, cluster id, advertised endpoint (the
                   port is known only after the listener binds, so it is read late)
    config         the live broker config (`config.current`, `config.reconfigure`)
    clock          the one clock
    logs           every topic and partition log
    disk           worker threads for the logs' fsyncs and removals (server/services/disk_io.py)
    purgatory      where long polls wait (Fetch, ShareFetch)
    group_service  the group coordinator (share groups)
    share_service  share sessions and share-partitions (ShareFetch, ShareAcknowledge)
    persister      share-partition state (the share coordinator's role)
    group_configs  the share-group config store
    api_versions   what ApiVersions advertises: the registry's served ranges
    stopping       whether shutdown has begun (long polls answer at once)
    state_writes   the share coordinator's append linger: a response waits until
                   the state writes its request made are in the log
    txn            the transaction coordinator and its marker writer
    metrics        the broker's metrics registry (server/observability/metrics.py)
    sasl           SASL authentication on SASL listeners and the SCRAM credential store
                   (server/net/sasl.py, server/metadata/scram_store.py); None in tests without it
    authorizer     who may do what (`security/acl.py`); ALLOW_ALL unless
                   `authorizer.class.name` names one
    acls           the durable ACL set behind the StandardAuthorizer (server/metadata/acl_store.py);
                   None when no authorizer is configured (the ACL APIs answer
                   SECURITY_DISABLED)
    quotas         client quotas and their byte rates (server/metadata/quota_store.py); None in
                   tests without them

Nothing here imports the broker, the registry or the connection, so `server/` has no
import cycle; handlers do not notify anyone of log changes, the log announces them
(log/events.py) and the broker subscribed the services.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from shoal.clock import Clock
from shoal.log.manager import LogManager
from shoal.security.acl import ALLOW_ALL, Authorizer
from shoal.server.metadata.acl_store import AclStore
from shoal.server.metadata.dynamic_config import LiveBrokerConfig
from shoal.server.metadata.group_config_store import GroupConfigStore
from shoal.server.metadata.quota_store import QuotaService
from shoal.server.net.sasl import SaslService
from shoal.server.observability.metrics import BrokerMetrics
from shoal.server.services.disk_io import DiskIO
from shoal.server.services.group_service import GroupService
from shoal.server.services.purgatory import Purgatory
from shoal.server.services.share_service import ShareService
from shoal.server.services.state_linger import StateAppendLinger
from shoal.server.services.txn_service import TxnService
from shoal.share.persister import Persister


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """This node as clients see it."""

    node_id: int
    cluster_id: str
    advertised: Callable[[str | None], tuple[str, int]]
    """The advertised (host, port) of a listener (None: the first), read at each use:
    the port is bound at start."""

    @property
    def host(self) -> str:
        return self.advertised(None)[0]

    @property
    def port(self) -> int:
        return self.advertised(None)[1]

    def endpoint(self, listener_name: str) -> tuple[str, int]:
        """Where a client that came in on `listener_name` is told to connect (Kafka
        answers Metadata, FindCoordinator and DescribeCluster per listener)."""
        return self.advertised(listener_name)


@dataclass(frozen=True, slots=True)
class ApiRange:
    """One API this broker serves and its version range (ApiVersions' entries)."""

    api_key: int
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class Services:
    node: NodeIdentity
    config: LiveBrokerConfig
    clock: Clock
    logs: LogManager
    disk: DiskIO
    purgatory: Purgatory
    group_service: GroupService
    share_service: ShareService
    persister: Persister
    group_configs: GroupConfigStore
    api_versions: tuple[ApiRange, ...]
    stopping: Callable[[], bool]
    state_writes: StateAppendLinger
    txn: TxnService
    metrics: BrokerMetrics = field(default_factory=BrokerMetrics)
    authorizer: Authorizer = ALLOW_ALL
    acls: AclStore | None = None
    sasl: SaslService | None = None
    quotas: QuotaService | None = None
    """Client quotas (server/metadata/quota_store.py); None in tests without them."""
