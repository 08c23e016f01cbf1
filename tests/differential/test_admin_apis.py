"""Admin and inter-broker APIs, API by API: the same requests to Kafka 4.2 and to Shoal,
their answers compared with ids, times, offsets of Kafka's metadata log and ports
normalised.

OffsetForLeaderEpoch (23), DescribeTopicPartitions (75, and `kafka-topics --describe`
on it), the delegation token APIs (38-41, byte for byte), DescribeQuorum (55),
UpdateFeatures (57), UnregisterBroker (64), AddRaftVoter (80), RemoveRaftVoter (81).
Where Shoal differs on purpose the test says why in one line and asserts Shoal's
documented answer.
"""

from __future__ import annotations

import datetime
import socket
import subprocess
import time
import uuid
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.protocol import codec
from shoal.protocol.codec import SIZE
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.batches import values_batch
from tests.support.topics import create_topic
from tests.support.wire import call1

READY_TIMEOUT_S = 30.0
UNKNOWN_SERVER_ERROR = ErrorCode.unknown_server_error


def _ms(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)


def _produced(bootstrap: str, topic: str, count: int, *, partition: int = 0) -> None:
    """Produce `count` records, retrying while a new topic's leader is not yet ready
    (Kafka answers NOT_LEADER_OR_FOLLOWER for a moment after CreateTopics)."""
    from shoal.client import requests

    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        response = call1(bootstrap, requests.produce({(topic, partition): values_batch(count)}))
        (result,) = response.responses[0].partition_responses
        if result.error_code == ErrorCode.none:
            return
        assert result.error_code in (
            ErrorCode.not_leader_or_follower,
            ErrorCode.unknown_topic_or_partition,
        ), result
        assert time.monotonic() < deadline, result
        time.sleep(0.1)


# ---- OffsetForLeaderEpoch (23)


def _epoch_requests(schema: Any, topic: str) -> Any:
    def asked(current: int, epoch: int, partition: int = 0) -> Any:
        return schema.make(
            "OffsetForLeaderPartition",
            partition=partition,
            current_leader_epoch=current,
            leader_epoch=epoch,
        )

    partitions = (
        asked(-1, 0),  # the current epoch: ends at the log end
        asked(-1, -1),  # undefined
        asked(-1, 1),  # above every known epoch
        asked(-1, -2),  # below the first: ends where the first starts
        asked(0, 0),
        asked(1, 0),  # current epoch above the leader's: UNKNOWN_LEADER_EPOCH
        asked(-5, 0),  # below: FENCED_LEADER_EPOCH
        asked(-1, 0, partition=1),  # an empty partition
        asked(-1, 0, partition=7),  # no such partition
    )
    return schema.make(
        "OffsetForLeaderEpochRequest",
        replica_id=-1,
        topics=(
            schema.make("OffsetForLeaderTopic", topic=topic, partitions=partitions),
            schema.make("OffsetForLeaderTopic", topic=f"{topic}-none", partitions=(asked(-1, 0),)),
            schema.make("OffsetForLeaderTopic", topic=topic, partitions=(asked(-1, 0),)),
        ),
    )


def _epoch_answers(bootstrap: str, topic: str, version: int) -> list[tuple[Any, ...]]:
    schema = request_schema(23, version)
    response = call1(bootstrap, _epoch_requests(schema, topic))
    return [
        (t.topic, int(p.partition), p.error_code.name, int(p.leader_epoch), int(p.end_offset))
        for t in response.topics
        for p in t.partitions
    ]


def _offset_for_leader_epoch(bootstrap: str, topic: str) -> dict[str, Any]:
    create_topic(bootstrap, topic, partitions=2)
    _produced(bootstrap, topic, 3)
    _produced(bootstrap, topic, 2)
    answers: dict[str, Any] = {
        f"v{version}": _epoch_answers(bootstrap, topic, version) for version in (2, 3, 4)
    }
    deleted = request_schema(21, 2)
    response = call1(
        bootstrap,
        deleted.make(
            "DeleteRecordsRequest",
            topics=(
                deleted.make(
                    "DeleteRecordsTopic",
                    name=topic,
                    partitions=(
                        deleted.make("DeleteRecordsPartition", partition_index=0, offset=2),
                    ),
                ),
            ),
            timeout=_ms(10_000),
        ),
    )
    assert response.topics[0].partitions[0].error_code == ErrorCode.none, response
    answers["after DeleteRecords"] = _epoch_answers(bootstrap, topic, 4)
    return answers


def test_offset_for_leader_epoch(pair: Pair) -> None:
    kafka, shoal = pair.run(_offset_for_leader_epoch, unique("ofle"))
    assert shoal == kafka
    # The answers that matter to a Java consumer validating its position:
    assert kafka["v4"][0][2:] == ("none", 0, 5)
    assert kafka["after DeleteRecords"][3][2:] == ("none", -2, 2)


# ---- DescribeTopicPartitions (75)


def _describe_topic_partitions(
    bootstrap: str, names: Sequence[str], *, limit: int, cursor: tuple[str, int] | None
) -> tuple[Any, ...]:
    schema = request_schema(75, 0)
    request = schema.make(
        "DescribeTopicPartitionsRequest",
        topics=tuple(schema.make("TopicRequest", name=name) for name in names),
        response_partition_limit=limit,
        cursor=None
        if cursor is None
        else schema.make("Cursor", topic_name=cursor[0], partition_index=cursor[1]),
    )
    response = call1(bootstrap, request)
    topics = tuple(
        (
            t.error_code.name,
            t.name,
            t.topic_id is not None,  # ids differ between brokers: whether there is one
            t.is_internal,
            int(t.topic_authorized_operations),
            tuple(
                (
                    int(p.partition_index),
                    p.error_code.name,
                    int(p.leader_id),
                    int(p.leader_epoch),
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    p.eligible_leader_replicas,
                    p.last_known_elr,
                    tuple(p.offline_replicas),
                )
                for p in t.partitions
            ),
        )
        for t in response.topics
    )
    next_cursor = response.next_cursor
    return topics, (
        None if next_cursor is None else (next_cursor.topic_name, int(next_cursor.partition_index))
    )


def _created_for_paging(bootstrap: str, prefix: str) -> list[str]:
    names = [f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"]
    for name, count in zip(names, (3, 1, 2), strict=True):
        create_topic(bootstrap, name, partitions=count)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:  # Kafka's metadata cache learns of new topics a moment later
        topics, _ = _describe_topic_partitions(bootstrap, names, limit=100, cursor=None)
        if all(t[0] == "none" for t in topics):
            return names
        assert time.monotonic() < deadline, topics
        time.sleep(0.1)


def _paging(bootstrap: str, prefix: str) -> dict[str, Any]:
    a, b, c = _created_for_paging(bootstrap, prefix)
    unknown, invalid = f"{prefix}-zz", "bad name!"
    # Unsorted, one repeated; an internal name neither broker has created yet.
    named = [c, a, b, unknown, invalid, a, "__transaction_state"]
    pages: dict[str, Any] = {}
    for limit in (2000, 1, 2, 3, 4, 0, -5):
        pages[f"named, limit {limit}"] = _describe_topic_partitions(
            bootstrap, named, limit=limit, cursor=None
        )
    for limit, cursor in (
        (2, (a, 2)),
        (2, (b, 5)),  # past the topic's partitions
        (10, (c, 1)),
        (10, (unknown, 0)),
        (5, (f"{prefix}-q", 0)),  # not among the named topics: INVALID_REQUEST
        (5, (a, -1)),  # a negative partition: INVALID_REQUEST
    ):
        pages[f"named, limit {limit}, cursor {cursor}"] = _describe_topic_partitions(
            bootstrap, named, limit=limit, cursor=cursor
        )
    # Every topic, from the cursor on; the pages end within this test's topics.
    for limit, cursor in ((3, (a, 0)), (4, (a, 1)), (5, (a, 0)), (2, (f"{prefix}-aa", 0))):
        pages[f"every topic, limit {limit}, cursor {cursor}"] = _describe_topic_partitions(
            bootstrap, [], limit=limit, cursor=cursor
        )
    return pages


def test_describe_topic_partitions_pages_as_kafka_does(pair: Pair) -> None:
    kafka, shoal = pair.run(_paging, unique("dtp"))
    assert shoal == kafka


def _empty_name_without_cursor(bootstrap: str, prefix: str) -> list[tuple[str, str]]:
    create_topic(bootstrap, f"{prefix}-a", partitions=1)
    topics, _ = _describe_topic_partitions(bootstrap, ["", "x"], limit=10, cursor=None)
    return [(t[0], t[1]) for t in topics]


def test_describe_topic_partitions_empty_name_differs_on_purpose(pair: Pair) -> None:
    """On purpose: Kafka fails the whole request (a NullPointerException) when a topic
    named "" comes without a cursor; Shoal answers that topic INVALID_TOPIC_EXCEPTION."""
    kafka, shoal = pair.run(_empty_name_without_cursor, unique("dtpe"))
    assert kafka == [("unknown_server_error", ""), ("unknown_server_error", "x")]
    assert shoal == [("invalid_topic_exception", ""), ("unknown_topic_or_partition", "x")]


def _kafka_topics_describe(bootstrap: str, topic: str) -> list[str]:
    create_topic(bootstrap, topic, partitions=3)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        done = kafka_reference.run_tool(
            "kafka-topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic
        )
        if done.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # The topic id differs between brokers; the partition lines are compared whole.
    return [line for line in lines if "Partition:" in line] + [
        line.split("\t")[2] for line in lines if "PartitionCount:" in line
    ]


def test_kafka_topics_describe(pair: Pair) -> None:
    """Java Admin 4.x describeTopics asks DescribeTopicPartitions."""
    kafka, shoal = pair.run(_kafka_topics_describe, unique("ktd"))
    assert shoal == kafka
    assert len(kafka) == 4 and "Elr: \tLastKnownElr: " in kafka[0], kafka


# ---- Delegation tokens (38-41): byte for byte


def _raw_body(bootstrap: str, request: Any) -> bytes:
    """The response's body bytes (after its header): kio cannot decode the -1
    timestamps of a refused token request."""
    api_key, version = int(request.__api_key__), int(request.__version__)
    header = codec.request_header_for(api_key, version, 7, "shoal-differential")
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(codec.encode_request(header, request))
        (size,) = SIZE.unpack(_read_exactly(sock, SIZE.size))
        frame = _read_exactly(sock, size)
    header_size = 5 if codec.is_flexible(api_key, version) else 4  # id, empty tags
    assert int.from_bytes(frame[:4], "big") == 7
    return frame[header_size:]


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def _token_requests() -> list[Any]:
    requests = []
    for version in (1, 2, 3):
        s = request_schema(38, version)
        requests.append(
            s.make(
                "CreateDelegationTokenRequest",
                owner_principal_type=None,
                owner_principal_name=None,
                renewers=(s.make("CreatableRenewers", principal_type="User", principal_name="x"),),
                max_lifetime=_ms(-1),
            )
        )
    s = request_schema(38, 3)
    requests.append(
        s.make(
            "CreateDelegationTokenRequest",
            owner_principal_type="User",
            owner_principal_name="bob",
            renewers=(),
            max_lifetime=_ms(60_000),
        )
    )
    for version in (1, 2):
        requests.append(
            request_schema(39, version).make(
                "RenewDelegationTokenRequest", hmac=b"\x01\x02", renew_period=_ms(1000)
            )
        )
        requests.append(
            request_schema(40, version).make(
                "ExpireDelegationTokenRequest", hmac=b"\x01\x02", expiry_time_period=_ms(-1)
            )
        )
    for version in (1, 2, 3):
        s = request_schema(41, version)
        requests.append(s.make("DescribeDelegationTokenRequest", owners=None))
        requests.append(
            s.make(
                "DescribeDelegationTokenRequest",
                owners=(
                    s.make(
                        "DescribeDelegationTokenOwner", principal_type="User", principal_name="a"
                    ),
                ),
            )
        )
    return requests


def _token_answers(bootstrap: str) -> list[bytes]:
    return [_raw_body(bootstrap, request) for request in _token_requests()]


def test_delegation_token_apis_over_plaintext_are_refused_byte_for_byte(pair: Pair) -> None:
    kafka, shoal = pair.run(_token_answers)
    assert shoal == kafka
    not_allowed = int(ErrorCode.delegation_token_request_not_allowed).to_bytes(2, "big")
    assert all(body.startswith(not_allowed) for body in kafka), kafka


# ---- DescribeQuorum (55)


def _quorum(bootstrap: str) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for version in (0, 1, 2):
        s = request_schema(55, version)
        for label, topics in (
            ("metadata partition", [("__cluster_metadata", (0,))]),
            ("another partition", [("__cluster_metadata", (1,))]),
            ("another topic", [("other", (0,))]),
            ("twice", [("__cluster_metadata", (0, 0))]),
            ("nothing", []),
        ):
            request = s.make(
                "DescribeQuorumRequest",
                topics=tuple(
                    s.make(
                        "TopicData",
                        topic_name=name,
                        partitions=tuple(s.make("PartitionData", partition_index=p) for p in ps),
                    )
                    for name, ps in topics
                ),
            )
            answers[f"v{version} {label}"] = _normalised_quorum(call1(bootstrap, request))
    return answers


def _normalised_quorum(response: Any) -> Any:
    """Offsets of Kafka's metadata log, times, the voter's directory id and endpoint
    become what they are, not their values."""

    def replica(r: Any) -> Any:
        return (
            int(r.replica_id),
            int(r.log_end_offset) >= 0,
            int(getattr(r, "last_fetch_timestamp", 1)) > 0,
            int(getattr(r, "last_caught_up_timestamp", 1)) > 0,
        )

    return (
        response.error_code.name,
        getattr(response, "error_message", None),
        tuple(
            (
                t.topic_name,
                tuple(
                    (
                        int(p.partition_index),
                        p.error_code.name,
                        getattr(p, "error_message", None),
                        int(p.leader_id),
                        int(p.leader_epoch),
                        int(p.high_watermark) >= 0,
                        tuple(replica(r) for r in p.current_voters),
                        tuple(replica(r) for r in p.observers),
                    )
                    for p in t.partitions
                ),
            )
            for t in response.topics
        ),
        tuple(
            (int(n.node_id), tuple(listener.host for listener in n.listeners))
            for n in getattr(response, "nodes", ())
        ),
    )


def test_describe_quorum(pair: Pair) -> None:
    kafka, shoal = pair.run(_quorum)
    assert shoal == kafka
    assert kafka["v2 metadata partition"][2][0][1][0][6] == ((1, True, True, True),)


def _voter_details(bootstrap: str) -> tuple[Any, Any]:
    response = call1(
        bootstrap,
        request_schema(55, 2).make(
            "DescribeQuorumRequest",
            topics=(
                request_schema(55, 2).make(
                    "TopicData",
                    topic_name="__cluster_metadata",
                    partitions=(request_schema(55, 2).make("PartitionData", partition_index=0),),
                ),
            ),
        ),
    )
    (voter,) = response.topics[0].partitions[0].current_voters
    (node,) = response.nodes
    return voter.replica_directory_id, tuple(listener.name for listener in node.listeners)


def test_describe_quorum_voter_differs_on_purpose(pair: Pair) -> None:
    """On purpose: Shoal's quorum is static (kraft.version 0), so its voter has no
    directory id; its only endpoint is the listener the client came in on."""
    (kafka_directory, kafka_listeners), (shoal_directory, shoal_listeners) = pair.run(
        _voter_details
    )
    assert kafka_directory is not None and kafka_listeners == ("CONTROLLER",)
    assert shoal_directory is None and shoal_listeners == ("PLAINTEXT",)


# ---- UpdateFeatures (57), with ValidateOnly: Kafka's levels are never changed here

UPGRADE, SAFE, UNSAFE = 1, 2, 3
SAME_ANSWER = [
    [],
    [("metadata.version", 29, UPGRADE)],
    [("group.version", 1, UPGRADE)],
    [("share.version", 1, UPGRADE)],
    [("eligible.leader.replicas.version", 1, UPGRADE)],
    [("group.version", 1, UPGRADE), ("group.version", 1, UPGRADE)],
    [("nope.version", 1, UPGRADE)],
    [("nope.version", 0, SAFE)],
    [("group.version", 1, 0)],
    [("group.version", 1, 7)],
    [("group.version", -1, UNSAFE)],
    [("share.version", 2, UPGRADE)],
    [("share.version", 0, UPGRADE)],
]
"""Updates answered alike: no-ops, unknown features, bad upgrade types, a level out of
every range, a downgrade without a downgrade type."""
SAME_CODE = [
    [("metadata.version", 30, UPGRADE)],
    [("group.version", 2, UPGRADE)],
    [("metadata.version", 28, UPGRADE)],
    [("group.version", 5, UPGRADE), ("share.version", 0, SAFE)],
]
"""Refused by both (INVALID_UPDATE_VERSION); Kafka's message names its wider supported
range or its downgrade rule, Shoal's the one level it supports."""
DIFFERS_ON_PURPOSE = [
    [("share.version", 0, SAFE)],
    [("group.version", 0, UNSAFE)],
    [("metadata.version", 28, SAFE)],
    [("transaction.version", 0, UNSAFE)],
]
"""Downgrades Kafka accepts; Shoal's levels are fixed while it runs
(server/metadata/features.py)."""


def _update_features(bootstrap: str, cases: list[list[tuple[str, int, int]]]) -> list[Any]:
    answers = []
    for version in (0, 1, 2):
        s = request_schema(57, version)
        for case in cases:
            keys = tuple(
                s.make(
                    "FeatureUpdateKey",
                    feature=name,
                    max_version_level=level,
                    upgrade_type=kind,
                    allow_downgrade=kind != UPGRADE,
                )
                for name, level, kind in case
            )
            response = call1(
                bootstrap,
                s.make(
                    "UpdateFeaturesRequest",
                    timeout=_ms(10_000),
                    feature_updates=keys,
                    validate_only=True,
                ),
            )
            results = tuple(
                (r.feature, r.error_code.name, r.error_message)
                for r in getattr(response, "results", ())
            )
            answers.append(
                (version, case, response.error_code.name, response.error_message, results)
            )
    return answers


def test_update_features_answers_as_kafka(pair: Pair) -> None:
    kafka, shoal = pair.run(_update_features, SAME_ANSWER)
    assert shoal == kafka


def test_update_features_refuses_with_kafkas_code(pair: Pair) -> None:
    kafka, shoal = pair.run(_update_features, SAME_CODE)
    assert [a[:3] for a in shoal] == [a[:3] for a in kafka]
    assert {a[2] for a in kafka} == {"invalid_update_version"}


def test_update_features_downgrades_differ_on_purpose(pair: Pair) -> None:
    """On purpose: Shoal cannot change a feature level while running; Kafka (v1+) can."""
    kafka, shoal = pair.run(_update_features, DIFFERS_ON_PURPOSE)
    assert {a[2] for a in kafka if a[0] >= 1} == {"none"}
    assert {a[2] for a in shoal} == {"invalid_update_version"}


# ---- UnregisterBroker (64), AddRaftVoter (80), RemoveRaftVoter (81)


def _unregister(bootstrap: str, broker_ids: Sequence[int]) -> list[tuple[str, str | None]]:
    s = request_schema(64, 0)
    answers = []
    for broker_id in broker_ids:
        response = call1(bootstrap, s.make("UnregisterBrokerRequest", broker_id=broker_id))
        answers.append((response.error_code.name, response.error_message))
    return answers


def test_unregister_broker_of_another_id(pair: Pair) -> None:
    kafka, shoal = pair.run(_unregister, [2, -1])
    assert shoal == kafka


def test_unregister_broker_of_this_node_differs_on_purpose(pair: Pair) -> None:
    """On purpose: Kafka unregisters its own running broker (every partition loses its
    leader until a restart), so it is not asked here; Shoal refuses its own id."""
    ((code, _),) = _unregister(pair.shoal.bootstrap, [1])
    assert code == "invalid_request"


def _voters(bootstrap: str, cases: Sequence[tuple[str, int, bool]]) -> list[Any]:
    """(api, voter id, with a directory id) with the wrong cluster id, then without one."""
    answers = []
    for api, voter_id, with_directory in cases:
        directory = uuid.uuid4() if with_directory else None
        for cluster_id in ("not-this-cluster", None):
            versions = (0, 1) if api == "add" else (0,)
            for version in versions:
                if api == "add":
                    s = request_schema(80, version)
                    request = s.make(
                        "AddRaftVoterRequest",
                        cluster_id=cluster_id,
                        timeout=_ms(5_000),
                        voter_id=voter_id,
                        voter_directory_id=directory,
                        listeners=(
                            s.make("Listener", name="CONTROLLER", host="127.0.0.1", port=9),
                        ),
                        ack_when_committed=True,
                    )
                else:
                    request = request_schema(81, 0).make(
                        "RemoveRaftVoterRequest",
                        cluster_id=cluster_id,
                        voter_id=voter_id,
                        voter_directory_id=directory,
                    )
                response = call1(bootstrap, request)
                message = response.error_message or ""
                answers.append(
                    (
                        api,
                        voter_id,
                        cluster_id,
                        version,
                        response.error_code.name,
                        message.split(" doesn't match")[0],
                    )  # the cluster id itself differs
                )
    return answers


def test_raft_voter_requests_checked_as_kafka_checks_them(pair: Pair) -> None:
    kafka, shoal = pair.run(_voters, [("remove", 1, False), ("add", 2, False), ("add", 2, True)])
    same = [a for a in kafka if a[2] is not None or "valid voter" in a[5]]
    assert [a for a in shoal if a in same] == same
    assert {a[4] for a in same} == {"inconsistent_cluster_id", "invalid_request"}


def test_raft_voter_changes_differ_on_purpose(pair: Pair) -> None:
    """On purpose: Shoal is a static quorum (kraft.version 0) and answers adding or
    removing a voter as Kafka does at that level; Kafka (kraft.version 1) tries."""
    kafka, shoal = pair.run(_voters, [("remove", 7, True), ("add", 2, True)])
    assert {a[4] for a in kafka if a[2] is None} <= {"voter_not_found", "request_timed_out"}
    assert {(a[4], a[5]) for a in shoal if a[2] is None} == {
        (
            "unsupported_version",
            "Cluster doesn't support removing voter because the kraft.version feature is 0",
        ),
        (
            "unsupported_version",
            "Cluster doesn't support adding voter because the kraft.version feature is 0",
        ),
    }


def _metadata_quorum_status(bootstrap: str) -> dict[str, str]:
    done = subprocess.run(
        kafka_reference.java_command(
            "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-server",
            bootstrap,
            "describe",
            "--status",
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    fields = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in fields.items()}


def test_kafka_metadata_quorum_describe_status(pair: Pair) -> None:
    """`kafka-metadata-quorum describe --status`: one voter, leading, no lag; the ids,
    the high watermark and the voter's endpoint and directory id are the brokers' own."""
    kafka, shoal = pair.run(_metadata_quorum_status)
    same = ("LeaderId", "LeaderEpoch", "MaxFollowerLag", "MaxFollowerLagTimeMs", "CurrentObservers")
    assert {k: shoal[k] for k in same} == {k: kafka[k] for k in same}
    assert (kafka["LeaderId"], kafka["CurrentObservers"]) == ("1", "[]")
    assert (
        shoal["CurrentVoters"]
        == f'[{{"id": 1, "endpoints": ["PLAINTEXT://{pair.shoal.bootstrap}"]}}]'
    )


def _console_consume(
    bootstrap: str, topic: str, group: str, count: int, protocol: str
) -> list[str]:
    done = kafka_reference.run_tool(
        "kafka-console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        str(count),
        "--timeout-ms",
        "60000",
        "--command-property",
        f"group.protocol={protocol}",
        timeout_s=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def _resume_from_committed(bootstrap: str, topic: str, protocol: str) -> list[list[str]]:
    """A Java consumer resumes from an offset committed with its leader epoch, which it
    validates with OffsetForLeaderEpoch before fetching (KIP-320)."""
    create_topic(bootstrap, topic, partitions=1)
    _produced(bootstrap, topic, 5)
    group = f"{topic}-g"
    first = _console_consume(bootstrap, topic, group, 3, protocol)
    _produced(bootstrap, topic, 2)
    return [first, _console_consume(bootstrap, topic, group, 4, protocol)]


def test_java_consumer_resumes_from_a_committed_offset(pair: Pair) -> None:
    for protocol in ("classic", "consumer"):
        kafka, shoal = pair.run(_resume_from_committed, unique(f"resume-{protocol}"), protocol)
        assert shoal == kafka, protocol
        assert kafka == [["v0", "v1", "v2"], ["v3", "v4", "v0", "v1"]], kafka
