"""Authorization of the partition-admin APIs, as Kafka checks it: ALTER on the cluster
for AlterPartitionReassignments, ElectLeaders and AlterReplicaLogDirs, DESCRIBE on the
cluster (which ALTER implies) for ListPartitionReassignments and DescribeLogDirs
(authz_harness.py: ALICE holds what a test grants, topics "t" and "secret" exist)."""

from __future__ import annotations

from kio.schema.alter_partition_reassignments.v1.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kio.schema.alter_replica_log_dirs.v2.request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic, DescribeLogDirsRequest
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest, TopicPartitions
from kio.schema.list_partition_reassignments.v0.request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32

from shoal.client.calls import Call
from shoal.protocol.errors import ErrorCode
from shoal.security.acl import AclOperation as Op
from shoal.security.acl import ResourceType as RT
from tests.unit.server.authz_harness import ALICE, Harness, send

CLUSTER = "kafka-cluster"


def codes(results: object, partitions: str, index: str) -> list[tuple[int, ErrorCode]]:
    return [
        (int(getattr(p, index)), ErrorCode(p.error_code))
        for topic in results  # type: ignore[attr-defined]
        for p in getattr(topic, partitions)
    ]


def test_alter_partition_reassignments_needs_alter_on_the_cluster(h: Harness) -> None:
    request = Call.exact(
        AlterPartitionReassignmentsRequest(
            topics=(
                ReassignableTopic(
                    name=TopicName("t"),
                    partitions=(
                        ReassignablePartition(partition_index=i32(0), replicas=(BrokerId(1),)),
                    ),
                ),
            )
        )
    )
    h.allow(Op.DESCRIBE, RT.CLUSTER, CLUSTER)
    refused = send(h, ALICE, request)
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert codes(refused.responses, "partitions", "partition_index") == [
        (0, ErrorCode.cluster_authorization_failed)
    ]
    h.allow(Op.ALTER, RT.CLUSTER, CLUSTER)
    done = send(h, ALICE, request)
    assert done.error_code == ErrorCode.none
    assert codes(done.responses, "partitions", "partition_index") == [(0, ErrorCode.none)]


def test_list_partition_reassignments_needs_describe_on_the_cluster(h: Harness) -> None:
    request = Call.exact(
        ListPartitionReassignmentsRequest(
            topics=(
                ListPartitionReassignmentsTopics(name=TopicName("t"), partition_indexes=(i32(0),)),
            )
        )
    )
    h.allow(Op.CREATE, RT.CLUSTER, CLUSTER)  # ALTER would imply DESCRIBE
    refused = send(h, ALICE, request)
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in refused.topics] == [
        ("t", [0])
    ]
    h.allow(Op.DESCRIBE, RT.CLUSTER, CLUSTER)
    listed = send(h, ALICE, request)
    assert (listed.error_code, listed.topics) == (ErrorCode.none, ())


def test_elect_leaders_needs_alter_on_the_cluster(h: Harness) -> None:
    request = Call.exact(
        ElectLeadersRequest(
            election_type=i8(0),
            topic_partitions=(TopicPartitions(topic=TopicName("t"), partitions=(i32(0),)),),
        )
    )
    h.allow(Op.DESCRIBE, RT.CLUSTER, CLUSTER)
    refused = send(h, ALICE, request)
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert codes(refused.replica_election_results, "partition_result", "partition_id") == [
        (0, ErrorCode.cluster_authorization_failed)
    ]
    h.allow(Op.ALTER, RT.CLUSTER, CLUSTER)
    elected = send(h, ALICE, request)
    assert elected.error_code == ErrorCode.none
    assert codes(elected.replica_election_results, "partition_result", "partition_id") == [
        (0, ErrorCode.election_not_needed)
    ]


def test_describe_log_dirs_needs_describe_on_the_cluster(h: Harness) -> None:
    request = Call.exact(
        DescribeLogDirsRequest(
            topics=(DescribableLogDirTopic(topic=TopicName("secret"), partitions=(i32(0),)),)
        )
    )
    h.allow(Op.CREATE, RT.CLUSTER, CLUSTER)  # ALTER would imply DESCRIBE
    refused = send(h, ALICE, request)
    assert (refused.error_code, refused.results) == (ErrorCode.cluster_authorization_failed, ())
    h.allow(Op.DESCRIBE, RT.CLUSTER, CLUSTER)
    (described,) = send(h, ALICE, request).results
    assert described.log_dir == str(h.broker.logs.data_dir.absolute())
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in described.topics] == [
        ("secret", [0])
    ]


def test_alter_replica_log_dirs_needs_alter_on_the_cluster(h: Harness) -> None:
    here = str(h.broker.logs.data_dir.absolute())
    request = Call.exact(
        AlterReplicaLogDirsRequest(
            dirs=(
                AlterReplicaLogDir(
                    path=here,
                    topics=(AlterReplicaLogDirTopic(name=TopicName("t"), partitions=(i32(0),)),),
                ),
            )
        )
    )
    h.allow(Op.DESCRIBE, RT.CLUSTER, CLUSTER)
    refused = send(h, ALICE, request)
    assert codes(refused.results, "partitions", "partition_index") == [
        (0, ErrorCode.cluster_authorization_failed)
    ]
    h.allow(Op.ALTER, RT.CLUSTER, CLUSTER)
    done = send(h, ALICE, request)
    assert codes(done.results, "partitions", "partition_index") == [(0, ErrorCode.none)]
