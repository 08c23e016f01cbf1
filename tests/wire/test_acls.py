"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31) v1-v3: results per binding and
per filter, Kafka's errors, the cluster authorization each needs, SECURITY_DISABLED
without an authorizer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from tests.support.broker import BrokerProcess, running
from tests.support.wire import call1

Op, RT, PT, Perm = AclOperation, ResourceType, PatternType, PermissionType
VERSIONS = [1, 2, 3]
AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The authorizer on; every connection (User:ANONYMOUS) is a super user."""
    data = tmp_path_factory.mktemp("acls") / "data"
    yield from running(data, AUTHORIZER, "super.users=User:ANONYMOUS")


@pytest.fixture(scope="module")
def locked_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The authorizer on and no ACL: User:ANONYMOUS may do nothing."""
    yield from running(tmp_path_factory.mktemp("locked") / "data", AUTHORIZER)


def creation(version: int, name: str, **kw: Any) -> Any:
    fields = {
        "resource_type": RT.TOPIC,
        "resource_name": name,
        "resource_pattern_type": PT.LITERAL,
        "principal": "User:alice",
        "host": "*",
        "operation": Op.READ,
        "permission_type": Perm.ALLOW,
        **kw,
    }
    return request_schema(30, version).make("AclCreation", **fields)


def create(version: int, *creations: Any) -> Any:
    return request_schema(30, version).make("CreateAclsRequest", creations=creations)


def filter_fields(**kw: Any) -> dict[str, Any]:
    return {
        "resource_type_filter": RT.ANY,
        "resource_name_filter": None,
        "pattern_type_filter": PT.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": Op.ANY,
        "permission_type": Perm.ANY,
        **kw,
    }


def describe(version: int, **kw: Any) -> Any:
    return request_schema(29, version).make("DescribeAclsRequest", **filter_fields(**kw))


def delete(version: int, *filters: dict[str, Any]) -> Any:
    schema = request_schema(31, version)
    items = tuple(schema.make("DeleteAclsFilter", **filter_fields(**f)) for f in filters)
    return schema.make("DeleteAclsRequest", filters=items)


def described(response: Any) -> set[tuple[Any, ...]]:
    return {
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in response.resources
        for a in r.acls
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_create_describe_delete(acl_broker: BrokerProcess, version: int) -> None:
    topic = f"acl-v{version}"
    response = call1(
        acl_broker.bootstrap,
        create(
            version,
            creation(version, topic),
            creation(version, topic, operation=Op.WRITE, permission_type=Perm.DENY, host="1.2.3.4"),
            creation(version, f"{topic}-", resource_pattern_type=PT.PREFIXED),
        ),
    )
    assert [r.error_code for r in response.results] == [ErrorCode.none] * 3
    listed = call1(acl_broker.bootstrap, describe(version, resource_name_filter=topic))
    assert (
        listed.error_code == ErrorCode.none and listed.error_message == ""
    )  # Kafka's empty message
    assert described(listed) == {
        (RT.TOPIC, topic, PT.LITERAL, "User:alice", "*", Op.READ, Perm.ALLOW),
        (RT.TOPIC, topic, PT.LITERAL, "User:alice", "1.2.3.4", Op.WRITE, Perm.DENY),
    }
    matching = call1(
        acl_broker.bootstrap,
        describe(
            version,
            resource_type_filter=RT.TOPIC,
            resource_name_filter=f"{topic}-x",
            pattern_type_filter=PT.MATCH,
        ),
    )
    assert {(name, pattern) for _t, name, pattern, *_ in described(matching)} == {
        (f"{topic}-", PT.PREFIXED)
    }
    removed = call1(
        acl_broker.bootstrap,
        delete(
            version,
            {"resource_name_filter": topic, "permission_type": Perm.DENY},
            {"resource_name_filter": "nothing-here"},
            {"pattern_type_filter": PT.PREFIXED, "resource_name_filter": f"{topic}-"},
        ),
    )
    first, second, third = removed.filter_results
    assert first.error_code == ErrorCode.none
    assert [(m.resource_name, m.host, m.operation) for m in first.matching_acls] == [
        (topic, "1.2.3.4", Op.WRITE)
    ]
    assert second.error_code == ErrorCode.none and second.matching_acls == ()
    assert [m.pattern_type for m in third.matching_acls] == [PT.PREFIXED]
    left = call1(acl_broker.bootstrap, describe(version, resource_name_filter=topic))
    assert {acl[5] for acl in described(left)} == {Op.READ}


def test_invalid_bindings_fail_alone(acl_broker: BrokerProcess) -> None:
    """As Kafka 4.2 (tests/differential/test_security.py): each binding Kafka's checks
    refuse gets INVALID_REQUEST with its message; the valid ones are created."""
    v = 3
    response = call1(
        acl_broker.bootstrap,
        create(
            v,
            creation(v, "bad-principal", principal="alice"),
            creation(v, "other-cluster", resource_type=RT.CLUSTER, operation=Op.ALTER),
            creation(v, "bad-unknown-type", resource_type=99),
            creation(v, ""),
            creation(v, "good-one"),
        ),
    )
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (
            ErrorCode.invalid_request,
            "Could not parse principal from `alice` (no colon is present separating the "
            "principal type from the principal name)",
        ),
        (
            ErrorCode.invalid_request,
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (ErrorCode.invalid_request, "Invalid resourceType UNKNOWN"),
        (ErrorCode.invalid_request, "Invalid empty resource name"),
        (ErrorCode.none, ""),
    ]
    listed = call1(acl_broker.bootstrap, describe(v, resource_type_filter=RT.TOPIC))
    assert {name for _t, name, *_ in described(listed)} >= {"good-one"}
    assert not {name for _t, name, *_ in described(listed)} & {"bad-principal", ""}


@pytest.mark.parametrize(
    "field",
    [{"resource_pattern_type": PT.MATCH}, {"operation": Op.ANY}, {"permission_type": Perm.ANY}],
)
def test_unbuildable_binding_fails_the_whole_request(
    acl_broker: BrokerProcess, field: dict[str, Any]
) -> None:
    """A binding Kafka cannot build (ANY, MATCH) fails every result of the request with
    UNKNOWN_SERVER_ERROR and creates nothing, as Kafka 4.2 does."""
    name = f"whole-{next(iter(field))}"
    response = call1(
        acl_broker.bootstrap, create(3, creation(3, name), creation(3, f"{name}-x", **field))
    )
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (ErrorCode.unknown_server_error, None)
    ] * 2
    listed = call1(acl_broker.bootstrap, describe(3, resource_name_filter=name))
    assert (listed.error_code, listed.resources) == (ErrorCode.none, ())


def test_unassigned_codes_in_filters(acl_broker: BrokerProcess) -> None:
    """A code no enum has reads as UNKNOWN: DescribeAcls matches nothing, DeleteAcls
    refuses that filter alone."""
    response = call1(acl_broker.bootstrap, describe(3, pattern_type_filter=99))
    assert (response.error_code, response.error_message, response.resources) == (
        ErrorCode.none,
        "",
        (),
    )
    removed = call1(acl_broker.bootstrap, delete(3, {"operation": 99}, {}))
    assert [r.error_code for r in removed.filter_results] == [
        ErrorCode.invalid_request,
        ErrorCode.none,
    ]


@pytest.mark.parametrize(
    "request_",
    [
        describe(3, pattern_type_filter=0),
        delete(3, {"operation": Op.UNKNOWN}),
        create(3, creation(3, "zero", permission_type=0)),
    ],
    ids=["describe", "delete", "create"],
)
def test_unknown_code_zero_closes_the_connection(acl_broker: BrokerProcess, request_: Any) -> None:
    """Kafka's ACL request classes refuse to parse the UNKNOWN code (0): the connection
    closes without an answer, and the broker logs why."""
    with pytest.raises(ConnectionError):
        call1(acl_broker.bootstrap, request_, timeout_s=10)
    assert acl_broker.wait_for_log(r"contain UNKNOWN elements|DescribeAclsRequest contain")


def test_without_authorizer_security_disabled(broker: BrokerProcess) -> None:
    listed = call1(broker.bootstrap, describe(3))
    assert listed.error_code == ErrorCode.security_disabled
    # Kafka's AclApis words DescribeAcls' refusal apart from the others'
    assert listed.error_message == "No Authorizer is configured on the broker"
    created = call1(broker.bootstrap, create(3, creation(3, "t")))
    assert [(r.error_code, r.error_message) for r in created.results] == [
        (ErrorCode.security_disabled, "No Authorizer is configured.")
    ]
    removed = call1(broker.bootstrap, delete(3, {}))
    assert [(r.error_code, r.error_message) for r in removed.filter_results] == [
        (ErrorCode.security_disabled, "No Authorizer is configured.")
    ]


def test_anonymous_without_acls_is_refused(locked_broker: BrokerProcess) -> None:
    listed = call1(locked_broker.bootstrap, describe(3))
    assert listed.error_code == ErrorCode.cluster_authorization_failed
    assert listed.resources == ()
    created = call1(locked_broker.bootstrap, create(3, creation(3, "t"), creation(3, "u")))
    assert [r.error_code for r in created.results] == [ErrorCode.cluster_authorization_failed] * 2
    removed = call1(locked_broker.bootstrap, delete(3, {}))
    assert [r.error_code for r in removed.filter_results] == [
        ErrorCode.cluster_authorization_failed
    ]


def test_acls_apply_at_once_and_after_a_restart(fresh_broker: BrokerProcess) -> None:
    """allow.everyone.if.no.acl.found lets ANONYMOUS administer while no ACL names the
    cluster; its own DENY of ALTER on the cluster then locks it out, at once and after
    a restart (the authorizer changes in place, the set is durable)."""
    fresh_broker.overrides += [AUTHORIZER, "allow.everyone.if.no.acl.found=true"]
    fresh_broker.restart()
    deny_alter = creation(
        3,
        "kafka-cluster",
        resource_type=RT.CLUSTER,
        principal="User:ANONYMOUS",
        operation=Op.ALTER,
        permission_type=Perm.DENY,
    )
    created = call1(fresh_broker.bootstrap, create(3, deny_alter))
    assert [r.error_code for r in created.results] == [ErrorCode.none]
    for _ in range(2):
        again = call1(fresh_broker.bootstrap, create(3, creation(3, "t")))
        assert [r.error_code for r in again.results] == [ErrorCode.cluster_authorization_failed]
        listed = call1(fresh_broker.bootstrap, describe(3))
        assert listed.error_code == ErrorCode.cluster_authorization_failed, (
            "an ACL now names the cluster, and none allows DESCRIBE"
        )
        fresh_broker.restart()
