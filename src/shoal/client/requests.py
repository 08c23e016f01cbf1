"""Request builders: one function per Kafka API, returning a `Call` that builds the
request at whichever version the client picks from the broker's ApiVersions.

Each builder passes every field any version of its range has; `Schema.make` keeps the
ones the chosen version has. A range starts where Shoal's users' fields exist and ends
where kio's schemas or a new required input (topic ids in Fetch/Produce v13) stop it.
The share-group member APIs (76, 78, 79) live in share_requests.py.

Response helpers here read answers whose shape changed across versions
(`found_coordinator`).

About 770 lines on purpose: one short builder per admin and data API, each the one
place its request is made; splitting them by topic would only scatter the one list.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.static.primitive import i32Timedelta, i64Timedelta

from shoal.client.bootstrap import Node
from shoal.client.calls import Call
from shoal.client.metadata import GROUP_KEY_TYPE, TopicPartition
from shoal.protocol.schema import Schema, request_schema

CONSUMER_REPLICA_ID = -1
"""replica_id of a consumer (not a follower broker) in ListOffsets and Fetch."""
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
EARLIEST_TIMESTAMP = -2
"""ListOffsets timestamp for the log start offset."""
LATEST_TIMESTAMP = -1
"""ListOffsets timestamp for the high watermark (read_uncommitted) or the last stable
offset (read_committed)."""
TOPIC_RESOURCE = 2
GROUP_RESOURCE = 32
BROKER_RESOURCE, BROKER_LOGGER_RESOURCE, CLIENT_METRICS_RESOURCE = 4, 8, 16
"""DescribeConfigs / IncrementalAlterConfigs resource types."""
API_LIST_CONFIG_RESOURCES = 74
CONFIG_SET, CONFIG_DELETE, CONFIG_APPEND, CONFIG_SUBTRACT = 0, 1, 2, 3
"""IncrementalAlterConfigs operations."""
SHARE_GROUP_TYPE = "share"
"""ListGroups types filter of share groups."""
CLASSIC_GROUP_TYPE, CONSUMER_GROUP_TYPE = "classic", "consumer"
"""ListGroups types of consumer groups (the classic and the KIP-848 protocol)."""
NO_GENERATION = -1
"""OffsetCommit generation of a commit from outside the group (admin tools): the
coordinator takes it only while the group has no members."""

API_PRODUCE, API_FETCH, API_LIST_OFFSETS, API_METADATA = 0, 1, 2, 3
API_FIND_COORDINATOR, API_LIST_GROUPS, API_API_VERSIONS = 10, 16, 18
API_CREATE_TOPICS, API_DELETE_TOPICS, API_DESCRIBE_CONFIGS = 19, 20, 32
API_CREATE_PARTITIONS, API_DELETE_GROUPS, API_INCREMENTAL_ALTER_CONFIGS = 37, 42, 44
API_DESCRIBE_CLUSTER, API_SHARE_GROUP_DESCRIBE = 60, 77
API_DESCRIBE_TOPIC_PARTITIONS = 75
API_OFFSET_COMMIT, API_OFFSET_FETCH, API_DESCRIBE_GROUPS, API_OFFSET_DELETE = 8, 9, 15, 47
API_DESCRIBE_SHARE_GROUP_OFFSETS = 90
API_ALTER_SHARE_GROUP_OFFSETS = 91
API_DELETE_SHARE_GROUP_OFFSETS = 92
API_TXN_OFFSET_COMMIT = 28
REQUIRE_STABLE_MIN_VERSION = 7
"""OffsetFetch's RequireStable field exists from v7."""


def _ms(ms: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def _by_topic(items: Iterable[tuple[TopicPartition, Any]]) -> dict[str, list[tuple[int, Any]]]:
    grouped: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    for (topic, partition), value in sorted(items, key=lambda item: item[0]):
        grouped[topic].append((partition, value))
    return grouped


def _call(api_key: int, low: int, high: int, build: Callable[[Schema], Any], **kw: Any) -> Call:
    return Call(api_key, low, high, lambda version: build(request_schema(api_key, version)), **kw)


# ---- cluster and topics


def metadata(topics: Sequence[str] | None, *, allow_auto_topic_creation: bool = False) -> Call:
    """Metadata (3) v1-v13 of `topics`, or of every topic when None."""

    def build(s: Schema) -> Any:
        return s.make(
            "MetadataRequest",
            topics=None
            if topics is None
            else tuple(s.make("MetadataRequestTopic", topic_id=None, name=t) for t in topics),
            allow_auto_topic_creation=allow_auto_topic_creation,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )

    return _call(API_METADATA, 1, 13, build)


def describe_topic_partitions(
    topics: Sequence[str], *, partition_limit: int, cursor: tuple[str, int] | None = None
) -> Call:
    """DescribeTopicPartitions (75) v0: one page of `topics` (every topic when empty),
    at most `partition_limit` partitions, from `cursor` (topic, partition) when given."""

    def build(s: Schema) -> Any:
        return s.make(
            "DescribeTopicPartitionsRequest",
            topics=tuple(s.make("TopicRequest", name=t) for t in topics),
            response_partition_limit=partition_limit,
            cursor=None
            if cursor is None
            else s.make("Cursor", topic_name=cursor[0], partition_index=cursor[1]),
        )

    return _call(API_DESCRIBE_TOPIC_PARTITIONS, 0, 0, build)


def describe_cluster() -> Call:
    """DescribeCluster (60) v0-v2: cluster id, controller, brokers."""

    def build(s: Schema) -> Any:
        return s.make(
            "DescribeClusterRequest",
            include_cluster_authorized_operations=False,
            endpoint_type=1,
            include_fenced_brokers=False,
        )

    return _call(API_DESCRIBE_CLUSTER, 0, 2, build)


def list_offsets(
    timestamps: Mapping[TopicPartition, int],
    *,
    isolation_level: int = READ_UNCOMMITTED,
    timeout_ms: int = 30_000,
) -> Call:
    """ListOffsets (2) v1-v11: the offset of each partition for a timestamp
    (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP or epoch ms). read_committed needs v2+."""

    def build(s: Schema) -> Any:
        return s.make(
            "ListOffsetsRequest",
            replica_id=CONSUMER_REPLICA_ID,
            isolation_level=isolation_level,
            timeout=_ms(timeout_ms),
            topics=tuple(
                s.make(
                    "ListOffsetsTopic",
                    name=topic,
                    partitions=tuple(
                        s.make(
                            "ListOffsetsPartition",
                            partition_index=p,
                            current_leader_epoch=-1,
                            timestamp=ts,
                        )
                        for p, ts in parts
                    ),
                )
                for topic, parts in _by_topic(timestamps.items()).items()
            ),
        )

    return _call(API_LIST_OFFSETS, 2 if isolation_level else 1, 11, build)


@dataclass(frozen=True, slots=True)
class FetchPosition:
    offset: int
    max_bytes: int


def fetch(
    positions: Mapping[TopicPartition, FetchPosition],
    *,
    max_wait_ms: int = 500,
    min_bytes: int = 1,
    max_bytes: int = 64 * 2**20,
    isolation_level: int = READ_UNCOMMITTED,
) -> Call:
    """Fetch (1) v4-v12 (sessionless) of one or many partitions. v13+ names topics by
    id and is left for when a caller holds topic ids."""

    def build(s: Schema) -> Any:
        return s.make(
            "FetchRequest",
            cluster_id=None,
            replica_id=CONSUMER_REPLICA_ID,
            max_wait=_ms(max_wait_ms),
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            isolation_level=isolation_level,
            session_id=0,
            session_epoch=-1,
            topics=tuple(
                s.make(
                    "FetchTopic",
                    topic=topic,
                    partitions=tuple(
                        s.make(
                            "FetchPartition",
                            partition=p,
                            current_leader_epoch=-1,
                            fetch_offset=pos.offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=pos.max_bytes,
                        )
                        for p, pos in parts
                    ),
                )
                for topic, parts in _by_topic(positions.items()).items()
            ),
            forgotten_topics_data=(),
            rack_id="",
        )

    return _call(API_FETCH, 4, 12, build, wait_ms=max_wait_ms)


def produce(
    batches: Mapping[TopicPartition, bytes],
    *,
    acks: int = -1,
    timeout_ms: int = 30_000,
    transactional_id: str | None = None,
) -> Call:
    """Produce (0) v3-v12 of record batches (already encoded, v2 format). acks=0 gets
    no response (the call returns None)."""

    def build(s: Schema) -> Any:
        return s.make(
            "ProduceRequest",
            transactional_id=transactional_id,
            acks=acks,
            timeout=_ms(timeout_ms),
            topic_data=tuple(
                s.make(
                    "TopicProduceData",
                    name=topic,
                    partition_data=tuple(
                        s.make("PartitionProduceData", index=p, records=records)
                        for p, records in parts
                    ),
                )
                for topic, parts in _by_topic(batches.items()).items()
            ),
        )

    return _call(API_PRODUCE, 3, 12, build, expect_response=acks != 0)


def create_topic(
    name: str,
    *,
    partitions: int = -1,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    timeout_ms: int = 30_000,
    validate_only: bool = False,
) -> Call:
    """CreateTopics (19) v4-v7 of one topic (-1: the broker's default; needs v4+)."""

    def build(s: Schema) -> Any:
        topic = s.make(
            "CreatableTopic",
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            assignments=(),
            configs=tuple(
                s.make("CreatableTopicConfig", name=k, value=v) for k, v in (configs or {}).items()
            ),
        )
        return s.make(
            "CreateTopicsRequest",
            topics=(topic,),
            timeout=_ms(timeout_ms),
            validate_only=validate_only,
        )

    return _call(API_CREATE_TOPICS, 4, 7, build)


def delete_topics(names: Sequence[str], *, timeout_ms: int = 30_000) -> Call:
    """DeleteTopics (20) v1-v6 by name."""

    def build(s: Schema) -> Any:
        if s.version >= 6:
            states = tuple(s.make("DeleteTopicState", name=n, topic_id=None) for n in names)
            return s.make("DeleteTopicsRequest", topics=states, timeout=_ms(timeout_ms))
        return s.make("DeleteTopicsRequest", topic_names=tuple(names), timeout=_ms(timeout_ms))

    return _call(API_DELETE_TOPICS, 1, 6, build)


def create_partitions(
    counts: Mapping[str, int], *, timeout_ms: int = 30_000, validate_only: bool = False
) -> Call:
    """CreatePartitions (37) v0-v3: grow each topic to its new partition count."""

    def build(s: Schema) -> Any:
        return s.make(
            "CreatePartitionsRequest",
            topics=tuple(
                s.make("CreatePartitionsTopic", name=n, count=c, assignments=None)
                for n, c in counts.items()
            ),
            timeout=_ms(timeout_ms),
            validate_only=validate_only,
        )

    return _call(API_CREATE_PARTITIONS, 0, 3, build)


def describe_configs(
    resource_type: int,
    names: Sequence[str],
    *,
    keys: Sequence[str] | None = None,
    synonyms: bool = False,
) -> Call:
    """DescribeConfigs (32) v1-v4 of resources of one type (TOPIC_RESOURCE, ...); with
    `synonyms`, each value's synonyms (where else it could come from) too."""

    def build(s: Schema) -> Any:
        return s.make(
            "DescribeConfigsRequest",
            resources=tuple(
                s.make(
                    "DescribeConfigsResource",
                    resource_type=resource_type,
                    resource_name=n,
                    configuration_keys=None if keys is None else tuple(keys),
                )
                for n in names
            ),
            include_synonyms=synonyms,
            include_documentation=False,
        )

    return _call(API_DESCRIBE_CONFIGS, 1, 4, build)


@dataclass(frozen=True, slots=True)
class ConfigChange:
    name: str
    value: str | None
    operation: int = CONFIG_SET


def incremental_alter_configs(
    resources: Mapping[tuple[int, str], Sequence[ConfigChange]], *, validate_only: bool = False
) -> Call:
    """IncrementalAlterConfigs (44) v0-v1; keys are (resource type, name), e.g.
    (GROUP_RESOURCE, "my-group")."""

    def build(s: Schema) -> Any:
        return s.make(
            "IncrementalAlterConfigsRequest",
            resources=tuple(
                s.make(
                    "AlterConfigsResource",
                    resource_type=rtype,
                    resource_name=rname,
                    configs=tuple(
                        s.make(
                            "AlterableConfig",
                            name=c.name,
                            config_operation=c.operation,
                            value=c.value,
                        )
                        for c in changes
                    ),
                )
                for (rtype, rname), changes in resources.items()
            ),
            validate_only=validate_only,
        )

    return _call(API_INCREMENTAL_ALTER_CONFIGS, 0, 1, build)


def list_config_resources(resource_types: Sequence[int]) -> Call:
    """ListConfigResources (74) v1: the config resources of `resource_types` that exist
    (GROUP: the groups with a config of their own)."""

    def build(s: Schema) -> Any:
        return s.make("ListConfigResourcesRequest", resource_types=tuple(resource_types))

    return _call(API_LIST_CONFIG_RESOURCES, 1, 1, build)


# ---- groups and coordinators


def find_coordinator(key: str, *, key_type: int = GROUP_KEY_TYPE) -> Call:
    """FindCoordinator (10) v0-v6 of one key (v0 knows groups only; share keys need v6)."""

    def build(s: Schema) -> Any:
        return s.make("FindCoordinatorRequest", key=key, key_type=key_type, coordinator_keys=(key,))

    low = 0 if key_type == GROUP_KEY_TYPE else 6 if key_type == 2 else 1
    return _call(API_FIND_COORDINATOR, low, 6, build)


@dataclass(frozen=True, slots=True)
class FoundCoordinator:
    error_code: int
    error_message: str | None
    node: Node


def found_coordinator(response: Any) -> FoundCoordinator:
    """The one coordinator of a FindCoordinator answer, whatever its version."""
    found = response.coordinators[0] if hasattr(response, "coordinators") else response
    return FoundCoordinator(
        int(found.error_code),
        getattr(found, "error_message", None),
        Node(str(found.host), int(found.port), int(found.node_id)),
    )


def list_groups(*, types: Sequence[str] = (), states: Sequence[str] = ()) -> Call:
    """ListGroups (16): v5 when filtering by type (e.g. SHARE_GROUP_TYPE), v4+ by state."""

    def build(s: Schema) -> Any:
        return s.make("ListGroupsRequest", states_filter=tuple(states), types_filter=tuple(types))

    return _call(API_LIST_GROUPS, 5 if types else 4 if states else 0, 5, build)


def delete_groups(group_ids: Sequence[str]) -> Call:
    """DeleteGroups (42) v0-v2."""
    return _call(
        API_DELETE_GROUPS,
        0,
        2,
        lambda s: s.make("DeleteGroupsRequest", groups_names=tuple(group_ids)),
    )


def share_group_describe(group_ids: Sequence[str]) -> Call:
    """ShareGroupDescribe (77) v1."""
    return _call(
        API_SHARE_GROUP_DESCRIBE,
        1,
        1,
        lambda s: s.make(
            "ShareGroupDescribeRequest",
            group_ids=tuple(group_ids),
            include_authorized_operations=False,
        ),
    )


def describe_share_group_offsets(group_id: str, topics: Sequence[str] | None = None) -> Call:
    """DescribeShareGroupOffsets (90) v0-v1 of one group: the partitions of `topics`
    with state (every partition with state when None; the broker's lag from v1)."""

    def build(s: Schema) -> Any:
        return s.make(
            "DescribeShareGroupOffsetsRequest",
            groups=(
                s.make(
                    "DescribeShareGroupOffsetsRequestGroup",
                    group_id=group_id,
                    topics=None
                    if topics is None
                    else tuple(
                        s.make("DescribeShareGroupOffsetsRequestTopic", topic_name=t, partitions=())
                        for t in topics
                    ),
                ),
            ),
        )

    return _call(API_DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, build)


def alter_share_group_offsets(group_id: str, offsets: Mapping[TopicPartition, int]) -> Call:
    """AlterShareGroupOffsets (91) v0: the start offset of each partition."""

    def build(s: Schema) -> Any:
        return s.make(
            "AlterShareGroupOffsetsRequest",
            group_id=group_id,
            topics=tuple(
                s.make(
                    "AlterShareGroupOffsetsRequestTopic",
                    topic_name=topic,
                    partitions=tuple(
                        s.make(
                            "AlterShareGroupOffsetsRequestPartition",
                            partition_index=p,
                            start_offset=o,
                        )
                        for p, o in parts
                    ),
                )
                for topic, parts in _by_topic(offsets.items()).items()
            ),
        )

    return _call(API_ALTER_SHARE_GROUP_OFFSETS, 0, 0, build)


def delete_share_group_offsets(group_id: str, topics: Sequence[str]) -> Call:
    """DeleteShareGroupOffsets (92) v0: forget the group's state of each topic."""

    def build(s: Schema) -> Any:
        return s.make(
            "DeleteShareGroupOffsetsRequest",
            group_id=group_id,
            topics=tuple(
                s.make("DeleteShareGroupOffsetsRequestTopic", topic_name=t) for t in topics
            ),
        )

    return _call(API_DELETE_SHARE_GROUP_OFFSETS, 0, 0, build)


# ---- consumer groups


def describe_groups(group_ids: Sequence[str]) -> Call:
    """DescribeGroups (15) v0-v5: state, protocol and members of classic groups."""
    return _call(
        API_DESCRIBE_GROUPS,
        0,
        5,
        lambda s: s.make(
            "DescribeGroupsRequest", groups=tuple(group_ids), include_authorized_operations=False
        ),
    )


def offset_fetch(
    group_id: str,
    topics: Mapping[str, Sequence[int]] | None = None,
    *,
    require_stable: bool = False,
) -> Call:
    """OffsetFetch (9) v1-v9 of one group: the committed offsets of the partitions of
    `topics`, or of every partition with a commit when None (v2+). v8+ carry it in
    the multi-group form; read either shape with `fetched_offsets`. `require_stable`
    (v7+): a partition with a pending transactional offset answers
    UNSTABLE_OFFSET_COMMIT instead of its offset."""

    def build(s: Schema) -> Any:
        topic_type = "OffsetFetchRequestTopics" if s.version >= 8 else "OffsetFetchRequestTopic"
        wanted = (
            None
            if topics is None
            else tuple(
                s.make(topic_type, name=t, partition_indexes=tuple(ps))
                for t, ps in sorted(topics.items())
            )
        )
        if s.version < 8:
            return s.make(
                "OffsetFetchRequest",
                group_id=group_id,
                topics=wanted,
                require_stable=require_stable,
            )
        group = s.make(
            "OffsetFetchRequestGroup",
            group_id=group_id,
            member_id=None,
            member_epoch=-1,
            topics=wanted,
        )
        return s.make("OffsetFetchRequest", groups=(group,), require_stable=require_stable)

    low = REQUIRE_STABLE_MIN_VERSION if require_stable else 1 if topics is not None else 2
    return _call(API_OFFSET_FETCH, low, 9, build)


@dataclass(frozen=True, slots=True)
class FetchedOffsets:
    error_code: int
    """The group-level error (0 none)."""
    offsets: dict[TopicPartition, int]
    """Committed offset of each partition answered without error (-1: none)."""
    errors: dict[TopicPartition, int]
    """Error code of each partition answered with one."""


def fetched_offsets(response: Any) -> FetchedOffsets:
    """The one group of an OffsetFetch answer, whatever its version."""
    group = response.groups[0] if hasattr(response, "groups") else response
    offsets: dict[TopicPartition, int] = {}
    errors: dict[TopicPartition, int] = {}
    for topic in group.topics:
        for p in topic.partitions:
            tp = (str(topic.name), int(p.partition_index))
            if int(p.error_code) != 0:
                errors[tp] = int(p.error_code)
            else:
                offsets[tp] = int(p.committed_offset)
    return FetchedOffsets(int(getattr(group, "error_code", 0)), offsets, errors)


def offset_commit(
    group_id: str,
    offsets: Mapping[TopicPartition, int],
    *,
    generation: int = NO_GENERATION,
    member_id: str = "",
) -> Call:
    """OffsetCommit (8) v2-v9: commit each partition's offset (no metadata, no leader
    epoch); by default as an admin tool does, from outside the group."""

    def build(s: Schema) -> Any:
        return s.make(
            "OffsetCommitRequest",
            group_id=group_id,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=-1)),
            topics=tuple(
                s.make(
                    "OffsetCommitRequestTopic",
                    name=topic,
                    partitions=tuple(
                        s.make(
                            "OffsetCommitRequestPartition",
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                        for p, o in parts
                    ),
                )
                for topic, parts in _by_topic(offsets.items()).items()
            ),
        )

    return _call(API_OFFSET_COMMIT, 2, 9, build)


def offset_delete(group_id: str, partitions: Iterable[TopicPartition]) -> Call:
    """OffsetDelete (47) v0: forget the group's committed offset of each partition."""

    def build(s: Schema) -> Any:
        return s.make(
            "OffsetDeleteRequest",
            group_id=group_id,
            topics=tuple(
                s.make(
                    "OffsetDeleteRequestTopic",
                    name=topic,
                    partitions=tuple(
                        s.make("OffsetDeleteRequestPartition", partition_index=p) for p, _ in parts
                    ),
                )
                for topic, parts in _by_topic((tp, None) for tp in partitions).items()
            ),
        )

    return _call(API_OFFSET_DELETE, 0, 0, build)


def txn_offset_commit(
    *,
    transactional_id: str,
    group_id: str,
    producer_id: int,
    producer_epoch: int,
    offsets: Mapping[TopicPartition, int],
    generation: int = NO_GENERATION,
    member_id: str = "",
    group_instance_id: str | None = None,
    metadata: str = "",
) -> Call:
    """TxnOffsetCommit (28) v0-v5: commit each partition's offset inside the producer's
    transaction (visible once the transaction commits). The member fields (v3+) are
    the consumer's group membership; by default none (a consumer outside a group)."""

    def build(s: Schema) -> Any:
        return s.make(
            "TxnOffsetCommitRequest",
            transactional_id=transactional_id,
            group_id=group_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=group_instance_id,
            topics=tuple(
                s.make(
                    "TxnOffsetCommitRequestTopic",
                    name=topic,
                    partitions=tuple(
                        s.make(
                            "TxnOffsetCommitRequestPartition",
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=-1,
                            committed_metadata=metadata,
                        )
                        for p, o in parts
                    ),
                )
                for topic, parts in _by_topic(offsets.items()).items()
            ),
        )

    return _call(API_TXN_OFFSET_COMMIT, 0, 5, build)


API_DESCRIBE_TRANSACTIONS, API_LIST_TRANSACTIONS = 65, 66
TRANSACTION_KEY_TYPE = 1
"""FindCoordinator key type of a transactional id."""


def list_transactions(*, states: Sequence[str] = (), producer_ids: Sequence[int] = ()) -> Call:
    """ListTransactions (66) v0-v2."""
    return _call(
        API_LIST_TRANSACTIONS,
        0,
        2,
        lambda s: s.make(
            "ListTransactionsRequest",
            state_filters=tuple(states),
            producer_id_filters=tuple(producer_ids),
        ),
    )


def describe_transactions(transactional_ids: Sequence[str]) -> Call:
    """DescribeTransactions (65) v0."""
    return _call(
        API_DESCRIBE_TRANSACTIONS,
        0,
        0,
        lambda s: s.make("DescribeTransactionsRequest", transactional_ids=tuple(transactional_ids)),
    )


API_DESCRIBE_PRODUCERS, API_WRITE_TXN_MARKERS = 61, 27


def describe_producers(partitions: Iterable[TopicPartition]) -> Call:
    """DescribeProducers (61) v0: the active producers of partitions (their leader
    answers)."""
    by_topic = _by_topic((tp, None) for tp in set(partitions))
    return _call(
        API_DESCRIBE_PRODUCERS,
        0,
        0,
        lambda s: s.make(
            "DescribeProducersRequest",
            topics=tuple(
                s.make("TopicRequest", name=t, partition_indexes=tuple(p for p, _ in parts))
                for t, parts in by_topic.items()
            ),
        ),
    )


def write_txn_markers(
    partitions: Iterable[TopicPartition],
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
) -> Call:
    """WriteTxnMarkers (27) v1-v2: one COMMIT or ABORT marker for a producer on
    partitions (what `kafka-transactions.sh abort` sends to the partition leader)."""
    by_topic = _by_topic((tp, None) for tp in set(partitions))
    return _call(
        API_WRITE_TXN_MARKERS,
        1,
        2,
        lambda s: s.make(
            "WriteTxnMarkersRequest",
            markers=(
                s.make(
                    "WritableTxnMarker",
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transaction_result=commit,
                    coordinator_epoch=coordinator_epoch,
                    topics=tuple(
                        s.make(
                            "WritableTxnMarkerTopic",
                            name=t,
                            partition_indexes=tuple(p for p, _ in parts),
                        )
                        for t, parts in by_topic.items()
                    ),
                ),
            ),
        ),
    )
