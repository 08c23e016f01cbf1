"""Schema.make: drops fields the negotiated version lacks, refuses names no version has."""

from __future__ import annotations

import pytest
from kio.static.constants import EntityType

from shoal.protocol.schema import known_field_names, request_schema, response_schema

METADATA = 3


def test_make_drops_a_field_the_negotiated_version_lacks() -> None:
    schema = response_schema(METADATA, 0)
    response = schema.response(
        throttle_time=0, brokers=(), cluster_id="c", controller_id=1, topics=()
    )
    assert not hasattr(response, "cluster_id")
    assert response.brokers == ()


def test_make_keeps_a_field_only_some_versions_have() -> None:
    # cluster_authorized_operations exists in Metadata v8..v10 only.
    kept = response_schema(METADATA, 8).response(
        throttle_time=0,
        brokers=(),
        cluster_id=None,
        controller_id=1,
        topics=(),
        cluster_authorized_operations=7,
    )
    assert kept.cluster_authorized_operations == 7
    dropped = response_schema(METADATA, 12).response(
        throttle_time=0,
        brokers=(),
        cluster_id=None,
        controller_id=1,
        topics=(),
        cluster_authorized_operations=7,
    )
    assert not hasattr(dropped, "cluster_authorized_operations")


def test_make_refuses_a_field_no_version_has() -> None:
    schema = response_schema(METADATA, 12)
    with pytest.raises(TypeError) as raised:
        schema.make("MetadataResponseTopic", error_code=0, name=None, partitionz=())
    message = str(raised.value)
    assert "MetadataResponseTopic" in message
    assert "'partitionz'" in message
    assert "Metadata" in message


def test_make_refuses_a_field_of_another_nested_type() -> None:
    # `host` belongs to MetadataResponseBroker, not to MetadataResponseTopic.
    schema = response_schema(METADATA, 12)
    with pytest.raises(TypeError, match="host"):
        schema.make("MetadataResponseTopic", error_code=0, host="h")


def test_make_checks_request_types_against_requests() -> None:
    schema = request_schema(METADATA, 12)
    with pytest.raises(TypeError, match="request"):
        schema.make("MetadataRequestTopic", name="t", error_code=0)


def test_known_field_names_is_the_union_over_versions() -> None:
    names = known_field_names(METADATA, EntityType.response, "MetadataResponse")
    assert {"brokers", "topics", "cluster_authorized_operations", "throttle_time"} <= names
    assert known_field_names(METADATA, EntityType.response, "NoSuchType") == frozenset()


def test_field_known_finds_fields_of_newer_and_of_older_versions_only() -> None:
    from shoal.protocol.schema import field_known

    # ClusterAuthorizedOperations: Metadata v8-v10 only; Acquisition lock: ShareAck v2
    assert field_known(
        METADATA, EntityType.response, "MetadataResponse", "cluster_authorized_operations"
    )
    assert field_known(
        79, EntityType.response, "ShareAcknowledgeResponse", "acquisition_lock_timeout"
    )
    assert not field_known(METADATA, EntityType.response, "MetadataResponse", "no_such_field")
    assert not field_known(METADATA, EntityType.response, "NoSuchType", "topics")
