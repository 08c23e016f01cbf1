"""The authorization matrix at the handler level: for each API, a principal holding
exactly the ACLs Kafka asks for succeeds, and one without gets Kafka's error.

Real handlers and services (an in-process broker with its coordinators started, no
socket), a real `RequestContext` per principal, and the real StandardAuthorizer
holding ALLOW ACLs (authz_harness.py). ALICE holds the ACLs each test grants; BOB
holds none.
"""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

from shoal.client import requests, scram_requests
from shoal.client.calls import Call
from shoal.client.requests import TOPIC_RESOURCE, FetchPosition
from shoal.client.share_requests import heartbeat, share_acknowledge, share_fetch
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import request_schema
from shoal.security.acl import AclOperation as Op
from shoal.security.acl import ResourceType as RT
from shoal.server.broker import Broker
from shoal.server.handlers.common import authorized_operations as ops
from tests.support.batches import values_batch
from tests.unit.server.authz_harness import ALICE, BOB, Harness, send, topic_id

MEMBER = "m" * 22
NOT_REQUESTED = -(2**31)


def _bits(*operations: Op) -> int:
    return sum(1 << int(op) for op in operations)


# ---- Metadata


def test_metadata_lists_only_describable_topics(h: Harness) -> None:
    h.allow(Op.READ, RT.TOPIC, "t")  # READ implies DESCRIBE
    listed = send(h, ALICE, requests.metadata(None))
    assert [t.name for t in listed.topics] == ["t"]
    assert send(h, BOB, requests.metadata(None)).topics == ()


def test_metadata_named_undescribable_topic_is_refused_without_its_id(h: Harness) -> None:
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    response = send(h, ALICE, requests.metadata(["t", "secret"]))
    by_name = {t.name: t for t in response.topics}
    assert by_name["t"].error_code == ErrorCode.none
    assert by_name["secret"].error_code == ErrorCode.topic_authorization_failed
    assert by_name["secret"].partitions == ()
    assert by_name["secret"].topic_id != topic_id(h, "secret")


def test_metadata_auto_create_needs_create(h: Harness) -> None:
    h.allow(Op.DESCRIBE, RT.TOPIC, "*")
    refused = send(h, ALICE, requests.metadata(["new"], allow_auto_topic_creation=True))
    assert refused.topics[0].error_code == ErrorCode.topic_authorization_failed
    assert h.broker.logs.topic("new") is None
    h.allow(Op.CREATE, RT.TOPIC, "new")
    created = send(h, ALICE, requests.metadata(["new"], allow_auto_topic_creation=True))
    assert created.topics[0].error_code == ErrorCode.unknown_topic_or_partition  # as Kafka
    assert h.broker.logs.topic("new") is not None


def test_metadata_authorized_operations_are_the_principals(h: Harness) -> None:
    h.allow(Op.READ, RT.TOPIC, "t")
    call = requests.metadata(["t"])
    version = 10
    request = call.build(version)
    asked = dataclass_replace(
        request,
        include_topic_authorized_operations=True,
        include_cluster_authorized_operations=True,
    )
    response = send(h, ALICE, Call.exact(asked))
    assert response.topics[0].topic_authorized_operations == _bits(Op.READ, Op.DESCRIBE)
    assert response.cluster_authorized_operations == 0  # no DESCRIBE on the cluster


def dataclass_replace(obj: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(obj, **changes)


# ---- Produce / Fetch / ListOffsets / DescribeProducers


def test_produce_needs_write_on_the_topic(h: Harness) -> None:
    h.allow(Op.WRITE, RT.TOPIC, "t")
    call = requests.produce({("t", 0): values_batch(1), ("secret", 0): values_batch(1)})
    response = send(h, ALICE, call)
    codes = {t.name: t.partition_responses[0].error_code for t in response.responses}
    assert codes == {"t": ErrorCode.none, "secret": ErrorCode.topic_authorization_failed}
    assert h.broker.logs.partition("secret", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_transactional_produce_needs_write_on_the_transactional_id(h: Harness) -> None:
    h.allow(Op.WRITE, RT.TOPIC, "t")
    call = requests.produce({("t", 0): values_batch(1)}, transactional_id="tx")
    response = send(h, ALICE, call)
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == ErrorCode.transactional_id_authorization_failed


def test_fetch_needs_read_on_the_topic(h: Harness) -> None:
    send(h, BOB, requests.produce({("t", 0): values_batch(2)}))  # refused: no WRITE
    h.grant(BOB, Op.WRITE, RT.TOPIC, "t")
    send(h, BOB, requests.produce({("t", 0): values_batch(2)}))
    h.allow(Op.READ, RT.TOPIC, "t")
    call = requests.fetch(
        {("t", 0): FetchPosition(0, 1 << 20), ("secret", 0): FetchPosition(0, 1 << 20)},
        max_wait_ms=0,
    )
    response = send(h, ALICE, call)
    parts = {t.topic: t.partitions[0] for t in response.responses}
    assert parts["t"].error_code == ErrorCode.none and parts["t"].records
    assert parts["secret"].error_code == ErrorCode.topic_authorization_failed


def test_fetch_of_only_unauthorized_topics_answers_at_once(h: Harness) -> None:
    call = requests.fetch({("t", 0): FetchPosition(0, 1 << 20)}, max_wait_ms=60_000)
    response = asyncio.run(asyncio.wait_for(h.send(BOB, call), timeout=10))
    assert response.responses[0].partitions[0].error_code == ErrorCode.topic_authorization_failed


def test_list_offsets_and_describe_producers(h: Harness) -> None:
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    offsets = send(h, ALICE, requests.list_offsets({("t", 0): -1, ("secret", 0): -1}))
    codes = {t.name: t.partitions[0].error_code for t in offsets.topics}
    assert codes == {"t": ErrorCode.none, "secret": ErrorCode.topic_authorization_failed}
    producers = send(h, ALICE, requests.describe_producers([("t", 0)]))
    assert producers.topics[0].partitions[0].error_code == ErrorCode.topic_authorization_failed
    h.allow(Op.READ, RT.TOPIC, "t")
    producers = send(h, ALICE, requests.describe_producers([("t", 0)]))
    assert producers.topics[0].partitions[0].error_code == ErrorCode.none


# ---- Share groups


def _join(h: Harness, principal: Any, topics: list[str]) -> Any:
    return send(h, principal, heartbeat("g", MEMBER, 0, topics))


def test_share_group_heartbeat_needs_read_on_group_and_describe_on_topics(h: Harness) -> None:
    assert _join(h, ALICE, ["t"]).error_code == ErrorCode.group_authorization_failed
    h.allow(Op.READ, RT.GROUP, "g")
    assert _join(h, ALICE, ["t"]).error_code == ErrorCode.topic_authorization_failed
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    assert _join(h, ALICE, ["t"]).error_code == ErrorCode.none


def _fetch(h: Harness, principal: Any, *, epoch: int = 0) -> Any:
    tid = topic_id(h, "t")
    call = share_fetch(
        group_id="g",
        member_id=MEMBER,
        session_epoch=epoch,
        partitions=[(tid, 0)],
        max_wait_ms=0,
        max_records=10,
    )
    return send(h, principal, call)


def test_share_fetch_with_read_on_topic_but_not_group_cannot_acquire(h: Harness) -> None:
    h.allow(Op.READ, RT.TOPIC, "t")
    response = _fetch(h, ALICE)
    assert response.error_code == ErrorCode.group_authorization_failed
    assert response.responses == ()


def test_share_fetch_with_read_on_group_but_not_topic(h: Harness) -> None:
    h.allow(Op.READ, RT.GROUP, "g")
    response = _fetch(h, ALICE)
    assert response.error_code == ErrorCode.none
    (topic,) = response.responses
    (partition,) = topic.partitions
    assert partition.error_code == ErrorCode.topic_authorization_failed
    assert partition.acquired_records == ()


def test_share_fetch_with_read_on_group_and_topic_acquires(h: Harness) -> None:
    h.allow(Op.READ, RT.GROUP, "g")
    h.allow(Op.READ, RT.TOPIC, "t")
    assert _join(h, ALICE, ["t"]).error_code == ErrorCode.none
    assert _fetch(h, ALICE).error_code == ErrorCode.none  # the share-partition starts at the end
    h.grant(BOB, Op.WRITE, RT.TOPIC, "t")
    send(h, BOB, requests.produce({("t", 0): values_batch(3)}))
    response = _fetch(h, ALICE, epoch=1)
    assert response.error_code == ErrorCode.none
    (partition,) = response.responses[0].partitions
    assert partition.error_code == ErrorCode.none
    assert [(r.first_offset, r.last_offset) for r in partition.acquired_records] == [(0, 2)]


def test_share_acknowledge_needs_read_on_the_group(h: Harness) -> None:
    call = share_acknowledge(group_id="g", member_id=MEMBER, session_epoch=1)
    assert send(h, ALICE, call).error_code == ErrorCode.group_authorization_failed
    h.allow(Op.READ, RT.GROUP, "g")
    assert send(h, ALICE, call).error_code != ErrorCode.group_authorization_failed


def test_describe_only_on_a_share_group_describes_but_cannot_alter_or_delete(h: Harness) -> None:
    h.allow(Op.DESCRIBE, RT.GROUP, "g")
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    (described,) = send(h, ALICE, requests.share_group_describe(["g"])).groups
    assert described.error_code != ErrorCode.group_authorization_failed
    (offsets,) = send(h, ALICE, requests.describe_share_group_offsets("g", ["t"])).groups
    assert offsets.error_code == ErrorCode.none
    altered = send(h, ALICE, requests.alter_share_group_offsets("g", {("t", 0): 0}))
    assert altered.error_code == ErrorCode.group_authorization_failed
    deleted = send(h, ALICE, requests.delete_share_group_offsets("g", ["t"]))
    assert deleted.error_code == ErrorCode.group_authorization_failed
    (refused,) = send(h, BOB, requests.share_group_describe(["g"])).groups
    assert refused.error_code == ErrorCode.group_authorization_failed


def test_describe_share_group_offsets_refuses_undescribable_topics(h: Harness) -> None:
    h.allow(Op.DESCRIBE, RT.GROUP, "g")
    (group,) = send(h, ALICE, requests.describe_share_group_offsets("g", ["secret"])).groups
    (topic,) = group.topics
    assert topic.topic_name == "secret"
    assert all(p.error_code == ErrorCode.topic_authorization_failed for p in topic.partitions)


def test_alter_and_delete_share_group_offsets_need_read_on_topic(h: Harness) -> None:
    h.allow(Op.READ, RT.GROUP, "g")
    h.allow(Op.DELETE, RT.GROUP, "g")
    h.allow(Op.DESCRIBE, RT.TOPIC, "t")
    assert _join(h, ALICE, ["t"]).error_code == ErrorCode.none
    assert send(h, ALICE, heartbeat("g", MEMBER, -1, None)).error_code == ErrorCode.none
    altered = send(h, ALICE, requests.alter_share_group_offsets("g", {("secret", 0): 0}))
    assert altered.error_code == ErrorCode.none
    (topic,) = altered.responses
    assert topic.partitions[0].error_code == ErrorCode.topic_authorization_failed
    deleted = send(h, ALICE, requests.delete_share_group_offsets("g", ["secret"]))
    assert deleted.error_code == ErrorCode.none
    assert deleted.responses[0].error_code == ErrorCode.topic_authorization_failed


def test_share_state_rpcs_need_cluster_action(h: Harness) -> None:
    schema = request_schema(87, 1)
    request = schema.make(
        "ReadShareGroupStateSummaryRequest",
        group_id="g",
        topics=(
            schema.make(
                "ReadStateSummaryData",
                topic_id=topic_id(h, "t"),
                partitions=(schema.make("PartitionData", partition=0, leader_epoch=0),),
            ),
        ),
    )
    refused = send(h, ALICE, Call.exact(request))
    code = refused.results[0].partitions[0].error_code
    assert code == ErrorCode.cluster_authorization_failed
    h.allow(Op.CLUSTER_ACTION, RT.CLUSTER, "kafka-cluster")
    answered = send(h, ALICE, Call.exact(request))
    assert answered.results[0].partitions[0].error_code != ErrorCode.cluster_authorization_failed


# ---- Groups, coordinators and offsets


def test_find_coordinator_needs_describe_on_the_key(h: Harness) -> None:
    (refused,) = send(h, ALICE, requests.find_coordinator("g")).coordinators
    assert refused.error_code == ErrorCode.group_authorization_failed
    assert refused.node_id == -1
    h.allow(Op.DESCRIBE, RT.GROUP, "g")
    (found,) = send(h, ALICE, requests.find_coordinator("g")).coordinators
    assert found.error_code == ErrorCode.none
    (txn,) = send(h, ALICE, requests.find_coordinator("tx", key_type=1)).coordinators
    assert txn.error_code == ErrorCode.transactional_id_authorization_failed


def test_offset_commit_and_fetch(h: Harness) -> None:
    commit = requests.offset_commit("cg", {("t", 0): 1, ("secret", 0): 1})
    refused = send(h, ALICE, commit)
    codes = {p.error_code for t in refused.topics for p in t.partitions}
    assert codes == {ErrorCode.group_authorization_failed}
    h.allow(Op.READ, RT.GROUP, "cg")
    h.allow(Op.READ, RT.TOPIC, "t")
    committed = send(h, ALICE, commit)
    codes_by_topic = {t.name: t.partitions[0].error_code for t in committed.topics}
    assert codes_by_topic == {"t": ErrorCode.none, "secret": ErrorCode.topic_authorization_failed}
    fetched = send(h, ALICE, requests.offset_fetch("cg", {"t": [0], "secret": [0]}))
    (group,) = fetched.groups
    found = {
        t.name: (t.partitions[0].error_code, t.partitions[0].committed_offset) for t in group.topics
    }
    assert found == {"t": (ErrorCode.none, 1), "secret": (ErrorCode.topic_authorization_failed, -1)}
    (every,) = send(h, ALICE, requests.offset_fetch("cg")).groups
    assert [t.name for t in every.topics] == ["t"]
    (denied,) = send(h, BOB, requests.offset_fetch("cg")).groups
    assert denied.error_code == ErrorCode.group_authorization_failed


def test_list_describe_and_delete_groups(h: Harness) -> None:
    h.grant(BOB, Op.READ, RT.GROUP, "cg")
    h.grant(BOB, Op.READ, RT.TOPIC, "t")
    send(h, BOB, requests.offset_commit("cg", {("t", 0): 1}))
    assert send(h, ALICE, requests.list_groups()).groups == ()
    h.allow(Op.DESCRIBE, RT.GROUP, "cg")
    assert [g.group_id for g in send(h, ALICE, requests.list_groups()).groups] == ["cg"]
    (described,) = send(h, ALICE, requests.describe_groups(["cg"])).groups
    assert described.error_code == ErrorCode.none
    (refused,) = send(h, BOB, requests.describe_groups(["other"])).groups
    assert refused.error_code == ErrorCode.group_authorization_failed
    (not_deleted,) = send(h, ALICE, requests.delete_groups(["cg"])).results
    assert not_deleted.error_code == ErrorCode.group_authorization_failed
    h.allow(Op.DELETE, RT.GROUP, "cg")
    (deleted,) = send(h, ALICE, requests.delete_groups(["cg"])).results
    assert deleted.error_code == ErrorCode.none


# ---- Topic and config administration


def test_create_topics_needs_create_on_cluster_or_topic(h: Harness) -> None:
    (refused,) = send(h, ALICE, requests.create_topic("a")).topics
    assert refused.error_code == ErrorCode.topic_authorization_failed
    h.allow(Op.CREATE, RT.TOPIC, "a")
    (created,) = send(h, ALICE, requests.create_topic("a")).topics
    assert created.error_code == ErrorCode.none
    assert created.topic_config_error_code == ErrorCode.topic_authorization_failed
    h.allow(Op.CREATE, RT.CLUSTER, "kafka-cluster")
    (any_name,) = send(h, ALICE, requests.create_topic("b")).topics
    assert any_name.error_code == ErrorCode.none


def test_delete_topics_create_partitions_and_delete_records(h: Harness) -> None:
    (refused,) = send(h, ALICE, requests.delete_topics(["t"])).responses
    assert refused.error_code == ErrorCode.topic_authorization_failed
    (grown,) = send(h, ALICE, requests.create_partitions({"t": 2})).results
    assert (grown.error_code, grown.error_message) == (
        ErrorCode.topic_authorization_failed,
        None,  # Kafka 4.2 sends no message with it here
    )
    h.allow(Op.ALTER, RT.TOPIC, "t")
    (grown,) = send(h, ALICE, requests.create_partitions({"t": 2})).results
    assert grown.error_code == ErrorCode.none
    h.allow(Op.DELETE, RT.TOPIC, "t")
    (deleted,) = send(h, ALICE, requests.delete_topics(["t"])).responses
    assert deleted.error_code == ErrorCode.none


def test_configs_need_describe_configs_and_alter_configs(h: Harness) -> None:
    (topic,) = send(h, ALICE, requests.describe_configs(TOPIC_RESOURCE, ["t"])).results
    assert topic.error_code == ErrorCode.topic_authorization_failed
    (broker,) = send(h, ALICE, requests.describe_configs(4, ["1"])).results
    assert broker.error_code == ErrorCode.cluster_authorization_failed
    h.allow(Op.ALTER_CONFIGS, RT.TOPIC, "t")  # implies DESCRIBE_CONFIGS
    (topic,) = send(h, ALICE, requests.describe_configs(TOPIC_RESOURCE, ["t"])).results
    assert topic.error_code == ErrorCode.none
    change = requests.ConfigChange("retention.ms", "1000")
    altered = send(
        h, ALICE, requests.incremental_alter_configs({(TOPIC_RESOURCE, "secret"): [change]})
    )
    assert altered.responses[0].error_code == ErrorCode.topic_authorization_failed


def test_describe_cluster_operations(h: Harness) -> None:
    request = dataclass_replace(
        requests.describe_cluster().build(1), include_cluster_authorized_operations=True
    )
    assert send(h, ALICE, Call.exact(request)).cluster_authorized_operations == 0
    h.allow(Op.DESCRIBE, RT.CLUSTER, "kafka-cluster")
    h.allow(Op.IDEMPOTENT_WRITE, RT.CLUSTER, "kafka-cluster")
    got = send(h, ALICE, Call.exact(request)).cluster_authorized_operations
    assert got == _bits(Op.DESCRIBE, Op.IDEMPOTENT_WRITE)


# ---- Transactions


def _init_producer_id(transactional_id: str | None) -> Call:
    schema = request_schema(22, 4)
    return Call.exact(
        schema.make(
            "InitProducerIdRequest",
            transactional_id=transactional_id,
            transaction_timeout=datetime.timedelta(seconds=30),
            producer_id=-1,
            producer_epoch=-1,
        )
    )


def test_init_producer_id(h: Harness) -> None:
    idempotent = _init_producer_id(None)
    assert send(h, ALICE, idempotent).error_code == ErrorCode.cluster_authorization_failed
    h.allow(Op.WRITE, RT.TOPIC, "t")  # WRITE on any topic is enough
    assert send(h, ALICE, idempotent).error_code == ErrorCode.none
    transactional = _init_producer_id("tx")
    code = send(h, ALICE, transactional).error_code
    assert code == ErrorCode.transactional_id_authorization_failed
    h.allow(Op.WRITE, RT.TRANSACTIONAL_ID, "tx")
    assert send(h, ALICE, transactional).error_code == ErrorCode.none
    listed = send(h, ALICE, requests.list_transactions()).transaction_states
    assert [s.transactional_id for s in listed] == ["tx"]
    assert send(h, BOB, requests.list_transactions()).transaction_states == ()
    (state,) = send(h, BOB, requests.describe_transactions(["tx"])).transaction_states
    assert state.error_code == ErrorCode.transactional_id_authorization_failed


# ---- Without an authorizer


def test_allow_all_grants_every_supported_operation(tmp_path: Path) -> None:
    raw = {"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"}
    broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
    try:
        from shoal.server.connection_info import ConnectionInfo
        from shoal.server.context import RequestContext

        ctx = RequestContext(broker.services, ConnectionInfo(1, "h", 1), 3, 12, 1, None)
        assert ops.for_resource(ctx, RT.TOPIC, "x", requested=True) == ops.TOPIC
        assert ops.for_cluster(ctx, requested=True) == ops.CLUSTER
        assert ops.for_resource(ctx, RT.GROUP, "g", requested=False) == NOT_REQUESTED
    finally:
        broker.logs.close()


# ---- SCRAM users


def test_scram_credential_apis_need_describe_and_alter_on_the_cluster(h: Harness) -> None:
    carol = scram_requests.upsertion(
        "carol", "SCRAM-SHA-256", "carol-secret", iterations=4096, salt=b"0123456789abcdef"
    )
    alter = scram_requests.alter_user_scram_credentials(upsertions=[carol])
    refused = send(h, ALICE, alter).results[0]
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert h.broker.services.sasl is not None
    assert not h.broker.services.sasl.scram.mechanisms("carol")  # nothing was written
    describe = scram_requests.describe_user_scram_credentials(None)
    assert send(h, ALICE, describe).error_code == ErrorCode.cluster_authorization_failed
    h.allow(Op.DESCRIBE, RT.CLUSTER, "kafka-cluster")
    described = send(h, ALICE, describe)
    assert (described.error_code, described.results) == (ErrorCode.none, ())
    assert send(h, ALICE, alter).results[0].error_code == ErrorCode.cluster_authorization_failed
    h.allow(Op.ALTER, RT.CLUSTER, "kafka-cluster")
    assert send(h, ALICE, alter).results[0].error_code == ErrorCode.none
    assert [str(r.user) for r in send(h, ALICE, describe).results] == ["carol"]
