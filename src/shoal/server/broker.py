"""The broker process: wiring, listeners, background timers and shutdown.

`Broker` builds the services and hands handlers only those (`Services`,
server/handler_services.py, as `ctx.services`), subscribes them to the log's change events
(log/events.py), and runs the listeners (server/net/listeners.py: every `listeners` entry,
TLS where the protocol says so; each connection knows its listener and principal).
Every timer is fired by one driver on the clock (`timers`, server/services/timers.py):
retention every `log.retention.check.interval.ms`, the time-based flush check every
second, and the sources of the share service, the group service and the share
coordinator. The logs' blocking disk work (fsyncs,
removal of deleted segments) runs in `disk`'s worker threads (server/services/disk_io.py):
the flush check and retention only start it. Compaction runs in the log cleaner's
own threads (`cleaner`, server/services/log_cleaner.py), never in `disk`'s. So do the durable writes
of the metadata and config stores (topics, dynamic and group configs, ACLs, quotas, SCRAM
credentials), whose changes run one at a time in `disk.changes`. Dynamic
configs (server/metadata/dynamic_config.py) are applied at start and replaced through
`live_config.reconfigure`, which tells the logs and the group coordinator;
share-group configs (server/metadata/group_config_store.py) are loaded at start into
`group_configs`.

With `metrics.listener` set, requests are counted and timed
(server/observability/request_metrics.py) and the HTTP listener of /metrics and the console
(server/observability/http_listener.py) starts once the Kafka listener is bound; it stops first at
shutdown.

Shutdown (SIGTERM/SIGINT or `shutdown()`): stop accepting, wake parked requests, let
in-flight requests finish for at most `shoal.shutdown.timeout.ms`, close connections,
stop the timers, stop the log cleaner (a clean in flight is abandoned), wait for the
changes and disk work started, then flush and close every log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from shoal import limits
from shoal.clock import Clock, SystemClock
from shoal.config import BrokerConfig, ListenerEndpoint, broker_keys
from shoal.log.api import LogError
from shoal.log.events import TopicsChanged
from shoal.log.manager import LogManager
from shoal.log.topics import stored_cluster_id
from shoal.security.acl import ALLOW_ALL, KafkaPrincipal
from shoal.server.connection_info import ConnectionInfo
from shoal.server.handler_services import NodeIdentity, Services
from shoal.server.metadata.acl_store import open_acl_store
from shoal.server.metadata.dynamic_config import DynamicBrokerConfig, LiveBrokerConfig
from shoal.server.metadata.group_config_store import GroupConfigStore
from shoal.server.metadata.migration import open_metadata_log
from shoal.server.metadata.quota_store import QuotaService
from shoal.server.metadata.scram_store import ScramStore
from shoal.server.metadata.topic_catalog import MetadataTopicCatalog
from shoal.server.net import idle
from shoal.server.net.connection import serve_connection
from shoal.server.net.listeners import Listeners, Transport
from shoal.server.net.sasl import SaslService
from shoal.server.net.warmup import WARM_START_DELAY_S, warm_up
from shoal.server.observability.latency_trace import TRACE
from shoal.server.observability.metrics import BrokerMetrics
from shoal.server.observability.metrics_collectors import broker_collectors
from shoal.server.observability.record_path import RECORD_PATH
from shoal.server.observability.request_metrics import instrument
from shoal.server.observability.stall_watch import WATCH
from shoal.server.observability.timed_persister import TimedPersister
from shoal.server.registry import ApiHandler, api_ranges, load_all_handlers
from shoal.server.services.data_dir_lock import data_dir_lock
from shoal.server.services.disk_io import DiskIO
from shoal.server.services.group_persistence import GroupLogMaintenance, open_group_log
from shoal.server.services.group_service import GroupService, topics_of
from shoal.server.services.log_cleaner import LogCleaner
from shoal.server.services.purgatory import Purgatory
from shoal.server.services.share_service import ShareService
from shoal.server.services.share_state import ShareStateService
from shoal.server.services.timers import FLUSH_CHECK_INTERVAL_MS, PeriodicTimer, TimerDriver
from shoal.server.services.txn_service import TxnService
from shoal.share.persister import Persister

if TYPE_CHECKING:
    from shoal.server.observability.http_listener import HttpListener

log = logging.getLogger(__name__)


class CannotStart(Exception):
    """The data directory cannot be served as configured (another node's or cluster's
    `meta.properties`, an unreadable one); `shoal serve` prints the reason and exits 1."""


class Broker:
    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Clock | None = None,
        transport: Transport | None = None,
        disk_executor: Executor | None = None,
    ) -> None:
        """`clock`, `transport` (how connections arrive, server/net/listeners.py) and
        `disk_executor` (where the disk work runs, server/services/disk_io.py) are the system's
        unless injected: the simulator gives virtual time, in-memory pipes and a disk
        run on its loop (shoal/sim/)."""

        self.clock: Clock = clock or SystemClock()
        try:  # another node's or cluster's directory: refused before anything opens
            stored_cluster_id(
                config.data_dir,
                cluster_id=config.get(broker_keys.CLUSTER_ID),
                node_id=config.node_id,
            )
        except LogError as exc:
            raise CannotStart(str(exc)) from exc
        self.metadata = open_metadata_log(config, self.clock)
        """The cluster metadata: `__cluster_metadata-0` and its shard, replayed."""
        self.live_config = LiveBrokerConfig(
            DynamicBrokerConfig.load(config, self.metadata.image), metadata=self.metadata
        )
        """Static config plus IncrementalAlterConfigs' persisted dynamic layers."""
        config = self.live_config.current
        self.node_id = config.node_id
        # ---- metrics: requests are counted only with metrics.listener set
        self.metrics = BrokerMetrics(enabled=config.metrics_listener is not None)
        self.handlers: dict[int, ApiHandler] = load_all_handlers()
        if self.metrics.enabled:
            self.handlers = instrument(self.handlers, self.metrics)
        self.http: HttpListener | None = None
        """The HTTP listener of /metrics and the console (`metrics.listener`)."""
        self.purgatory = Purgatory()
        try:
            self.logs = LogManager.open(
                data_dir=config.data_dir,
                broker_config=config,
                clock=self.clock,
                catalog=MetadataTopicCatalog(self.metadata),
            )
        except LogError as exc:  # e.g. meta.properties of another node or cluster
            raise CannotStart(str(exc)) from exc
        self.cluster_id = self.logs.cluster_id
        self.disk = DiskIO(observe_flush_s=self.metrics.log_flush.observe, executor=disk_executor)
        self.metadata.flush = self.disk.flush
        """Worker threads for the logs' fsyncs and removals and the stores' durable
        writes (off the event loop); `disk.changes` runs the admin changes in turn."""
        self.group_configs = GroupConfigStore(
            metadata=self.metadata, broker_config=lambda: self.live_config.current
        )
        """Share-group configs (GROUP resources), the one store the group coordinator
        (`group_configs=broker.group_configs.overrides`) and share-partitions read."""
        self.timers = TimerDriver(clock=self.clock)
        """The one timer driver; services call its `rearm` after each operation."""
        self.timers.add(
            PeriodicTimer(
                "log-retention",
                interval_ms=lambda: self.config.get(broker_keys.LOG_RETENTION_CHECK_INTERVAL_MS),
                action=self._enforce_retention,
            ),
            PeriodicTimer(
                "log-flush",
                interval_ms=lambda: FLUSH_CHECK_INTERVAL_MS,
                action=lambda now_ms: self.disk.flush_due(self.logs, now_ms=now_ms),
            ),
        )
        self.cleaner = LogCleaner(logs=self.logs, config=lambda: self.config, clock=self.clock)
        """Compaction of the compacted topics, in its own worker threads
        (server/services/log_cleaner.py)."""
        self.share_state = ShareStateService.open(
            self.logs, config, self.clock, remove_paths=self.disk.remove, rearm=self.timers.rearm
        )
        """The share coordinator on `__share_group_state`, loaded."""
        self.persister: Persister = self.share_state.coordinator
        """Share-partition state (the Persister), in process and durable."""
        if self.metrics.enabled:  # share-partition load time, state write latency
            self.persister = TimedPersister(
                self.persister,
                load_time=self.metrics.partition_load_time,
                write_latency=self.metrics.state_write_latency,
            )
        self.timers.add(*self.share_state.timer_sources())
        self.share_service = ShareService(
            clock=self.clock,
            config=lambda: self.config,
            logs=self.logs,
            group_configs=self.group_configs,
            persister=self.persister,
            purgatory=self.purgatory,
            stopping=lambda: self.stopping,
            rearm=self.timers.rearm,
            locks_expired=self.metrics.locks_expired,
            dlq_records=self.metrics.dlq_records_counted,
            flush_state=self.share_state.append_linger.flush_all,
        )
        """Share sessions and share-partitions (ShareFetch, ShareAcknowledge)."""
        self.timers.add(*self.share_service.timer_sources())
        self.group_configs.listeners.append(self.share_service.group_config_changed)
        group_log = open_group_log(self.logs, config, self.clock)
        self.group_service = GroupService(
            clock=self.clock,
            config=config,
            persister=self.persister,
            topic_source=lambda: topics_of(self.logs),
            group_configs=self.group_configs.overrides,
            sinks=group_log.sinks,
            loader=group_log.loader,
            share_state_listeners=[self.share_service.share_state_reset],
            rearm=self.timers.rearm,
        )
        """The group coordinator, a shard per `__consumer_offsets` partition, each
        rebuilt from its partition."""
        self.group_service.load()
        self.timers.add(*self.group_service.timer_sources())
        self.group_log = GroupLogMaintenance(
            runtime=self.group_service.runtime,
            partitions=group_log.partitions,
            config=lambda: self.config,
            remove_paths=self.disk.remove,
            rearm=self.timers.rearm,
        )
        """Keeps `__consumer_offsets` bounded (re-writes old keys, prunes): a timed
        write of the group runtime, fired by the group service's timer."""
        self.group_service.on_fired.append(self.group_log.fired)
        self.txn = TxnService.open(
            self.logs,
            lambda: self.config,
            self.clock,
            control_target=self.logs.partition,
            group_transactions=self.group_service,
            remove_paths=self.disk.remove,
        )
        """The transaction coordinator on `__transaction_state`, loaded."""
        self.timers.add(*self.txn.timer_sources())
        self.stopping = False
        # ---- listeners and TLS
        self.network = Listeners(lambda: self.config, self._accept, transport)
        """Every `listeners` entry, bound at start; TLS contexts and their reload."""
        self.timers.add(*self.network.timer_sources())
        self.live_config.listeners.append(self.logs.update_broker_config)
        self.live_config.listeners.append(self.group_service.reconfigure)
        self.live_config.listeners.append(self.cleaner.reconfigure)
        self._subscribe_to_log_changes()
        self.acls = open_acl_store(config, self.metadata)
        # ---- client quotas: the metadata log's set and the byte-rate managers
        self.quotas = QuotaService(metadata=self.metadata, config=lambda: self.config)
        """Authorization: the ACL store behind the StandardAuthorizer, or None."""
        self.services = Services(
            node=NodeIdentity(
                node_id=self.node_id,
                cluster_id=self.cluster_id,
                advertised=self.network.advertised,
            ),
            config=self.live_config,
            clock=self.clock,
            logs=self.logs,
            disk=self.disk,
            purgatory=self.purgatory,
            group_service=self.group_service,
            share_service=self.share_service,
            persister=self.persister,
            group_configs=self.group_configs,
            api_versions=api_ranges(self.handlers),
            stopping=lambda: self.stopping,
            state_writes=self.share_state.append_linger,
            txn=self.txn,
            authorizer=self.acls.authorizer if self.acls is not None else ALLOW_ALL,
            acls=self.acls,
            sasl=SaslService(ScramStore(self.metadata)),
            metrics=self.metrics,
            quotas=self.quotas,
        )
        """What handlers are given (`ctx.services`)."""
        for collector in broker_collectors(
            logs=self.logs,
            purgatory=self.purgatory,
            share_service=self.share_service,
            group_service=self.group_service,
            txn=self.txn,
            cleaner=self.cleaner,
        ):
            self.metrics.register(collector)
        self._connections: dict[int, tuple[ConnectionInfo, asyncio.Task[None]]] = {}
        self._next_connection_id = 0
        self._stopped = asyncio.Event()
        self._idle_sweep: asyncio.Task[None] | None = None
        self._refused_logged_ms: dict[str, int] = {}  # refusals per reason kind
        self._refused_unlogged: dict[str, int] = {}

    @property
    def config(self) -> BrokerConfig:
        """The current effective config (changes on reconfigure)."""
        return self.live_config.current

    def _subscribe_to_log_changes(self) -> None:
        """The log announces its changes; here is who hears of them. An append or a
        deleted partition wakes parked fetches; a topic change makes the group
        coordinator and the share-partitions re-read the topics; a log start move makes
        the partition's share-partitions follow it."""
        events = self.logs.events
        events.on_appended(lambda topic, partition: self.purgatory.notify((topic, partition)))
        events.on_appended(self.group_log.appended)
        events.on_topics_changed(self._topics_changed)
        events.on_log_start_moved(self.share_service.log_start_moved)

    def _topics_changed(self, change: TopicsChanged) -> None:
        for key in change.deleted_partitions():
            self.purgatory.notify(key)
        self.group_service.topics_changed()
        if change.deleted:
            self.group_service.topics_deleted([name for name, _count in change.deleted])
            self.metrics.forget_topics(name for name, _count in change.deleted)
        self.share_service.topics_changed()
        self.cleaner.topics_changed()

    # ---- identity advertised to clients
    @property
    def bound_port(self) -> int:
        """The first listener's bound port (0 before start)."""
        return self.network.bound_ports.get(self.network.endpoints[0].name, 0)

    @property
    def advertised_host(self) -> str:
        return self.network.advertised()[0]

    @property
    def advertised_port(self) -> int:
        return self.network.advertised()[1]

    # ---- lifecycle
    async def start(self) -> None:
        ensure_fd_limit(self.config.get(broker_keys.MAX_CONNECTIONS))
        await self.network.start()
        host = self.network.endpoints[0].host
        await self._start_http_listener()
        self.group_service.start()
        self.txn.start()
        self.timers.start()
        self.cleaner.start()
        TRACE.start()
        WATCH.start()
        # close idle, slowloris and non-reading connections
        self._idle_sweep = asyncio.create_task(self._sweep_connections(), name="shoal-idle-sweep")
        # latency (docs/performance/latency.md): load the hot APIs' message schemas now,
        # then gc.freeze
        self._warmup = asyncio.create_task(
            warm_up(self.handlers, stopping=lambda: self.stopping, delay_s=WARM_START_DELAY_S),
            name="shoal-warmup",
        )
        log.info(
            "shoal broker %d listening on %s:%d (advertised %s:%d), data in %s, cluster %s",
            self.node_id,
            host,
            self.bound_port,
            self.advertised_host,
            self.advertised_port,
            self.config.data_dir,
            self.cluster_id,
        )

    async def _start_http_listener(self) -> None:
        address = self.config.metrics_listener
        if address is None:
            return
        # uvicorn and starlette only when asked for (docs/performance/startup.md)
        from shoal.server.observability.http_app import build_app
        from shoal.server.observability.http_listener import HttpListener

        self.http = HttpListener(build_app(self.services), host=address[0], port=address[1])
        await self.http.start()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def shutdown(self) -> None:
        if self.stopping:
            await self._stopped.wait()
            return
        self.stopping = True
        log.info("shutting down: %d connections open", len(self._connections))
        self.network.close()
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
        self.purgatory.close()
        if self.http is not None:
            await self.http.stop()
        # Idle connections (waiting for a request) close at once; busy ones may finish
        # the request in hand and then stop reading (the loop checks `stopping`).
        for info, task in list(self._connections.values()):
            if not info.busy:
                task.cancel()
        tasks = [task for _, task in self._connections.values()]
        timeout_s = self.config.get(broker_keys.SHOAL_SHUTDOWN_TIMEOUT_MS) / 1000
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout_s)
            for task in pending:
                task.cancel()
            if pending:
                log.warning("shutdown: cancelled %d connections still busy", len(pending))
                await asyncio.gather(*pending, return_exceptions=True)
        # An admin change whose connection went away still ends (written, adopted)
        # while the services that hear of it run.
        await self.disk.changes.idle()
        await self.timers.stop()
        # A clean in flight stops at its next throttle call and is abandoned (the log
        # removes its leftover files at the next open).
        await self.cleaner.close(timeout_s=timeout_s)
        await self.txn.stop()
        await TRACE.stop()
        RECORD_PATH.write()
        await WATCH.stop()
        self.share_state.append_linger.flush_all()
        await self.disk.close()
        try:
            self.metadata.close()
            self.logs.close()
        except LogError as exc:  # e.g. a full disk: the next start recovers those logs
            log.error("shutdown: not every log closed cleanly (recovered on next start): %s", exc)
        log.info("shutdown complete")
        self._stopped.set()

    # ---- connections
    def _log_refused(self, peer: tuple[str, int], kind: str, reason: str) -> None:
        """Log a refused connection, at most once per
        `limits.REFUSED_CONNECTIONS_LOG_INTERVAL_MS` per `kind` of refusal (with the
        count since the last)."""
        now_ms = self.clock.monotonic_ms()
        unlogged = self._refused_unlogged[kind] = self._refused_unlogged.get(kind, 0) + 1
        last_ms = self._refused_logged_ms.get(kind)
        if last_ms is not None and now_ms - last_ms < limits.REFUSED_CONNECTIONS_LOG_INTERVAL_MS:
            return
        log.warning(
            "refusing connection from %s:%s: %s (%d refused since the last such line)",
            peer[0],
            peer[1],
            reason,
            unlogged,
        )
        self._refused_logged_ms[kind] = now_ms
        self._refused_unlogged[kind] = 0

    async def _sweep_connections(self) -> None:
        """Close connections past a deadline of server/net/idle.py, logging why."""
        while True:
            config = self.config
            idle_ms = config.get(broker_keys.CONNECTIONS_MAX_IDLE_MS)
            read_ms = config.get(broker_keys.SHOAL_REQUEST_READ_TIMEOUT_MS)
            await asyncio.sleep(
                idle.sweep_interval_ms(idle_ms=idle_ms, request_read_ms=read_ms) / 1000
            )
            now_ms = self.clock.monotonic_ms()
            for info, task in list(self._connections.values()):
                reason = idle.expiry_reason(
                    info, now_ms=now_ms, idle_ms=idle_ms, request_read_ms=read_ms
                )
                if reason is not None and info.close_reason is None:
                    info.close_reason = reason
                    log.log(
                        idle.log_level(info),
                        "closing connection %d from %s:%d: %s",
                        info.connection_id,
                        info.peer_host,
                        info.peer_port,
                        reason,
                    )
                    task.cancel()

    async def _accept(
        self,
        endpoint: ListenerEndpoint,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        principal: KafkaPrincipal,
    ) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        if self.stopping:
            writer.close()
            return
        max_connections = self.config.get(broker_keys.MAX_CONNECTIONS)
        if len(self._connections) >= max_connections:
            self._log_refused(peer, "max", f"max.connections={max_connections} reached")
            writer.close()
            return
        if self.quotas.ip_quotas:  # connection_creation_rate of ip entities (KIP-612)
            now_ms = self.clock.monotonic_ms()
            throttle_ms, rate = self.quotas.connection_throttle_ms(ip=str(peer[0]), now_ms=now_ms)
            if throttle_ms > 0:
                reason = (
                    f"connection_creation_rate={rate:g}/s of ip {peer[0]} exceeded "
                    f"(throttled for {throttle_ms} ms)"
                )
                self._log_refused(peer, "ip", reason)
                writer.close()
                return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_connection_id += 1
        info = ConnectionInfo(
            self._next_connection_id,
            str(peer[0]),
            int(peer[1]),
            listener_name=endpoint.name,
            security_protocol=endpoint.security_protocol,
            principal=principal,
        )
        task = asyncio.current_task()
        assert task is not None
        self._connections[info.connection_id] = (info, task)
        self.metrics.connections_created.inc()
        self.metrics.connections.inc()
        await serve_connection(
            services=self.services,
            handlers=self.handlers,
            info=info,
            reader=reader,
            writer=writer,
            on_closed=self.connection_closed,
        )

    def connection_closed(self, info: ConnectionInfo) -> None:
        """A connection ended: forget it and end the share sessions it opened."""
        if self._connections.pop(info.connection_id, None) is not None:
            self.metrics.connections.dec()
        try:
            self.share_service.connection_closed(info)
        except Exception:  # a bug there must not stop the connection's clean-up
            log.exception("closing the share sessions of connection %d failed", info.connection_id)

    # ---- timers
    def _enforce_retention(self, now_ms: int) -> None:
        freed = self.logs.enforce_retention(now_wall_ms=self.clock.wall_ms(), defer_delete=True)
        self.disk.remove(self.logs.take_deleted_paths())
        if freed:  # share-partitions hear of each log start move (log events)
            log.info("retention freed %d bytes", freed)


async def run_broker(config: BrokerConfig, *, started: Callable[[], None] | None = None) -> None:
    """Run a broker until SIGTERM or SIGINT, then shut down gracefully. The data
    directory's lock (server/services/data_dir_lock.py) is taken before anything there is read
    and held until the broker has stopped; DataDirLocked if another process holds it.
    `started` is called once the listeners are bound."""
    import signal

    with data_dir_lock(config.data_dir):
        broker = Broker(config)
        await broker.start()
        if started is not None:
            started()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, _on_signal, broker, sig)
        await broker.wait_stopped()


def _on_signal(broker: Broker, sig: int) -> None:
    log.info("received signal %d", sig)
    asyncio.get_running_loop().create_task(broker.shutdown())


def ensure_fd_limit(max_connections: int) -> None:
    """Raise the soft RLIMIT_NOFILE to `max.connections` plus `limits.FD_HEADROOM`
    (at most the hard limit); warn when even the hard limit is below that, since
    accepts would then fail with EMFILE before `max.connections` is reached."""
    wanted = max_connections + limits.FD_HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new_soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
        log.info(
            "raised the open-file limit from %d to %d (max.connections=%d)",
            soft,
            new_soft,
            max_connections,
        )
        soft = new_soft
    if soft != resource.RLIM_INFINITY and soft < wanted:
        log.warning(
            "open-file limit %d is below max.connections=%d plus %d for the logs: raise "
            "`ulimit -n` or lower max.connections",
            soft,
            max_connections,
            limits.FD_HEADROOM,
        )
