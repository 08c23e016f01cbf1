"""Authorization of AlterConfigs (33) and ListConfigResources (74), as Kafka's
handleAlterConfigsRequest and handleListConfigResources: ALTER_CONFIGS on the topic or
group, on the cluster for a broker; DESCRIBE_CONFIGS on the cluster to list."""

from __future__ import annotations

from kio.schema.alter_configs.v2.request import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from kio.schema.list_config_resources.v1.request import ListConfigResourcesRequest
from kio.static.primitive import i8

from shoal.client.calls import Call
from shoal.protocol.errors import ErrorCode
from shoal.security.acl import AclOperation as Op
from shoal.security.acl import ResourceType as RT
from tests.unit.server.authz_harness import ALICE, Harness, send

TOPIC, BROKER = 2, 4


def _alter(h: Harness, resource_type: int, name: str) -> ErrorCode:
    request = AlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=(AlterableConfig(name="max.connections", value="500"),)
                if resource_type == BROKER
                else (AlterableConfig(name="retention.ms", value="1000"),),
            ),
        ),
        validate_only=False,
    )
    (response,) = send(h, ALICE, Call.exact(request)).responses
    return ErrorCode(response.error_code)


def test_alter_configs_needs_alter_configs(h: Harness) -> None:
    assert _alter(h, TOPIC, "t") == ErrorCode.topic_authorization_failed
    assert _alter(h, BROKER, "1") == ErrorCode.cluster_authorization_failed
    h.allow(Op.ALTER_CONFIGS, RT.TOPIC, "t")
    assert _alter(h, TOPIC, "t") == ErrorCode.none
    assert _alter(h, TOPIC, "secret") == ErrorCode.topic_authorization_failed
    h.allow(Op.ALTER_CONFIGS, RT.CLUSTER, "kafka-cluster")
    assert _alter(h, BROKER, "1") == ErrorCode.none


def test_list_config_resources_needs_describe_configs_on_the_cluster(h: Harness) -> None:
    request = Call.exact(ListConfigResourcesRequest(resource_types=(i8(TOPIC),)))
    refused = send(h, ALICE, request)
    assert (refused.error_code, refused.config_resources) == (
        ErrorCode.cluster_authorization_failed,
        (),
    )
    h.allow(Op.DESCRIBE_CONFIGS, RT.CLUSTER, "kafka-cluster")
    listed = send(h, ALICE, request)
    assert listed.error_code == ErrorCode.none
    assert {r.resource_name for r in listed.config_resources} >= {"t", "secret"}
