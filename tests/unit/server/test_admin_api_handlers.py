"""The admin and inter-broker handlers added for Kafka 4.2 parity, in-process: paging
of DescribeTopicPartitions and its partition limit, the feature table and UpdateFeatures'
checks, and each API's authorization and security-protocol rules (the wire answers are
compared with Kafka's in tests/differential/test_admin_apis.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import uuid
from pathlib import Path
from typing import Any

import pytest

from shoal import limits
from shoal.config import BrokerConfig
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import request_schema
from shoal.security.acl import ANONYMOUS, AclOperation, KafkaPrincipal, ResourceType
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.server.handlers.describe_topic_partitions import page
from shoal.server.metadata import features
from shoal.server.metadata.dynamic_config import DynamicBrokerConfig, LiveBrokerConfig
from tests.support.metadata import metadata_at
from tests.unit.server.authz_harness import ALICE, BOB, Harness

ALICE_OPS = sum(1 << int(op) for op in (AclOperation.DESCRIBE,))


def _call(
    services: Any,
    handlers: Any,
    request: Any,
    *,
    protocol: str = "PLAINTEXT",
    principal: KafkaPrincipal = ANONYMOUS,
) -> Any:
    connection = ConnectionInfo(1, "127.0.0.1", 5000)
    connection.security_protocol = protocol
    connection.principal = principal
    ctx = RequestContext(
        services=services,
        connection=connection,
        api_key=int(request.__api_key__),
        api_version=int(request.__version__),
        correlation_id=1,
        client_id="unit",
    )
    return asyncio.run(handlers[int(request.__api_key__)].handle(ctx, request))


def _as(h: Harness, principal: KafkaPrincipal, request: Any, protocol: str = "PLAINTEXT") -> Any:
    return _call(h.services, h.broker.handlers, request, protocol=protocol, principal=principal)


# ---- DescribeTopicPartitions paging


def _counts(table: dict[str, int | None]) -> Any:
    return table.get


def test_page_cuts_a_topic_and_points_at_its_next_partition() -> None:
    counts = {"a": 3, "b": 1, "c": 2}
    found = page(["a", "b", "c"], _counts(counts), cursor=None, limit=2, with_unknown=True)
    assert found.topics == [("a", range(0, 2))]
    assert found.next_cursor == ("a", 2)


def test_page_full_at_a_topic_end_points_at_the_next_topic_known_or_not() -> None:
    counts: dict[str, int | None] = {"a": 3, "zz": None}
    found = page(["a", "zz"], _counts(counts), cursor=None, limit=3, with_unknown=True)
    assert found.topics == [("a", range(0, 3))]
    assert found.next_cursor == ("zz", 0)


def test_page_unknown_topics_take_no_room_and_may_be_left_out() -> None:
    counts: dict[str, int | None] = {"a": 1, "b": None, "c": 1}
    named = page(["a", "b", "c"], _counts(counts), cursor=None, limit=2, with_unknown=True)
    assert named.topics == [("a", range(0, 1)), ("b", None), ("c", range(0, 1))]
    assert named.next_cursor is None
    every = page(["a", "b", "c"], _counts(counts), cursor=None, limit=2, with_unknown=False)
    assert every.topics == [("a", range(0, 1)), ("c", range(0, 1))]


def test_page_starts_the_cursor_topic_at_its_partition_even_past_its_end() -> None:
    counts = {"a": 3, "b": 1}
    assert page(
        ["a", "b"], _counts(counts), cursor=("a", 2), limit=5, with_unknown=True
    ).topics == [
        ("a", range(2, 3)),
        ("b", range(0, 1)),
    ]
    past = page(["a", "b"], _counts(counts), cursor=("a", 9), limit=1, with_unknown=True)
    assert past.topics == [("a", range(9, 3)), ("b", range(0, 1))]
    assert past.next_cursor is None


def _describe_partitions(topics: list[str], limit: int) -> Any:
    s = request_schema(75, 0)
    return s.make(
        "DescribeTopicPartitionsRequest",
        topics=tuple(s.make("TopicRequest", name=name) for name in topics),
        response_partition_limit=limit,
        cursor=None,
    )


def test_partition_limit_caps_the_request_limit(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """limits.DESCRIBE_TOPIC_PARTITIONS_MAX (Kafka's max.request.partition.size.limit)
    wins over a larger ResponsePartitionLimit; the next page starts where it stopped."""
    broker.logs.create_topic("wide", partitions=5, configs={})
    monkeypatch.setattr(limits, "DESCRIBE_TOPIC_PARTITIONS_MAX", 3)
    response = _call(broker.services, broker.handlers, _describe_partitions(["wide"], 2000))
    (topic,) = response.topics
    assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
    assert (response.next_cursor.topic_name, response.next_cursor.partition_index) == ("wide", 3)


# ---- Authorization


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(h: Harness) -> None:
    s = request_schema(23, 4)
    request = s.make(
        "OffsetForLeaderEpochRequest",
        replica_id=-1,
        topics=tuple(
            s.make(
                "OffsetForLeaderTopic",
                topic=name,
                partitions=(
                    s.make(
                        "OffsetForLeaderPartition",
                        partition=0,
                        current_leader_epoch=-1,
                        leader_epoch=0,
                    ),
                ),
            )
            for name in ("secret", "t")
        ),
    )
    h.allow(AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    answered = _as(h, ALICE, request)
    # Allowed topics first, then the denied ones (Kafka's order).
    assert [(t.topic, t.partitions[0].error_code) for t in answered.topics] == [
        ("t", ErrorCode.none),
        ("secret", ErrorCode.topic_authorization_failed),
    ]
    assert answered.topics[1].partitions[0].end_offset == -1
    h.grant(BOB, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")
    assert {t.partitions[0].error_code for t in _as(h, BOB, request).topics} == {ErrorCode.none}


def test_describe_topic_partitions_hides_undescribable_topics(h: Harness) -> None:
    h.allow(AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    named = _as(h, ALICE, _describe_partitions(["secret", "t"], 100))
    assert [(t.name, t.error_code, t.topic_id) for t in named.topics][1] == (
        "secret",
        ErrorCode.topic_authorization_failed,
        None,
    )
    assert named.topics[0].topic_authorized_operations == ALICE_OPS
    assert named.topics[1].topic_authorized_operations == -(2**31)
    every = _as(h, ALICE, _describe_partitions([], 100))
    assert [t.name for t in every.topics] == ["t"]


def _quorum_request() -> Any:
    s = request_schema(55, 2)
    return s.make(
        "DescribeQuorumRequest",
        topics=(
            s.make(
                "TopicData",
                topic_name="__cluster_metadata",
                partitions=(s.make("PartitionData", partition_index=0),),
            ),
        ),
    )


def test_quorum_apis_need_cluster_operations(h: Harness) -> None:
    assert _as(h, BOB, _quorum_request()).error_code == ErrorCode.cluster_authorization_failed
    h.allow(AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster")
    described = _as(h, ALICE, _quorum_request())
    assert described.error_code == ErrorCode.none
    (voter,) = described.topics[0].partitions[0].current_voters
    assert voter.last_fetch_timestamp == h.broker.services.clock.wall_ms()
    unregister = request_schema(64, 0).make("UnregisterBrokerRequest", broker_id=2)
    assert _as(h, ALICE, unregister).error_code == ErrorCode.cluster_authorization_failed
    h.allow(AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")
    assert _as(h, ALICE, unregister).error_code == ErrorCode.broker_id_not_registered
    remove = request_schema(81, 0).make(
        "RemoveRaftVoterRequest", cluster_id=None, voter_id=1, voter_directory_id=uuid.uuid4()
    )
    assert _as(h, BOB, remove).error_code == ErrorCode.cluster_authorization_failed
    assert _as(h, ALICE, remove).error_code == ErrorCode.unsupported_version


def _update(feature: str, level: int, upgrade_type: int, version: int = 1) -> Any:
    s = request_schema(57, version)
    return s.make(
        "UpdateFeaturesRequest",
        timeout=datetime.timedelta(seconds=10),
        feature_updates=(
            s.make(
                "FeatureUpdateKey",
                feature=feature,
                max_version_level=level,
                upgrade_type=upgrade_type,
                allow_downgrade=False,
            ),
        ),
        validate_only=False,
    )


def test_update_features_needs_alter_on_the_cluster(h: Harness) -> None:
    assert (
        _as(h, BOB, _update("group.version", 1, 1)).error_code
        == ErrorCode.cluster_authorization_failed
    )
    h.allow(AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")
    answered = _as(h, ALICE, _update("group.version", 1, 1))
    assert (answered.error_code, [r.error_message for r in answered.results]) == (
        ErrorCode.none,
        ["NONE"],
    )


# ---- UpdateFeatures' checks and the feature table


def test_feature_levels_lie_in_their_supported_ranges(broker: Broker) -> None:
    table = features.features(broker.services.config.current)
    assert len({f.name for f in table}) == len(table)
    for feature in table:
        assert feature.min_supported <= feature.level <= feature.max_supported, feature


@pytest.mark.parametrize(
    ("feature", "level", "upgrade_type", "reason"),
    [
        ("share.version", 0, 2, "Shoal runs at level 1 of this feature until it restarts"),
        ("share.version", 0, 1, "Can't downgrade the version of this feature without"),
        ("share.version", 2, 1, "Local controller 1 only supports versions 0-1"),
        ("metadata.version", 28, 3, "Local controller 1 only supports versions 29-29"),
        ("group.version", 1, 4, "The controller does not support the given upgrade type."),
        ("group.version", -1, 1, "A feature version cannot be less than 0."),
        ("x.version", 1, 1, "Local controller 1 does not support this feature."),
        ("x.version", 0, 2, "Feature x.version not found."),
    ],
)
def test_update_features_refusals(
    broker: Broker, feature: str, level: int, upgrade_type: int, reason: str
) -> None:
    answered = _call(
        broker.services, broker.handlers, _update(feature, level, upgrade_type, version=2)
    )
    assert answered.error_code == ErrorCode.invalid_update_version
    assert reason in answered.error_message, answered.error_message


def test_share_version_zero_is_reported_and_a_return_to_one_refused(
    broker: Broker, tmp_path: Path
) -> None:
    """With the config at share.version=0 the feature is not finalized, and raising it
    is refused (levels are fixed while running)."""
    raw = {"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0", "share.version": "0"}
    live = LiveBrokerConfig(
        DynamicBrokerConfig.load(BrokerConfig.from_raw(raw)),
        metadata=metadata_at(tmp_path / "live"),
    )
    assert features.by_name(live.current)["share.version"].level == 0
    services = dataclasses.replace(broker.services, config=live)
    answered = _call(services, broker.handlers, _update("share.version", 1, 1, version=2))
    assert answered.error_code == ErrorCode.invalid_update_version
    assert "runs at level 0" in answered.error_message


# ---- Delegation tokens by security protocol


def _create_token(owner: str | None = None, renewer_type: str = "User") -> Any:
    s = request_schema(38, 3)
    return s.make(
        "CreateDelegationTokenRequest",
        owner_principal_type="User" if owner else None,
        owner_principal_name=owner,
        renewers=(s.make("CreatableRenewers", principal_type=renewer_type, principal_name="r"),),
        max_lifetime=datetime.timedelta(milliseconds=-1),
    )


def _ms(value: datetime.datetime) -> int:
    return round(value.timestamp() * 1000)


def test_tokens_are_not_allowed_over_plaintext_or_anonymous_ssl(h: Harness) -> None:
    for protocol, principal in (("PLAINTEXT", ALICE), ("SSL", ANONYMOUS)):
        answered = _as(h, principal, _create_token(), protocol)
        assert answered.error_code == ErrorCode.delegation_token_request_not_allowed
        assert _ms(answered.issue_timestamp) == -1
    described = request_schema(41, 3).make("DescribeDelegationTokenRequest", owners=None)
    assert (
        _as(h, ALICE, described, "PLAINTEXT").error_code
        == ErrorCode.delegation_token_request_not_allowed
    )


def test_tokens_over_sasl_are_disabled_after_the_brokers_checks(h: Harness) -> None:
    sasl = "SASL_PLAINTEXT"
    disabled = _as(h, ALICE, _create_token(), sasl)
    assert disabled.error_code == ErrorCode.delegation_token_auth_disabled
    assert (_ms(disabled.issue_timestamp), disabled.token_requester_principal_name) == (0, "alice")
    other_owner = _as(h, ALICE, _create_token(owner="bob"), sasl)
    assert other_owner.error_code == ErrorCode.delegation_token_authorization_failed
    assert (other_owner.principal_name, _ms(other_owner.max_timestamp)) == ("bob", -1)
    h.allow(AclOperation.CREATE_TOKENS, ResourceType.USER, "User:bob")
    assert (
        _as(h, ALICE, _create_token(owner="bob"), sasl).error_code
        == ErrorCode.delegation_token_auth_disabled
    )
    assert (
        _as(h, ALICE, _create_token(renewer_type="Group"), sasl).error_code
        == ErrorCode.invalid_principal_type
    )
    renewed = _as(
        h,
        ALICE,
        request_schema(39, 2).make(
            "RenewDelegationTokenRequest", hmac=b"x", renew_period=datetime.timedelta(seconds=1)
        ),
        sasl,
    )
    assert (renewed.error_code, _ms(renewed.expiry_timestamp)) == (
        ErrorCode.delegation_token_auth_disabled,
        0,
    )
    described = request_schema(41, 3).make("DescribeDelegationTokenRequest", owners=())
    assert _as(h, ALICE, described, sasl).error_code == ErrorCode.delegation_token_auth_disabled
