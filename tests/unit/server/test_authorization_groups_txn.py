"""The authorization matrix, continued: classic and consumer groups, transactions,
WriteTxnMarkers and the remaining admin APIs (same harness and StandardAuthorizer as
test_authorization.py; ALICE holds the grants each test gives, BOB none)."""

from __future__ import annotations

import datetime
from typing import Any

from shoal.client import requests
from shoal.client.calls import Call
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import request_schema
from shoal.security.acl import AclOperation as Op
from shoal.security.acl import ResourceType as RT
from tests.support.classic_groups import heartbeat_request, join_request, sync_request
from tests.support.consumer_wire import beat, describe
from tests.unit.server.authz_harness import ALICE, BOB, Harness, send

CLUSTER = "kafka-cluster"


def exact(request: Any) -> Call:
    return Call.exact(request)


def test_classic_group_apis_need_read_on_the_group(h: Harness) -> None:
    join = exact(join_request(5, "cg", member_id=""))
    refused = send(h, ALICE, join)
    assert refused.error_code == ErrorCode.group_authorization_failed
    assert refused.member_id == ""
    sync = exact(sync_request(3, "cg", "m", 1, {}))
    assert send(h, ALICE, sync).error_code == ErrorCode.group_authorization_failed
    beat_ = exact(heartbeat_request(3, "cg", "m", 1))
    assert send(h, ALICE, beat_).error_code == ErrorCode.group_authorization_failed
    leave = exact(
        request_schema(13, 3).make(
            "LeaveGroupRequest",
            group_id="cg",
            members=(
                request_schema(13, 3).make(
                    "MemberIdentity", member_id="m", group_instance_id=None, reason=None
                ),
            ),
        )
    )
    left = send(h, ALICE, leave)
    assert left.error_code == ErrorCode.group_authorization_failed
    assert left.members == ()
    h.allow(Op.READ, RT.GROUP, "cg")
    joined = send(h, ALICE, join)
    assert joined.error_code == ErrorCode.member_id_required  # v4+: first join gets an id
    assert send(h, ALICE, beat_).error_code != ErrorCode.group_authorization_failed


def test_consumer_group_heartbeat_and_describe(h: Harness) -> None:
    join = exact(beat(0, "cg", "m" * 22, 0, ["t"]))
    assert send(h, ALICE, join).error_code == ErrorCode.group_authorization_failed
    h.allow(Op.READ, RT.GROUP, "cg")
    assert send(h, ALICE, join).error_code == ErrorCode.topic_authorization_failed
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    assert send(h, ALICE, join).error_code == ErrorCode.none
    assert send(h, ALICE, exact(beat(0, "cg", "m" * 22, 1))).error_code == ErrorCode.none
    (described,) = send(h, ALICE, exact(describe(0, "cg"))).groups
    assert described.error_code == ErrorCode.none  # READ on the group implies DESCRIBE
    assert [m.member_id for m in described.members] == ["m" * 22]
    (refused,) = send(h, BOB, exact(describe(0, "cg"))).groups
    assert refused.error_code == ErrorCode.group_authorization_failed
    h.grant(BOB, Op.DESCRIBE, RT.GROUP, "cg")
    (hidden,) = send(h, BOB, exact(describe(0, "cg"))).groups
    assert hidden.error_code == ErrorCode.topic_authorization_failed  # assigned "t"
    assert hidden.members == ()


def test_offset_delete_needs_delete_on_group_and_read_on_topic(h: Harness) -> None:
    call = requests.offset_delete("cg", [("t", 0)])
    assert send(h, ALICE, call).error_code == ErrorCode.group_authorization_failed
    h.allow(Op.DELETE, RT.GROUP, "cg")
    response = send(h, ALICE, call)
    if response.error_code == ErrorCode.none:  # the group exists
        assert response.topics[0].partitions[0].error_code == ErrorCode.topic_authorization_failed
    else:
        assert response.error_code == ErrorCode.group_id_not_found


def test_delete_records_needs_delete_on_the_topic(h: Harness) -> None:
    schema = request_schema(21, 2)
    request = schema.make(
        "DeleteRecordsRequest",
        topics=(
            schema.make(
                "DeleteRecordsTopic",
                name="t",
                partitions=(schema.make("DeleteRecordsPartition", partition_index=0, offset=0),),
            ),
        ),
        timeout=datetime.timedelta(seconds=5),
    )
    refused = send(h, ALICE, exact(request)).topics[0].partitions[0]
    assert (refused.error_code, refused.low_watermark) == (ErrorCode.topic_authorization_failed, -1)
    h.allow(Op.DELETE, RT.TOPIC, "t")
    assert send(h, ALICE, exact(request)).topics[0].partitions[0].error_code == ErrorCode.none


def test_broker_configs_need_alter_configs_on_the_cluster(h: Harness) -> None:
    change = requests.ConfigChange("log.retention.ms", "100000")
    call = requests.incremental_alter_configs({(4, ""): [change]}, validate_only=True)
    assert send(h, ALICE, call).responses[0].error_code == ErrorCode.cluster_authorization_failed
    h.allow(Op.ALTER_CONFIGS, RT.CLUSTER, CLUSTER)
    assert send(h, ALICE, call).responses[0].error_code == ErrorCode.none


def test_write_txn_markers_needs_cluster_action(h: Harness) -> None:
    call = requests.write_txn_markers(
        [("t", 0)], producer_id=1, producer_epoch=0, coordinator_epoch=0, commit=False
    )
    (marker,) = send(h, ALICE, call).markers
    code = marker.topics[0].partitions[0].error_code
    assert code == ErrorCode.cluster_authorization_failed
    h.allow(Op.CLUSTER_ACTION, RT.CLUSTER, CLUSTER)
    (marker,) = send(h, ALICE, call).markers
    assert marker.topics[0].partitions[0].error_code != ErrorCode.cluster_authorization_failed


def _txn_producer(h: Harness) -> tuple[int, int]:
    h.allow(Op.WRITE, RT.TRANSACTIONAL_ID, "tx")
    schema = request_schema(22, 4)
    answer = send(
        h,
        ALICE,
        exact(
            schema.make(
                "InitProducerIdRequest",
                transactional_id="tx",
                transaction_timeout=datetime.timedelta(seconds=30),
                producer_id=-1,
                producer_epoch=-1,
            )
        ),
    )
    assert answer.error_code == ErrorCode.none
    return int(answer.producer_id), int(answer.producer_epoch)


def _add_partitions(producer: tuple[int, int], topic: str) -> Call:
    schema = request_schema(24, 3)
    return exact(
        schema.make(
            "AddPartitionsToTxnRequest",
            v3_and_below_transactional_id="tx",
            v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1],
            v3_and_below_topics=(
                schema.make("AddPartitionsToTxnTopic", name=topic, partitions=(0,)),
            ),
            transactions=(),
        )
    )


def test_transaction_apis(h: Harness) -> None:
    producer = _txn_producer(h)
    (refused,) = send(h, ALICE, _add_partitions(producer, "t")).results_by_topic_v3_and_below
    code = refused.results_by_partition[0].partition_error_code
    assert code == ErrorCode.topic_authorization_failed
    h.allow(Op.WRITE, RT.TOPIC, "t")
    (added,) = send(h, ALICE, _add_partitions(producer, "t")).results_by_topic_v3_and_below
    assert added.results_by_partition[0].partition_error_code == ErrorCode.none
    (other,) = send(h, BOB, _add_partitions(producer, "t")).results_by_topic_v3_and_below
    code = other.results_by_partition[0].partition_error_code
    assert code == ErrorCode.transactional_id_authorization_failed

    add_offsets = request_schema(25, 3).make(
        "AddOffsetsToTxnRequest",
        transactional_id="tx",
        producer_id=producer[0],
        producer_epoch=producer[1],
        group_id="cg",
    )
    assert send(h, ALICE, exact(add_offsets)).error_code == ErrorCode.group_authorization_failed
    assert (
        send(h, BOB, exact(add_offsets)).error_code
        == ErrorCode.transactional_id_authorization_failed
    )
    h.allow(Op.READ, RT.GROUP, "cg")
    assert send(h, ALICE, exact(add_offsets)).error_code == ErrorCode.none

    h.allow(Op.READ, RT.TOPIC, "t")  # WRITE alone does not let it commit offsets of "t"
    commit = requests.txn_offset_commit(
        transactional_id="tx",
        group_id="cg",
        producer_id=producer[0],
        producer_epoch=producer[1],
        offsets={("t", 0): 0, ("secret", 0): 0},
    )
    committed = send(h, ALICE, commit)
    codes = {t.name: t.partitions[0].error_code for t in committed.topics}
    assert codes["secret"] == ErrorCode.topic_authorization_failed
    assert codes["t"] != ErrorCode.topic_authorization_failed
    denied = send(h, BOB, commit)
    assert {p.error_code for t in denied.topics for p in t.partitions} == {
        ErrorCode.transactional_id_authorization_failed
    }

    end = request_schema(26, 3).make(
        "EndTxnRequest",
        transactional_id="tx",
        producer_id=producer[0],
        producer_epoch=producer[1],
        committed=False,
    )
    assert send(h, BOB, exact(end)).error_code == ErrorCode.transactional_id_authorization_failed
    assert send(h, ALICE, exact(end)).error_code == ErrorCode.none
