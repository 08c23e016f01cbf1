"""SASL and ACLs, Shoal against Kafka 4.2: the same clients, the same principals.

Both brokers have a SASL_PLAINTEXT listener with PLAIN users (the listener's JAAS
config), a SCRAM user for SCRAM-SHA-256 and -512 (Kafka: `kafka-storage format
--add-scram`; Shoal: AlterUserScramCredentials by the super user, as its README
says), the StandardAuthorizer and `super.users=User:admin` (and User:ANONYMOUS, the
PLAINTEXT and controller listeners' principal on Kafka). Scenarios run over the
listener with confluent-kafka and with kio requests on an authenticated connection
(Shoal's client), and compare error codes, messages and ACL lists.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as SaslAuthenticateV0
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from shoal.client import requests
from shoal.client.acl_requests import (
    create_acls,
    delete_acls,
    deleted_bindings,
    describe_acls,
    described_bindings,
)
from shoal.client.aio import Connection
from shoal.client.bootstrap import parse_bootstrap
from shoal.client.requests import FetchPosition, fetched_offsets
from shoal.client.scram_requests import alter_user_scram_credentials, upsertion
from shoal.client.security import ClientSecurity
from shoal.client.settings import ClientSettings
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding, AclBindingFilter
from tests.differential.conftest import unique
from tests.support import kafka_reference
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess, running
from tests.support.raw_wire import Raw, decoded, request_frame
from tests.support.wire import api_versions_request, send

T = TypeVar("T")
WAIT_S = 30.0
PASSWORDS = {
    "admin": "admin-diff-secret",
    "alice": "alice-diff-secret",
    "bob": "bob-diff-secret",
    "carol": "carol-diff-secret",  # READ on one topic and one group (test_reader_only)
    "dave": "dave-diff-secret",  # DESCRIBE on topics of a prefix (test_describe_only)
    "nobody": "nobody-diff-secret",
}
SCRAM_USER, SCRAM_PASSWORD = "scott", "scott-scram-diff-secret"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
UNASSIGNED: Any = 99
"""A code no ACL enum has: Kafka reads it as UNKNOWN and answers (0 itself closes)."""
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required " + " ".join(
    f'user_{u}="{p}"' for u, p in PASSWORDS.items()
)


@dataclass
class Secured:
    """Kafka's SASL listener and Shoal's; `run` calls a scenario on each address."""

    kafka: kafka_reference.KafkaBroker
    shoal: BrokerProcess

    def run(self, scenario: Callable[..., T], *args: Any) -> tuple[T, T]:
        return scenario(self.kafka.sasl_bootstrap, *args), scenario(self.shoal.bootstrap, *args)

    def run_plaintext(self, scenario: Callable[..., T], *args: Any) -> tuple[T, T]:
        """`scenario` on each broker's PLAINTEXT listener (User:ANONYMOUS, a super user)."""
        shoal = f"127.0.0.1:{self.shoal.listener_ports()['PLAINTEXT']}"
        return scenario(self.kafka.bootstrap, *args), scenario(shoal, *args)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        pytest.skip(f"no Kafka reference broker: {exc}")
    sasl = kafka_reference.SaslListener(
        mechanisms=MECHANISMS,
        plain_users=PASSWORDS,
        scram_users={SCRAM_USER: SCRAM_PASSWORD},
        authorizer=True,
        super_users=("User:admin",),
    )
    root = tmp_path_factory.mktemp("security")
    with kafka_reference.running(root / "kafka", sasl=sasl) as kafka:
        for shoal in running(
            root / "shoal",
            "listeners=SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
            f"sasl.enabled.mechanisms={','.join(MECHANISMS)}",
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS};",
            "connection.failed.authentication.delay.ms=50",
            f"authorizer.class.name={kafka_reference.STANDARD_AUTHORIZER}",
            "super.users=User:ANONYMOUS;User:admin",
        ):
            for mechanism in MECHANISMS[1:]:  # one request each: Kafka takes one change
                (scram,) = as_user(  # per user and request (ScramControlManager)
                    shoal.bootstrap,
                    "admin",
                    alter_user_scram_credentials(
                        upsertions=[
                            upsertion(
                                SCRAM_USER,
                                mechanism,
                                SCRAM_PASSWORD,
                                iterations=4096,
                                salt=b"s" * 16,
                            )
                        ]
                    ),
                )
                assert [r.error_code for r in scram.results] == [0]
            for broker in (kafka.sasl_bootstrap, shoal.bootstrap):
                _warm_group_coordinator(broker)
            yield Secured(kafka, shoal)


def _warm_group_coordinator(bootstrap: str) -> None:
    """Find a group's coordinator until it is there: Kafka creates __consumer_offsets
    on first use and answers COORDINATOR_NOT_AVAILABLE meanwhile."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        (found,) = _admin(bootstrap, requests.find_coordinator("warm-up"))
        if found.coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"no group coordinator at {bootstrap}")


# ---- an authenticated kio connection


def _settings(user: str, password: str | None, mechanism: str) -> ClientSettings:
    return ClientSettings(
        security=ClientSecurity(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_username=user,
            sasl_password=PASSWORDS.get(user, SCRAM_PASSWORD) if password is None else password,
        )
    )


def as_user(
    bootstrap: str, user: str, *calls: Any, mechanism: str = "PLAIN", password: str | None = None
) -> list[Any]:
    """Authenticate as `user`, then send `calls` (kio requests or client Calls) in order
    on that connection; their responses."""

    async def go() -> list[Any]:
        node = parse_bootstrap(bootstrap)[0]
        settings = _settings(user, password, mechanism)
        conn = await Connection.open(node.host, node.port, settings=settings)
        try:
            await conn.handshake(timeout_s=WAIT_S, settings=settings)
            return [await send(conn, c, timeout_s=WAIT_S) for c in calls]
        finally:
            await conn.close()

    return asyncio.run(go())


def _admin(bootstrap: str, *calls: Any) -> list[Any]:
    return as_user(bootstrap, "admin", *calls)


def _create_topic(bootstrap: str, topic: str) -> None:
    (created,) = _admin(bootstrap, requests.create_topic(topic, partitions=1))
    assert created.topics[0].error_code == 0, created


# ---- authentication


def _raw_plain(bootstrap: str, token: bytes) -> tuple[Any, ...]:
    """SaslHandshake v1 PLAIN then SaslAuthenticate v2 with `token`: (handshake code,
    authenticate code, its message, whether the broker closed the connection)."""
    raw = Raw(bootstrap)
    try:
        handshake = SaslHandshakeRequest(mechanism="PLAIN")
        raw.send(request_frame(handshake))
        shaken = decoded(_frame(raw), handshake)
        authenticate = SaslAuthenticateRequest(auth_bytes=token)
        raw.send(request_frame(authenticate))
        answer = decoded(_frame(raw), authenticate)
        closed, _ = raw.closed_by_broker(5.0)
        return shaken.error_code, answer.error_code, answer.error_message, closed
    finally:
        raw.close()


def _frame(raw: Raw) -> bytes:
    got = raw.read_frame()
    assert got is not None, "the broker closed the connection"
    return got


def test_plain_wrong_password_and_unknown_user(secured: Secured) -> None:
    wrong = b"\x00alice\x00not-the-password"
    kafka, shoal = secured.run(_raw_plain, wrong)
    assert kafka == shoal
    assert kafka[1] == KafkaError.SASL_AUTHENTICATION_FAILED
    kafka, shoal = secured.run(_raw_plain, b"\x00mallory\x00whatever")
    assert kafka == shoal


def _client_auth_error(bootstrap: str, mechanism: str, user: str, password: str) -> list[Any]:
    """What confluent-kafka's error callback reports for a refused login: (code, text
    after the broker address)."""
    errors: list[KafkaError] = []
    client = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "error_cb": errors.append,
        }
    )
    deadline = time.monotonic() + WAIT_S
    while not errors and time.monotonic() < deadline:
        client.poll(0.05)
    assert errors, "no error reported"
    first = errors[0]
    return [first.code(), first.str().split(": ", 1)[-1].split(" (after")[0]]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_client_wrong_password(secured: Secured, mechanism: str) -> None:
    user = "alice" if mechanism == "PLAIN" else SCRAM_USER
    kafka, shoal = secured.run(_client_auth_error, mechanism, user, "wrong-password")
    assert kafka == shoal
    assert kafka[0] == KafkaError._AUTHENTICATION


def _handshake(bootstrap: str, request: Any) -> tuple[Any, ...]:
    """One SaslHandshake: (code, mechanisms, whether the broker then closed)."""
    raw = Raw(bootstrap)
    try:
        raw.send(request_frame(request))
        answer = decoded(_frame(raw), request)
        closed, _ = raw.closed_by_broker(5.0)
        return answer.error_code, tuple(answer.mechanisms), closed
    finally:
        raw.close()


@pytest.mark.parametrize("version", [0, 1])
def test_unknown_mechanism(secured: Secured, version: int) -> None:
    request = (SaslHandshakeV0 if version == 0 else SaslHandshakeRequest)(mechanism="GSSAPI")
    kafka, shoal = secured.run(_handshake, request)
    assert kafka == shoal
    assert kafka[0] == KafkaError.UNSUPPORTED_SASL_MECHANISM
    assert sorted(kafka[1]) == sorted(MECHANISMS)  # in Kafka's HashSet order, compared above


def _request_before_handshake(bootstrap: str) -> tuple[Any, ...]:
    """ApiVersions is answered before authentication; Metadata closes the connection."""
    raw = Raw(bootstrap)
    try:
        versions = api_versions_request()
        raw.send(request_frame(versions))
        answered = decoded(_frame(raw), versions).error_code
        raw.send(request_frame(requests.metadata(None).build(12)))
        closed, received = raw.closed_by_broker(5.0)
        return answered, closed, received
    finally:
        raw.close()


def test_request_before_authentication_closes(secured: Secured) -> None:
    kafka, shoal = secured.run(_request_before_handshake)
    assert kafka == shoal == (0, True, b"")


def _handshake_v0_then_metadata(bootstrap: str, token: bytes) -> tuple[Any, ...]:
    """SaslHandshake v0 PLAIN, then the token as a bare size-prefixed blob (no
    SaslAuthenticate), then Metadata: (handshake code, the bare reply or None if
    closed, whether Metadata was answered)."""
    raw = Raw(bootstrap)
    try:
        handshake = SaslHandshakeV0(mechanism="PLAIN")
        raw.send(request_frame(handshake))
        code = decoded(_frame(raw), handshake).error_code
        raw.send(struct.pack(">i", len(token)) + token)
        reply = raw.read_frame()
        if reply is None:
            return code, None, False
        metadata = requests.metadata(None).build(12)
        raw.send(request_frame(metadata))
        answer = raw.read_frame()
        return code, reply, answer is not None and decoded(answer, metadata) is not None
    finally:
        raw.close()


def _scram_v0(bootstrap: str, mechanism: str, password: str) -> tuple[Any, ...]:
    """SaslHandshake v0 with a SCRAM mechanism, then SCRAM's two rounds as bare tokens:
    (handshake code, whether the server's signature verified, whether Metadata was
    then answered), or where the broker closed the connection."""
    from shoal.security.scram import MECHANISMS as SCRAM_MECHANISMS
    from shoal.security.scram import ScramClient, ScramError

    client = ScramClient(
        SCRAM_MECHANISMS[mechanism], username=SCRAM_USER, password=password, nonce="v0nonce"
    )
    raw = Raw(bootstrap)
    raw.sock.settimeout(10.0)
    try:
        handshake = SaslHandshakeV0(mechanism=mechanism)
        raw.send(request_frame(handshake))
        code = decoded(_frame(raw), handshake).error_code
        first = client.first()
        raw.send(struct.pack(">i", len(first)) + first)
        server_first = raw.read_frame()
        if server_first is None:
            return code, "closed after the first token"
        final = client.final(server_first)
        raw.send(struct.pack(">i", len(final)) + final)
        server_final = raw.read_frame()
        if server_final is None:
            return code, "closed after the final token"
        try:
            client.verify(server_final)
        except ScramError:
            return code, "the server's signature did not verify"
        metadata = requests.metadata(None).build(12)
        raw.send(request_frame(metadata))
        return code, "verified", raw.read_frame() is not None
    finally:
        raw.close()


@pytest.mark.parametrize("mechanism", MECHANISMS[1:])
def test_sasl_handshake_v0_scram(secured: Secured, mechanism: str) -> None:
    kafka, shoal = secured.run(_scram_v0, mechanism, SCRAM_PASSWORD)
    assert kafka == shoal == (0, "verified", True)
    kafka, shoal = secured.run(_scram_v0, mechanism, "wrong")
    assert kafka == shoal == (0, "closed after the final token")


def test_sasl_handshake_v0_raw_tokens(secured: Secured) -> None:
    token = b"\x00alice\x00" + PASSWORDS["alice"].encode()
    kafka, shoal = secured.run(_handshake_v0_then_metadata, token)
    assert kafka == shoal == (0, b"", True)
    kafka, shoal = secured.run(_handshake_v0_then_metadata, b"\x00alice\x00wrong")
    assert kafka == shoal == (0, None, False)


# ---- authorization


def _nobody_sees(bootstrap: str, topic: str) -> dict[str, Any]:
    """What a principal without any ACL gets from the APIs a client uses on an
    existing `topic` and a group."""
    _create_topic(bootstrap, topic)
    missing = f"{topic}-missing"
    group = f"g-{topic}"
    tp = (topic, 0)
    (named, every, absent, produced, fetched, listed, coordinator, offsets) = as_user(
        bootstrap,
        "nobody",
        requests.metadata([topic]),
        requests.metadata(None),
        requests.metadata([missing], allow_auto_topic_creation=True),
        requests.produce({tp: values_batch(1)}),
        requests.fetch({tp: FetchPosition(0, 1 << 20)}, max_wait_ms=0),
        requests.list_offsets({tp: requests.LATEST_TIMESTAMP}),
        requests.find_coordinator(group),
        requests.offset_fetch(group, {topic: [0]}),
    )
    return {
        "metadata named": [(t.name, t.error_code, len(t.partitions)) for t in named.topics],
        "metadata all": sorted(t.name for t in every.topics if t.name in (topic, missing)),
        "metadata missing": [(t.name, t.error_code) for t in absent.topics],
        "produce": produced.responses[0].partition_responses[0].error_code,
        "fetch": [p.error_code for r in fetched.responses for p in r.partitions],
        "list offsets": [p.error_code for t in listed.topics for p in t.partitions],
        "find coordinator": [c.error_code for c in coordinator.coordinators],
        "offset fetch": fetched_offsets(offsets).error_code,
    }


def test_principal_without_acls(secured: Secured) -> None:
    topic = unique("sec-noacl")
    kafka, shoal = secured.run(_nobody_sees, topic)
    assert kafka == shoal
    assert kafka["produce"] == KafkaError.TOPIC_AUTHORIZATION_FAILED


def _cluster_and_txn_ops(bootstrap: str, topic: str) -> dict[str, Any]:
    """Cluster operations and a transactional id without ACLs (User:nobody)."""
    binding = AclBinding(
        ResourceType.TOPIC,
        topic,
        PatternType.LITERAL,
        "User:nobody",
        "*",
        AclOperation.READ,
        PermissionType.ALLOW,
    )
    (described, created, deleted, created_topic, scram, txn) = as_user(
        bootstrap,
        "nobody",
        describe_acls(AclBindingFilter()),
        create_acls([binding]),
        delete_acls([AclBindingFilter(name=topic)]),
        requests.create_topic(topic, partitions=1),
        alter_user_scram_credentials(deletions=[("alice", "SCRAM-SHA-256")]),
        _init_transactional(f"txn-{topic}"),
    )
    # Kafka's messages of CLUSTER_AUTHORIZATION_FAILED print its internal request object
    # ("Request Request(processor=..., session=...) needs ALTER permission."); Shoal
    # names the principal and the operation instead, on purpose: only the codes compare.
    return {
        "describe acls": described.error_code,
        "create acls": [r.error_code for r in created.results],
        "delete acls": [r.error_code for r in deleted.filter_results],
        "create topic": [(t.error_code, t.error_message) for t in created_topic.topics],
        "alter scram": [r.error_code for r in scram.results],
        "init transactional": txn.error_code,
    }


def _init_transactional(transactional_id: str) -> Any:
    import datetime

    from kio.schema.init_producer_id.v5.request import InitProducerIdRequest

    return InitProducerIdRequest(
        transactional_id=transactional_id,
        transaction_timeout=datetime.timedelta(seconds=30),
    )


def test_cluster_and_transactional_id_authorization(secured: Secured) -> None:
    topic = unique("sec-cluster")
    kafka, shoal = secured.run(_cluster_and_txn_ops, topic)
    assert kafka == shoal
    assert kafka["init transactional"] == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def _binding(
    kind: ResourceType,
    name: str,
    pattern: PatternType,
    principal: str,
    operation: AclOperation,
    permission: PermissionType = PermissionType.ALLOW,
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, "*", operation, permission)


def _acl_lifecycle(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Create a set of ACLs, list them through filters, delete some through filters."""
    bindings = [
        _binding(
            ResourceType.TOPIC, f"{prefix}-a", PatternType.LITERAL, "User:bob", AclOperation.READ
        ),
        _binding(ResourceType.TOPIC, prefix, PatternType.PREFIXED, "User:bob", AclOperation.WRITE),
        _binding(
            ResourceType.TOPIC, "*", PatternType.LITERAL, f"User:{prefix}", AclOperation.DESCRIBE
        ),
        _binding(
            ResourceType.TOPIC,
            f"{prefix}-a",
            PatternType.LITERAL,
            "User:bob",
            AclOperation.WRITE,
            PermissionType.DENY,
        ),
        _binding(
            ResourceType.GROUP, f"{prefix}-g", PatternType.PREFIXED, "User:bob", AclOperation.READ
        ),
        _binding(
            ResourceType.TOPIC, f"{prefix}-b", PatternType.LITERAL, "User:", AclOperation.READ
        ),
        _binding(ResourceType.TOPIC, f"{prefix}-b", PatternType.LITERAL, ":bob", AclOperation.READ),
    ]

    def mine(found: list[AclBinding]) -> list[str]:
        return sorted(str(b) for b in found if prefix in b.name or prefix in b.principal)

    (created,) = _admin(bootstrap, create_acls(bindings))
    filters = {
        "all": AclBindingFilter(),
        "literal a": AclBindingFilter(ResourceType.TOPIC, f"{prefix}-a", PatternType.LITERAL),
        "prefixed": AclBindingFilter(ResourceType.TOPIC, prefix, PatternType.PREFIXED),
        "match a": AclBindingFilter(ResourceType.TOPIC, f"{prefix}-a", PatternType.MATCH),
        "any a": AclBindingFilter(ResourceType.TOPIC, f"{prefix}-a", PatternType.ANY),
        "deny": AclBindingFilter(permission=PermissionType.DENY),
        "bob write": AclBindingFilter(principal="User:bob", operation=AclOperation.WRITE),
        "group": AclBindingFilter(ResourceType.GROUP),
    }
    listed = {}
    for name, f in filters.items():
        (response,) = _admin(bootstrap, describe_acls(f))
        listed[name] = (response.error_code, mine(described_bindings(response)))
    (deleted,) = _admin(
        bootstrap,
        delete_acls(
            [
                AclBindingFilter(ResourceType.TOPIC, f"{prefix}-a", PatternType.MATCH),
                AclBindingFilter(
                    ResourceType.GROUP, pattern_type=PatternType.PREFIXED, principal="User:bob"
                ),
                AclBindingFilter(ResourceType.TOPIC, f"{prefix}-none", PatternType.LITERAL),
                AclBindingFilter(ResourceType.TOPIC, f"{prefix}-a", UNASSIGNED),
            ]
        ),
    )
    (after,) = _admin(bootstrap, describe_acls(AclBindingFilter()))
    return {
        "created": [(r.error_code, r.error_message) for r in created.results],
        "listed": listed,
        "deleted": [
            (r.error_code, r.error_message, mine(deleted_bindings(r)))
            for r in deleted.filter_results
        ],
        "after": mine(described_bindings(after)),
    }


def test_acl_create_describe_delete_with_filters(secured: Secured) -> None:
    prefix = unique("acl")
    kafka, shoal = secured.run(_acl_lifecycle, prefix)
    assert kafka["created"] == shoal["created"]
    assert kafka["listed"] == shoal["listed"]
    assert kafka["deleted"] == shoal["deleted"]
    assert kafka["after"] == shoal["after"]
    assert kafka["created"] == [(0, "")] * 7


def _one(bootstrap: str, user: str, call: Any, read: Callable[[Any], Any]) -> Any:
    """`read` of the answer to `call` sent as `user`, or "closed" when the broker
    closed the connection instead of answering."""
    try:
        (response,) = as_user(bootstrap, user, call)
    except ConnectionError:
        return "closed"
    return read(response)


def _created(r: Any) -> Any:
    return [(x.error_code, x.error_message) for x in r.results]


def _deleted(r: Any) -> Any:
    return [(x.error_code, x.error_message, len(x.matching_acls)) for x in r.filter_results]


def _described(r: Any) -> Any:
    return (r.error_code, r.error_message, len(r.resources))


def _topic_acl(name: str, **fields: Any) -> AclBinding:
    base: dict[str, Any] = {
        "resource_type": ResourceType.TOPIC,
        "name": name,
        "pattern_type": PatternType.LITERAL,
        "principal": "User:bob",
        "host": "*",
        "operation": AclOperation.READ,
        "permission": PermissionType.ALLOW,
    }
    return AclBinding(**{**base, **fields})


def _acl_validation(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Invalid ACL bindings and filters: what each request gets, and what was created."""
    ok, bad = f"{prefix}-ok", f"{prefix}-bad"
    unassigned = UNASSIGNED
    cases: dict[str, tuple[str, Any, Callable[[Any], Any]]] = {
        "MATCH beside a valid binding": (
            "admin",
            create_acls([_topic_acl(ok), _topic_acl(bad, pattern_type=PatternType.MATCH)]),
            _created,
        ),
        "ANY pattern": (
            "admin",
            create_acls([_topic_acl(bad, pattern_type=PatternType.ANY)]),
            _created,
        ),
        "ANY operation": (
            "admin",
            create_acls([_topic_acl(bad, operation=AclOperation.ANY)]),
            _created,
        ),
        "ANY permission": (
            "admin",
            create_acls([_topic_acl(bad, permission=PermissionType.ANY)]),
            _created,
        ),
        "ANY resource type": (
            "admin",
            create_acls([_topic_acl(bad, resource_type=ResourceType.ANY)]),
            _created,
        ),
        "MATCH without ALTER on the cluster": (
            "nobody",
            create_acls([_topic_acl(bad, pattern_type=PatternType.MATCH)]),
            lambda r: [x.error_code for x in r.results],
        ),
        "UNKNOWN operation": (
            "admin",
            create_acls([_topic_acl(bad, operation=AclOperation.UNKNOWN)]),
            _created,
        ),
        "UNKNOWN pattern": (
            "admin",
            create_acls([_topic_acl(bad, pattern_type=PatternType.UNKNOWN)]),
            _created,
        ),
        "empty name, other cluster, valid": (
            "admin",
            create_acls(
                [
                    _topic_acl(f"{prefix}-ok2"),
                    _topic_acl(""),
                    _topic_acl("other", resource_type=ResourceType.CLUSTER),
                    _topic_acl("", resource_type=ResourceType.CLUSTER),
                ]
            ),
            _created,
        ),
        "unassigned codes": (
            "admin",
            create_acls(
                [
                    _topic_acl(bad, operation=unassigned),
                    _topic_acl(bad, resource_type=unassigned),
                    _topic_acl(bad, pattern_type=unassigned),
                    _topic_acl(bad, permission=unassigned),
                    _topic_acl("", operation=unassigned),
                ]
            ),
            _created,
        ),
        "principal without a type": (
            "admin",
            create_acls([_topic_acl(bad, principal="bob")]),
            _created,
        ),
        "delete: UNKNOWN operation": (
            "admin",
            delete_acls([AclBindingFilter(name=ok, operation=AclOperation.UNKNOWN)]),
            _deleted,
        ),
        "delete: unassigned codes": (
            "admin",
            delete_acls(
                [
                    AclBindingFilter(name=ok, operation=unassigned),
                    AclBindingFilter(name=ok, pattern_type=unassigned),
                    AclBindingFilter(name=ok, principal="bob"),
                ]
            ),
            _deleted,
        ),
        "describe: UNKNOWN pattern": (
            "admin",
            describe_acls(AclBindingFilter(pattern_type=PatternType.UNKNOWN)),
            _described,
        ),
        "describe: unassigned codes": (
            "admin",
            describe_acls(AclBindingFilter(operation=unassigned)),
            _described,
        ),
        "describe: unassigned resource type": (
            "admin",
            describe_acls(AclBindingFilter(resource_type=unassigned)),
            _described,
        ),
        "describe: the valid ones": (
            "admin",
            describe_acls(AclBindingFilter(name=f"{prefix}-ok2")),
            _described,
        ),
        "describe: the refused ones": (
            "admin",
            describe_acls(AclBindingFilter(name=ok)),
            _described,
        ),
    }
    return {name: _one(bootstrap, user, call, read) for name, (user, call, read) in cases.items()}


def test_acl_validation(secured: Secured) -> None:
    """Kafka 4.2's answers: a code 0 (UNKNOWN) closes the connection (its request
    classes refuse to parse it); an ANY or MATCH binding fails the whole CreateAcls
    with UNKNOWN_SERVER_ERROR (nothing created); the rest fail alone."""
    kafka, shoal = secured.run(_acl_validation, unique("aclv"))
    assert kafka == shoal
    assert kafka["UNKNOWN operation"] == "closed"
    assert kafka["MATCH beside a valid binding"] == [(KafkaError.UNKNOWN, None)] * 2


def _deny_beats_allow(bootstrap: str, topic: str) -> dict[str, Any]:
    """User:alice may do ALL on every topic (wildcard) but is denied WRITE on one
    topic's prefix: produce to it is refused, to another allowed; reads still work."""
    other = f"{topic}-other"
    for name in (topic, other):
        _create_topic(bootstrap, name)
    (created,) = _admin(
        bootstrap,
        create_acls(
            [
                _binding(
                    ResourceType.TOPIC, "*", PatternType.LITERAL, "User:alice", AclOperation.ALL
                ),
                _binding(
                    ResourceType.TOPIC,
                    topic,
                    PatternType.LITERAL,
                    "User:alice",
                    AclOperation.WRITE,
                    PermissionType.DENY,
                ),
            ]
        ),
    )
    assert [r.error_code for r in created.results] == [0, 0]
    time.sleep(1.0)  # Kafka's ACLs reach its authorizer through the metadata log
    denied, allowed, listed = as_user(
        bootstrap,
        "alice",
        requests.produce({(topic, 0): values_batch(1)}),
        requests.produce({(other, 0): values_batch(1)}),
        requests.list_offsets({(topic, 0): requests.LATEST_TIMESTAMP}),
    )
    return {
        "denied": denied.responses[0].partition_responses[0].error_code,
        "allowed": allowed.responses[0].partition_responses[0].error_code,
        "list offsets": [p.error_code for t in listed.topics for p in t.partitions],
    }


def test_deny_beats_allow(secured: Secured) -> None:
    kafka, shoal = secured.run(_deny_beats_allow, unique("sec-deny"))
    assert kafka == shoal
    assert kafka["denied"] == KafkaError.TOPIC_AUTHORIZATION_FAILED


def _confluent_without_acls(bootstrap: str, topic: str) -> dict[str, Any]:
    """confluent-kafka as User:nobody: a produce's delivery error, an AdminClient's
    list of topics."""
    _create_topic(bootstrap, topic)
    security = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "nobody",
        "sasl.password": PASSWORDS["nobody"],
    }
    errors: list[Any] = []
    producer = Producer({**security, "message.timeout.ms": 10000})
    producer.produce(topic, b"x", on_delivery=lambda err, _m: errors.append(err and err.code()))
    producer.flush(WAIT_S)
    listed = AdminClient(security).list_topics(timeout=WAIT_S)
    return {"produce": errors, "topics": sorted(t for t in listed.topics if t == topic)}


def test_confluent_client_without_acls(secured: Secured) -> None:
    kafka, shoal = secured.run(_confluent_without_acls, unique("sec-cfl"))
    assert kafka == shoal
    assert kafka["produce"] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def _metadata_with_operations(topics: list[str]) -> Any:
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    return MetadataRequest(
        topics=tuple(MetadataRequestTopic(topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )


def _cluster_with_operations() -> Any:
    from kio.schema.describe_cluster.v1.request import DescribeClusterRequest

    return DescribeClusterRequest(include_cluster_authorized_operations=True)


def _reader_only(bootstrap: str, topic: str) -> dict[str, Any]:
    """User:carol may READ `topic` and its group only: what each API answers."""
    group, other_group = f"g-{topic}", f"other-{topic}"
    _create_topic(bootstrap, topic)
    (created,) = _admin(
        bootstrap,
        create_acls(
            [
                _binding(
                    ResourceType.TOPIC, topic, PatternType.LITERAL, "User:carol", AclOperation.READ
                ),
                _binding(
                    ResourceType.GROUP, group, PatternType.LITERAL, "User:carol", AclOperation.READ
                ),
            ]
        ),
    )
    assert [r.error_code for r in created.results] == [0, 0]
    time.sleep(1.0)  # Kafka's ACLs reach its authorizer through the metadata log
    tp = (topic, 0)
    answers = as_user(
        bootstrap,
        "carol",
        _metadata_with_operations([topic]),
        requests.produce({tp: values_batch(1)}),
        requests.fetch({tp: FetchPosition(0, 1 << 20)}, max_wait_ms=0),
        requests.list_offsets({tp: requests.EARLIEST_TIMESTAMP}),
        requests.describe_configs(2, [topic]),
        requests.create_partitions({topic: 2}),
        requests.delete_topics([topic]),
        requests.find_coordinator(group),
        requests.find_coordinator(other_group),
        requests.offset_fetch(group, {topic: [0]}),
        requests.describe_groups([group, other_group]),
        requests.delete_groups([group]),
        _init_idempotent(),
        _cluster_with_operations(),
        requests.describe_producers([tp]),
    )
    (
        md,
        produced,
        fetched,
        listed,
        configs,
        partitions,
        deleted,
        coordinator,
        other,
        offsets,
        groups,
        deleted_groups,
        pid,
        cluster,
        producers,
    ) = answers
    return {
        "metadata": [(t.error_code, t.topic_authorized_operations) for t in md.topics],
        "produce": produced.responses[0].partition_responses[0].error_code,
        "fetch": [p.error_code for r in fetched.responses for p in r.partitions],
        "list offsets": [p.error_code for t in listed.topics for p in t.partitions],
        "describe configs": [(r.error_code, r.error_message) for r in configs.results],
        "create partitions": [(r.error_code, r.error_message) for r in partitions.results],
        "delete topics": [r.error_code for r in deleted.responses],
        "find coordinator": [c.error_code for c in coordinator.coordinators + other.coordinators],
        "offset fetch": fetched_offsets(offsets).error_code,
        "describe groups": [(g.group_id == group, g.error_code) for g in groups.groups],
        "delete groups": [r.error_code for r in deleted_groups.results],
        "idempotent producer id": pid.error_code,
        "describe cluster": (cluster.error_code, cluster.cluster_authorized_operations),
        "describe producers": [p.error_code for t in producers.topics for p in t.partitions],
    }


def _init_idempotent() -> Any:
    import datetime

    from kio.schema.init_producer_id.v5.request import InitProducerIdRequest

    return InitProducerIdRequest(
        transactional_id=None, transaction_timeout=datetime.timedelta(seconds=30)
    )


def test_reader_only(secured: Secured) -> None:
    kafka, shoal = secured.run(_reader_only, unique("sec-read"))
    assert kafka == shoal
    assert kafka["produce"] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert kafka["fetch"] == [KafkaError.NO_ERROR]


# ---- the SASL state machine, request by request


def _answers(bootstrap: str, sequence: list[Any]) -> list[Any]:
    """Send `sequence` one request at a time on one raw connection: each answer's
    fields, or CLOSED where the broker closed the connection instead."""
    raw = Raw(bootstrap)
    raw.sock.settimeout(10.0)
    answers: list[Any] = []
    try:
        for request in sequence:
            if not raw.send(request_frame(request)):
                return [*answers, "closed"]
            try:
                got = raw.read_frame()
            except ConnectionResetError:
                got = None
            if got is None:
                return [*answers, "closed"]
            answer = decoded(got, request)
            fields = ("error_code", "error_message", "mechanisms", "auth_bytes")
            answers.append({f: getattr(answer, f) for f in fields if hasattr(answer, f)})
        return answers
    finally:
        raw.close()


def _plain_token(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\x00{user}\x00{password}".encode()


_ALICE = _plain_token("alice", PASSWORDS["alice"])
_PLAIN = SaslHandshakeRequest(mechanism="PLAIN")
SASL_SEQUENCES: dict[str, list[Any]] = {
    "SaslAuthenticate first": [SaslAuthenticateRequest(auth_bytes=_ALICE)],
    "SaslHandshake twice": [_PLAIN, _PLAIN],
    "malformed PLAIN token": [_PLAIN, SaslAuthenticateRequest(auth_bytes=b"garbage")],
    "empty PLAIN token": [_PLAIN, SaslAuthenticateRequest(auth_bytes=b"")],
    "another authorization id": [
        _PLAIN,
        SaslAuthenticateRequest(auth_bytes=_plain_token("alice", PASSWORDS["alice"], "bob")),
    ],
    "the same authorization id": [
        _PLAIN,
        SaslAuthenticateRequest(auth_bytes=_plain_token("alice", PASSWORDS["alice"], "alice")),
    ],
    "SaslAuthenticate after success": [
        _PLAIN,
        SaslAuthenticateRequest(auth_bytes=_ALICE),
        SaslAuthenticateRequest(auth_bytes=_ALICE),
        api_versions_request(),
    ],
    "SaslHandshake after success, no re-authentication": [
        _PLAIN,
        SaslAuthenticateRequest(auth_bytes=_ALICE),
        SaslHandshakeRequest(mechanism="SCRAM-SHA-256"),
        _PLAIN,
        SaslAuthenticateRequest(auth_bytes=_ALICE),
        api_versions_request(),
    ],
    "SaslAuthenticate v0": [_PLAIN, SaslAuthenticateV0(auth_bytes=_ALICE)],
    "SaslAuthenticate v0, wrong password": [
        _PLAIN,
        SaslAuthenticateV0(auth_bytes=_plain_token("alice", "wrong")),
    ],
    "SCRAM: a malformed first message": [
        SaslHandshakeRequest(mechanism="SCRAM-SHA-256"),
        SaslAuthenticateRequest(auth_bytes=b"n,,garbage"),
    ],
    "SCRAM: an unknown user": [
        SaslHandshakeRequest(mechanism="SCRAM-SHA-256"),
        SaslAuthenticateRequest(auth_bytes=b"n,,n=mallory,r=abcdefgh"),
    ],
    "a lower-case mechanism": [SaslHandshakeRequest(mechanism="plain")],
    "an empty mechanism": [SaslHandshakeRequest(mechanism="")],
}


@pytest.mark.parametrize("case", SASL_SEQUENCES)
def test_sasl_sequences(secured: Secured, case: str) -> None:
    kafka, shoal = secured.run(_answers, SASL_SEQUENCES[case])
    assert kafka == shoal


def test_request_mid_exchange(secured: Secured) -> None:
    """A request other than SaslAuthenticate after the handshake: Kafka answers it with
    its error response (ILLEGAL_SASL_STATE) and closes; Shoal closes without the answer
    (on purpose: it would need each API's error response, for a client that broke the
    protocol). Both end the connection."""
    for request in (requests.metadata(None).build(12), api_versions_request()):
        kafka, shoal = secured.run(_answers, [_PLAIN, request, api_versions_request()])
        assert kafka[0] == shoal[0]
        assert isinstance(kafka[1], dict) and kafka[2:] == ["closed"]
        assert kafka[1].get("error_code", KafkaError.ILLEGAL_SASL_STATE) == (
            KafkaError.ILLEGAL_SASL_STATE
        )
        assert shoal[1:] == ["closed"]


@pytest.mark.parametrize(
    "sequence",
    [[_PLAIN], [SaslAuthenticateRequest(auth_bytes=_ALICE), api_versions_request()]],
    ids=["SaslHandshake", "SaslAuthenticate"],
)
def test_sasl_on_a_plaintext_listener(secured: Secured, sequence: list[Any]) -> None:
    kafka, shoal = secured.run_plaintext(_answers, sequence)
    assert kafka == shoal


# ---- confluent-kafka clients against the ACLs


def _sasl_config(bootstrap: str, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


def _first_consume_error(bootstrap: str, user: str, topic: str, group: str) -> Any:
    """The first error a subscribed confluent-kafka Consumer reports (code, or None)."""
    consumer = Consumer(
        {
            **_sasl_config(bootstrap, user),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                return message.error().code()
            if message is not None:
                return "consumed"
        return None
    finally:
        consumer.close()


def _confluent_consumers(bootstrap: str, topic: str) -> dict[str, Any]:
    """User:carol may READ `topic` and group g-`topic`; User:nobody nothing."""
    group = f"g-{topic}"
    _create_topic(bootstrap, topic)
    (created,) = _admin(
        bootstrap,
        create_acls(
            [
                _binding(
                    ResourceType.TOPIC, topic, PatternType.LITERAL, "User:carol", AclOperation.READ
                ),
                _binding(
                    ResourceType.GROUP, group, PatternType.LITERAL, "User:carol", AclOperation.READ
                ),
            ]
        ),
    )
    assert [r.error_code for r in created.results] == [0, 0]
    _admin(bootstrap, requests.produce({(topic, 0): values_batch(1)}))
    time.sleep(1.0)  # Kafka's ACLs reach its authorizer through the metadata log
    return {
        "carol, her group": _first_consume_error(bootstrap, "carol", topic, group),
        "carol, another group": _first_consume_error(bootstrap, "carol", topic, f"x-{group}"),
        "nobody": _first_consume_error(bootstrap, "nobody", topic, group),
    }


def test_confluent_consumers(secured: Secured) -> None:
    kafka, shoal = secured.run(_confluent_consumers, unique("sec-cons"))
    assert kafka == shoal
    assert kafka["carol, her group"] == "consumed"
    assert kafka["carol, another group"] == KafkaError.GROUP_AUTHORIZATION_FAILED


def _confluent_transactions(bootstrap: str, transactional_id: str) -> Any:
    """A transactional confluent-kafka Producer as User:nobody: init_transactions' error."""
    producer = Producer({**_sasl_config(bootstrap, "nobody"), "transactional.id": transactional_id})
    try:
        producer.init_transactions(WAIT_S)
    except KafkaException as exc:
        error = exc.args[0]
        return error.code(), error.fatal()
    return None


def test_confluent_transactional_producer_without_acls(secured: Secured) -> None:
    kafka, shoal = secured.run(_confluent_transactions, unique("sec-txn"))
    assert kafka == shoal
    assert kafka[0] == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def _large_frame_before_authentication(bootstrap: str) -> tuple[bool, bytes]:
    """A SaslAuthenticate frame over `sasl.server.max.receive.size` (512 KiB, both
    brokers' default) right after the handshake."""
    raw = Raw(bootstrap)
    raw.sock.settimeout(10.0)
    try:
        raw.send(request_frame(_PLAIN))
        _frame(raw)
        raw.send(request_frame(SaslAuthenticateRequest(auth_bytes=b"x" * (600 * 1024))))
        return raw.closed_by_broker(10.0)
    finally:
        raw.close()


def test_large_frame_before_authentication(secured: Secured) -> None:
    kafka, shoal = secured.run(_large_frame_before_authentication)
    assert kafka == shoal == (True, b"")


def _describe_only(bootstrap: str, topic: str) -> dict[str, Any]:
    """User:dave may DESCRIBE `topic` and every topic prefixed by it, and nothing else:
    admin, group and transaction APIs each refuse as Kafka does."""
    from shoal.client.requests import ConfigChange
    from shoal.client.scram_requests import describe_user_scram_credentials
    from shoal.client.share_requests import heartbeat

    _create_topic(bootstrap, topic)
    (created,) = _admin(
        bootstrap,
        create_acls(
            [
                _binding(
                    ResourceType.TOPIC,
                    topic,
                    PatternType.PREFIXED,
                    "User:dave",
                    AclOperation.DESCRIBE,
                )
            ]
        ),
    )
    assert [r.error_code for r in created.results] == [0]
    time.sleep(1.0)  # Kafka's ACLs reach its authorizer through the metadata log
    tp = (topic, 0)
    group = f"g-{topic}"
    (
        auto_created,
        broker_configs,
        altered,
        scram,
        commit,
        groups,
        txns,
        txn,
        producers,
        share,
    ) = as_user(
        bootstrap,
        "dave",
        requests.metadata([f"{topic}-new"], allow_auto_topic_creation=True),
        requests.describe_configs(4, ["1"]),
        requests.incremental_alter_configs({(2, topic): [ConfigChange("retention.ms", "1000")]}),
        # users=None (all) without DESCRIBE on the cluster: Kafka 4.2 fails with a
        # NullPointerException in DescribeUserScramCredentialsRequest.getErrorResponse and
        # never answers; Shoal answers CLUSTER_AUTHORIZATION_FAILED. Named users compare.
        describe_user_scram_credentials(["alice"]),
        requests.offset_commit(group, {tp: 0}),
        requests.list_groups(),
        requests.list_transactions(),
        requests.describe_transactions([f"t-{topic}"]),
        requests.describe_producers([tp]),
        heartbeat(group, "", 0, [topic]),
    )
    return {
        "metadata auto-create": [
            (t.name == f"{topic}-new", t.error_code) for t in auto_created.topics
        ],
        "describe broker configs": [r.error_code for r in broker_configs.results],
        "alter topic configs": [(r.error_code, r.error_message) for r in altered.responses],
        "describe scram": scram.error_code,  # messages: see _cluster_and_txn_ops
        "offset commit": [p.error_code for t in commit.topics for p in t.partitions],
        "list groups": (
            groups.error_code,
            [g.group_id for g in groups.groups if topic in g.group_id],
        ),
        "list transactions": (txns.error_code, list(txns.transaction_states)),
        "describe transactions": [s.error_code for s in txn.transaction_states],
        "describe producers": [p.error_code for t in producers.topics for p in t.partitions],
        "share group heartbeat": share.error_code,
    }


def test_describe_only(secured: Secured) -> None:
    kafka, shoal = secured.run(_describe_only, unique("sec-desc"))
    assert kafka == shoal


def _scram_users_of_all(bootstrap: str) -> Any:
    """DescribeUserScramCredentials of every user (users=null) as User:nobody: the
    answer's code, or SILENT when none comes within 3 s."""
    from shoal.client.scram_requests import describe_user_scram_credentials

    async def go() -> Any:
        node = parse_bootstrap(bootstrap)[0]
        settings = _settings("nobody", None, "PLAIN")
        conn = await Connection.open(node.host, node.port, settings=settings)
        try:
            await conn.handshake(timeout_s=WAIT_S, settings=settings)
            try:
                answer = await send(conn, describe_user_scram_credentials(None), timeout_s=3.0)
            except TimeoutError:
                return "no answer"
            return answer.error_code
        finally:
            await conn.close()

    return asyncio.run(go())


def test_all_scram_users_without_acls(secured: Secured) -> None:
    """Differs on purpose: Kafka 4.2 never answers (a NullPointerException in
    DescribeUserScramCredentialsRequest.getErrorResponse, logged by its KafkaApis);
    Shoal answers CLUSTER_AUTHORIZATION_FAILED."""
    kafka, shoal = secured.run(_scram_users_of_all)
    assert kafka == "no answer"
    assert shoal == KafkaError.CLUSTER_AUTHORIZATION_FAILED


# ---- SCRAM credentials through AlterUserScramCredentials


def _scram_alterations(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Invalid and valid AlterUserScramCredentials requests (kio, at v0) as the super
    user: each user's (code, message), sorted by user (Kafka lists them from hash maps)."""
    from kio.schema.alter_user_scram_credentials.v0.request import (
        AlterUserScramCredentialsRequest,
        ScramCredentialDeletion,
        ScramCredentialUpsertion,
    )

    def up(user: str, mechanism: int = 1, **fields: Any) -> Any:
        base: dict[str, Any] = {"iterations": 4096, "salt": b"s" * 16, "salted_password": b"p" * 32}
        return ScramCredentialUpsertion(
            name=f"{prefix}{user}", mechanism=mechanism, **{**base, **fields}
        )

    def down(user: str, mechanism: int = 1) -> Any:
        return ScramCredentialDeletion(name=f"{prefix}{user}", mechanism=mechanism)

    cases = {
        "iterations": [up("low", iterations=4095), up("high", iterations=16385)],
        "mechanisms": [up("m0", mechanism=0), up("m3", mechanism=3)],
        "empty salt": [up("nosalt", salt=b"")],
        "empty salted password": [up("nopw", salted_password=b"")],
        "two mechanisms of one user": [up("both"), up("both", mechanism=2)],
        "one user twice": [up("twice"), up("twice")],
        "one bad of two users": [up("good"), up("bad", iterations=1)],
    }
    answers = {}
    for name, upsertions in cases.items():
        (response,) = _admin(
            bootstrap, AlterUserScramCredentialsRequest(deletions=(), upsertions=tuple(upsertions))
        )
        answers[name] = sorted((r.user, r.error_code, r.error_message) for r in response.results)
    for name, deletions, upsertions in [
        ("delete a missing credential", [down("ghost")], []),
        ("delete and set one user", [down("good")], [up("good", mechanism=2)]),
        ("delete an unset mechanism", [down("good", mechanism=2)], []),
        ("delete with an unknown mechanism", [down("good", mechanism=9)], []),
        ("delete", [down("good")], []),
    ]:
        (response,) = _admin(
            bootstrap,
            AlterUserScramCredentialsRequest(
                deletions=tuple(deletions), upsertions=tuple(upsertions)
            ),
        )
        answers[name] = sorted((r.user, r.error_code, r.error_message) for r in response.results)
    return answers


def test_scram_credential_alterations(secured: Secured) -> None:
    kafka, shoal = secured.run(_scram_alterations, unique("scram").replace("-", "")[:12])
    assert kafka == shoal
    assert [code for _user, code, _m in kafka["two mechanisms of one user"]] == [
        KafkaError.DUPLICATE_RESOURCE
    ]


def _scram_descriptions(bootstrap: str) -> Any:
    """DescribeUserScramCredentials of a user with credentials, one without, one twice."""
    from kio.schema.describe_user_scram_credentials.v0.request import (
        DescribeUserScramCredentialsRequest,
        UserName,
    )

    names = (SCRAM_USER, "nobody-has-this", "twice", "twice")
    (response,) = _admin(
        bootstrap,
        DescribeUserScramCredentialsRequest(users=tuple(UserName(name=n) for n in names)),
    )
    return (
        response.error_code,
        response.error_message,
        sorted(
            (
                r.user,
                r.error_code,
                r.error_message,
                # Kafka's order of a user's mechanisms follows its credential map's
                # iteration (not part of the contract): compared as a set.
                sorted((i.mechanism, i.iterations) for i in r.credential_infos),
            )
            for r in response.results
        ),
    )


def test_scram_credential_descriptions(secured: Secured) -> None:
    kafka, shoal = secured.run(_scram_descriptions)
    assert kafka == shoal
