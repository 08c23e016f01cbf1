"""The `shoal-share` source's one member of its share group, in the driver's process.

`ShareGroupMember` is the client's share-group member
(`shoal.client.share_member.ShareMember`, a sans-I/O state machine) driven by
`ShareMemberThread`: an event loop on a daemon thread of its own, so heartbeats and
RENEWs go on while Spark runs a batch. Heartbeats go to the group's coordinator,
ShareFetch and ShareAcknowledge to each partition's leader, one share session per
broker; versions come from each broker's ApiVersions (a broker that cannot RENEW gets
no RENEW, and the records' locks are not renewed).

What this module adds for the source: the Spark side names partitions by topic name
(`TopicPartition`, as in the offset JSON) where the share APIs name them by topic id;
`start()` applies the `share.*` group configs (IncrementalAlterConfigs to the group's
coordinator) and resolves the topics before joining, then waits for a first
assignment and its leaders; `end_offsets()` lists each partition's end at its leader,
on the member's own client and connections (librdkafka's mock drops a broker's share
sessions when any connection to it closes).

Failures the source cannot go on from raise `ShareMemberError`, naming the option at
fault where there is one: a fatal heartbeat error, an unreachable broker, a refused
group config or an unknown topic. A lost share session is not one of them (a broker
restarted, or librdkafka's mock dropped it when some connection to that broker
closed): the broker released the records held there, `take_lost()` reports them and
the driver forgets them; the batches already planned with them are still read, and
the group delivers those records again (at least once).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final

from shoal.client import AsyncClient, ClientError, ClientSettings
from shoal.client import requests as rq
from shoal.client.bootstrap import Node
from shoal.client.errors import ErrorCode, KafkaError, error_name
from shoal.client.offsets import list_offsets_async
from shoal.client.ranges import Span, TopicIdPartition
from shoal.client.security import ClientSecurity
from shoal.client.share_member import MemberSettings as ClientMemberSettings
from shoal.client.share_member import ShareMember
from shoal.client.share_thread import ShareMemberThread
from shoal.clock import SystemClock
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.spark.cluster import check_reachable
from shoal.spark.share_bisect import DELIVERY_COUNT_LIMIT_DEFAULT
from shoal.spark.share_checkpoint import new_member_id
from shoal.spark.share_offsets import Spans, TopicPartition

log = logging.getLogger(__name__)

ACCEPT: Final = AcknowledgeType.ACCEPT
RELEASE: Final = AcknowledgeType.RELEASE
DELIVERY_COUNT_LIMIT_KEY: Final = "share.delivery.count.limit"
BROKER_DELIVERY_COUNT_LIMIT_KEY: Final = "group.share.delivery.count.limit"
BROKER_RESOURCE: Final = 4
"""DescribeConfigs resource type of one broker (Kafka's ConfigResource.Type.BROKER),
named by its node id and answered by that broker."""
ASSIGNMENT_WAIT_MS_MAX: Final = 30_000
"""`start()` waits this long for the first non-empty assignment before it fails."""


class ShareMemberError(RuntimeError):
    """The member cannot go on; the message says why, naming the source option at fault
    where there is one."""


@dataclass(frozen=True, slots=True)
class MemberSettings:
    bootstrap: str
    group_id: str
    topics: tuple[str, ...]
    group_configs: Mapping[str, str] = field(default_factory=dict)
    """`share.*` group configs SET (IncrementalAlterConfigs on the GROUP) before joining."""
    client_id: str = "shoal-spark-share"
    lock_renew_interval_ms: int | None = None
    """None: half the lock duration the brokers report."""
    request_timeout_ms: int = 30_000
    read_committed: bool = False
    member_id: str | None = None
    """The member id to join (or rejoin) with; None: a new one."""
    security: ClientSecurity = field(default_factory=ClientSecurity)


class ShareGroupMember:
    """The driver's share-group member. See the module docstring."""

    def __init__(self, settings: MemberSettings) -> None:
        self.settings = settings
        self.member_id = settings.member_id or new_member_id()
        self._member = ShareMember(
            group_id=settings.group_id,
            member_id=self.member_id,
            topics=settings.topics,
            clock=SystemClock(),
            settings=ClientMemberSettings(lock_renew_interval_ms=settings.lock_renew_interval_ms),
        )
        client_settings = ClientSettings(
            client_id=settings.client_id,
            request_timeout_ms=settings.request_timeout_ms,
            security=settings.security,
        )
        self._thread = ShareMemberThread(self._member, settings.bootstrap, settings=client_settings)
        self._ids: dict[str, uuid.UUID] = {}
        self._names: dict[uuid.UUID, str] = {}
        self._partitions: dict[str, list[int]] = {}
        self.delivery_count_limit = DELIVERY_COUNT_LIMIT_DEFAULT
        """The group's `share.delivery.count.limit`, read at `start()`."""

    # ---- life cycle

    def start(self) -> None:
        """Apply the group configs, resolve the topics, join and wait for an assignment
        whose leaders are known (so the first acquire fetches from every partition).
        Raises ShareMemberError with a clear reason (and leaves nothing running)."""
        try:
            check_reachable(self.settings.bootstrap, self.settings.security)
        except ClientError as exc:
            self.close()
            raise ShareMemberError(
                f"cannot reach a broker at bootstrap.servers={self.settings.bootstrap!r} ({exc})"
            ) from exc
        try:
            self._thread.start(self._prepare)
            assigned = self._thread.wait_for(
                lambda member: (
                    bool(member.assignment and not member.leaderless)
                    or member.membership.fatal is not None
                ),
                timeout_ms=ASSIGNMENT_WAIT_MS_MAX,
            )
            self._check_failure()
            if not assigned:
                raise ShareMemberError(
                    f"share group {self.settings.group_id!r} assigned no partition of "
                    f"{list(self.settings.topics)} within {ASSIGNMENT_WAIT_MS_MAX} ms"
                )
        except ClientError as exc:
            self.close()
            raise ShareMemberError(
                f"share group {self.settings.group_id!r} at {self.settings.bootstrap}: {exc}"
            ) from exc
        except BaseException:
            self.close()
            raise

    async def _prepare(self, client: AsyncClient) -> None:
        if self.settings.group_configs:
            await self._set_group_configs(client)
        await self._read_delivery_count_limit(client)
        view = await client.metadata(list(self.settings.topics))
        for name in self.settings.topics:
            topic = view.topics.get(name)
            code = ErrorCode.unknown_topic_or_partition if topic is None else topic.error_code
            if code != ErrorCode.none or topic is None or topic.topic_id is None:
                raise ShareMemberError(f"topic {name!r} (option topic/topics): {error_name(code)}")
            self._ids[name] = topic.topic_id
            self._names[topic.topic_id] = name
            self._partitions[name] = sorted(topic.partitions)

    async def _set_group_configs(self, client: AsyncClient) -> None:
        group, configs = self.settings.group_id, self.settings.group_configs
        call = rq.incremental_alter_configs(
            {(rq.GROUP_RESOURCE, group): [rq.ConfigChange(k, v) for k, v in configs.items()]}
        )
        response = await client.to_coordinator(group, call, _first_resource_error)
        (result,) = response.responses
        if result.error_code != ErrorCode.none:
            raise ShareMemberError(
                f"group settings {sorted(configs)} refused for group {group!r}: "
                f"{error_name(result.error_code)}: {result.error_message}"
            )

    async def _read_delivery_count_limit(self, client: AsyncClient) -> None:
        """The group's effective `share.delivery.count.limit` (DescribeConfigs of the
        GROUP). Kafka 4.2 has no such group config (it describes none, and refuses to
        set one): there the brokers' `group.share.delivery.count.limit` applies, read
        from the group coordinator (DescribeConfigs of that BROKER). On failure the
        default stays, logged (it only sizes the split of a failing batch,
        share_bisect.py)."""
        group = self.settings.group_id
        try:
            value = await _described(client, rq.GROUP_RESOURCE, group, DELIVERY_COUNT_LIMIT_KEY)
            if value is None:
                node = await client.coordinator(group)
                value = await _described(
                    client,
                    BROKER_RESOURCE,
                    str(node.node_id),
                    BROKER_DELIVERY_COUNT_LIMIT_KEY,
                    node=node,
                )
            if value is None:
                raise ShareMemberError(
                    f"neither {DELIVERY_COUNT_LIMIT_KEY} (group) nor "
                    f"{BROKER_DELIVERY_COUNT_LIMIT_KEY} (broker) is described"
                )
            self.delivery_count_limit = max(2, int(value))
        except (ClientError, ShareMemberError, TypeError, ValueError) as exc:
            log.warning(
                "share group %s: %s not read (%s); assuming %d",
                group,
                DELIVERY_COUNT_LIMIT_KEY,
                exc,
                self.delivery_count_limit,
            )

    def close(self) -> None:
        """Close the share sessions (releasing what is still held), leave the group, stop
        the thread. Idempotent; never raises."""
        self._thread.close(timeout_ms=self.settings.request_timeout_ms)

    # ---- the source's calls

    def acquire(
        self,
        *,
        records_max: int,
        wait_ms: int,
        skip: Collection[TopicPartition] = (),
        exact: bool = True,
    ) -> dict[TopicPartition, list[Span]]:
        """One round of ShareFetches (one per leader) from the assigned partitions but
        `skip`, waiting up to `wait_ms` for records. `exact`: at most `records_max`
        records (record-limit mode); else whole log batches up to about `records_max`
        (batch-optimized mode: maybe more records, but the broker neither splits its
        in-flight batches nor tracks their records one by one, several times cheaper)."""
        skipped = [self._id_of(tp) for tp in skip if tp.topic in self._ids]
        mode = AcquireMode.RECORD_LIMIT if exact else AcquireMode.BATCH_OPTIMIZED
        try:
            outcome = self._thread.acquire(
                records_max=records_max, wait_ms=wait_ms, skip=skipped, acquire_mode=mode
            )
        except ClientError as exc:
            raise self._error(exc) from exc
        for tp, error in outcome.errors.items():
            log.warning(
                "ShareFetch of %s for group %s: %s",
                self._name_of(tp),
                self.settings.group_id,
                error,
            )
        return {self._named(tp): list(spans) for tp, spans in outcome.records.items()}

    def acknowledge(self, spans: Spans, ack_type: AcknowledgeType) -> dict[TopicPartition, str]:
        """ACCEPT or RELEASE `spans` (no longer held afterwards, whatever the outcome);
        returns the partitions whose acknowledgement failed, with the error name."""
        if not spans:
            return {}
        by_id = {self._id_of(tp): list(items) for tp, items in spans.items()}
        try:
            outcome = self._thread.acknowledge(by_id, ack_type)
        except ClientError as exc:
            raise self._error(exc) from exc
        return {self._named(tp): error for tp, error in outcome.failed.items()}

    def end_offsets(self) -> dict[TopicPartition, int]:
        """Every partition's end offset (high watermark, or the last stable offset for
        read_committed), asked of its leader."""
        wanted = {(t, p): rq.LATEST_TIMESTAMP for t, ids in self._partitions.items() for p in ids}
        level = rq.READ_COMMITTED if self.settings.read_committed else rq.READ_UNCOMMITTED
        try:
            ends = self._thread.run(
                lambda client: list_offsets_async(client, wanted, isolation_level=level),
                timeout_ms=2 * self.settings.request_timeout_ms,
            )
        except ClientError as exc:
            raise ShareMemberError(f"end offsets of {sorted(self._partitions)}: {exc}") from exc
        return {TopicPartition(t, p): offset for (t, p), offset in ends.items()}

    def take_lost(self) -> dict[TopicPartition, tuple[Span, ...]]:
        """Records lost since the last call (their lock could not be renewed)."""
        lost = self._thread.read(lambda member: member.take_lost())
        return {self._named(tp): spans for tp, spans in lost.items()}

    @property
    def lock_duration_ms(self) -> int:
        return self._member.lock_duration_ms

    # ---- internals

    def _check_failure(self) -> None:
        failure = self._thread.read(lambda member: member.membership.fatal)
        if failure is not None:
            raise self._error(failure)

    def _error(self, exc: ClientError) -> ShareMemberError:
        if isinstance(exc, KafkaError):  # a fatal heartbeat error
            return ShareMemberError(
                f"ShareGroupHeartbeat of group {self.settings.group_id!r} (option group.id) "
                f"failed: {exc}"
            )
        return ShareMemberError(f"share group {self.settings.group_id!r}: {exc}")

    def _id_of(self, tp: TopicPartition) -> TopicIdPartition:
        return TopicIdPartition(self._ids[tp.topic], tp.partition)

    def _name_of(self, tp: TopicIdPartition) -> str:
        return f"{self._names.get(tp.topic_id, tp.topic_id)}-{tp.partition}"

    def _named(self, tp: TopicIdPartition) -> TopicPartition:
        return TopicPartition(self._names.get(tp.topic_id, str(tp.topic_id)), tp.partition)


async def _described(
    client: AsyncClient, resource_type: int, name: str, key: str, *, node: Node | None = None
) -> str | None:
    """The value of config `key` of one resource (DescribeConfigs), None when the
    resource has no such config; an error of the resource raises ShareMemberError."""
    call = rq.describe_configs(resource_type, [name], keys=[key])
    response = await client.call(call, node)
    (result,) = response.results
    if result.error_code != ErrorCode.none:
        raise ShareMemberError(f"{error_name(result.error_code)}: {result.error_message}")
    values = [c.value for c in result.configs if c.name == key]
    return values[0] if values else None


def _first_resource_error(response: object) -> int:
    results = getattr(response, "responses", ())
    return int(results[0].error_code) if results else 0


__all__ = ["ACCEPT", "RELEASE", "MemberSettings", "ShareGroupMember", "ShareMemberError"]
