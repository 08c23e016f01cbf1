"""SaslHandshake, SaslAuthenticate, DescribeUserScramCredentials and
AlterUserScramCredentials on the wire: Kafka's error codes and messages."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.alter_user_scram_credentials.v0 import request as alter
from kio.schema.describe_user_scram_credentials.v0 import request as describe
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from shoal.client import Client, ClientSettings
from shoal.client.requests import describe_configs
from shoal.client.security import ClientSecurity
from shoal.security.sasl_plain import plain_token
from tests.support.broker import BrokerProcess, running
from tests.support.raw_wire import Raw, decoded, request_frame
from tests.support.wire import api_versions_request, call, call1, open_connection

BROKER_RESOURCE = 4  # DescribeConfigs resource type of a broker
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";'


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("sasl-wire") / "data",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "connection.failed.authentication.delay.ms=0",
    )


def upsertion(name: str, mechanism: int = 1, iterations: int = 4096) -> Any:
    return alter.ScramCredentialUpsertion(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=b"s" * 16,
        salted_password=b"p" * 32,
    )


def results(response: Any) -> dict[str, tuple[ErrorCode, str | None]]:
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def test_alter_and_describe_user_scram_credentials(broker: BrokerProcess) -> None:
    created = call1(
        broker.bootstrap,
        alter.AlterUserScramCredentialsRequest(
            deletions=(alter.ScramCredentialDeletion(name="ghost", mechanism=1),),
            upsertions=(
                upsertion("ann"),
                upsertion("both"),
                upsertion("both", mechanism=2),  # one change per user and request, as Kafka
                upsertion("weak", iterations=4095),
                upsertion("strong", iterations=16385),
                upsertion("odd", mechanism=3),
                upsertion(""),
                upsertion("twice"),
                upsertion("twice"),
            ),
        ),
    )
    assert results(created) == {
        "ghost": (
            ErrorCode.resource_not_found,
            "Attempt to delete a user credential that does not exist",
        ),
        "ann": (ErrorCode.none, None),
        "weak": (ErrorCode.unacceptable_credential, "Too few iterations"),
        "strong": (ErrorCode.unacceptable_credential, "Too many iterations"),
        "odd": (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "": (ErrorCode.unacceptable_credential, "Username must not be empty"),
        "twice": (
            ErrorCode.duplicate_resource,
            "A user credential cannot be altered twice in the same request",
        ),
        "both": (
            ErrorCode.duplicate_resource,
            "A user credential cannot be altered twice in the same request",
        ),
    }
    second = call1(
        broker.bootstrap,
        alter.AlterUserScramCredentialsRequest(
            deletions=(), upsertions=(upsertion("ann", mechanism=2, iterations=8192),)
        ),
    )
    assert results(second) == {"ann": (ErrorCode.none, None)}
    response = call1(
        broker.bootstrap,
        describe.DescribeUserScramCredentialsRequest(
            users=(describe.UserName(name="ann"), describe.UserName(name="nobody"))
        ),
    )
    by_user = {r.user: r for r in response.results}
    assert [(i.mechanism, i.iterations) for i in by_user["ann"].credential_infos] == [
        (1, 4096),
        (2, 8192),
    ]
    assert by_user["nobody"].error_code == ErrorCode.resource_not_found
    assert by_user["nobody"].error_message == (
        "Attempt to describe a user credential that does not exist: nobody"
    )
    everyone = call1(broker.bootstrap, describe.DescribeUserScramCredentialsRequest(users=None))
    assert "ann" in [r.user for r in everyone.results]
    assert "twice" not in [r.user for r in everyone.results]
    assert "both" not in [r.user for r in everyone.results]


def test_sasl_requests_on_a_plaintext_listener(broker: BrokerProcess) -> None:
    handshake, authenticate = call(
        broker.bootstrap,
        SaslHandshakeRequest(mechanism="PLAIN"),
        SaslAuthenticateRequest(auth_bytes=b"x"),
    )
    assert handshake.error_code == ErrorCode.illegal_sasl_state
    assert authenticate.error_code == ErrorCode.illegal_sasl_state


def test_handshake_and_authenticate(sasl_broker: BrokerProcess) -> None:
    async def go() -> None:
        conn = await open_connection(sasl_broker.bootstrap)
        await conn.request(api_versions_request(), timeout_s=10)
        handshake = await conn.request(SaslHandshakeRequest(mechanism="PLAIN"), timeout_s=10)
        assert handshake.error_code == ErrorCode.none
        assert list(handshake.mechanisms) == ["PLAIN", "SCRAM-SHA-512"]
        ok = await conn.request(
            SaslAuthenticateRequest(auth_bytes=plain_token("alice", "pw")), timeout_s=10
        )
        assert (ok.error_code, ok.error_message, ok.session_lifetime.total_seconds()) == (
            ErrorCode.none,
            "",  # Kafka's empty message on success
            0,
        )
        again = await conn.request(SaslAuthenticateRequest(auth_bytes=b"x"), timeout_s=10)
        assert again.error_code == ErrorCode.illegal_sasl_state
        await conn.close()

        conn = await open_connection(sasl_broker.bootstrap)
        refused = await conn.request(SaslHandshakeRequest(mechanism="GSSAPI"), timeout_s=10)
        assert refused.error_code == ErrorCode.unsupported_sasl_mechanism
        assert list(refused.mechanisms) == ["PLAIN", "SCRAM-SHA-512"]
        await conn.close()

        conn = await open_connection(sasl_broker.bootstrap)
        await conn.request(SaslHandshakeRequest(mechanism="PLAIN"), timeout_s=10)
        bad = await conn.request(
            SaslAuthenticateRequest(auth_bytes=plain_token("alice", "nope")), timeout_s=10
        )
        assert bad.error_code == ErrorCode.sasl_authentication_failed
        assert bad.error_message == "Authentication failed: Invalid username or password"
        assert await conn.wait_closed_by_peer(10)  # closed after the answer, as Kafka does
        await conn.close()

    asyncio.run(go())


def test_describe_broker_configs_hides_listener_jaas(sasl_broker: BrokerProcess) -> None:
    """DescribeConfigs of the broker works with per-listener keys set and never shows the
    JAAS config (it holds passwords)."""
    settings = ClientSettings(
        security=ClientSecurity(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password="pw",
        )
    )
    with Client(sasl_broker.bootstrap, settings=settings) as client:
        response = client.call(describe_configs(BROKER_RESOURCE, ["1"]))
    (result,) = response.results
    assert result.error_code == ErrorCode.none
    names = {c.name: c.value for c in result.configs}
    assert names["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-512"
    assert not any(name.startswith("listener.name.") for name in names)
    assert all(value != "pw" for value in names.values())


@pytest.mark.parametrize(
    ("password", "served"), [("pw", True), ("nope", False)], ids=["right", "wrong"]
)
def test_handshake_v0_then_bare_tokens(
    sasl_broker: BrokerProcess, password: str, served: bool
) -> None:
    """SaslHandshake v0: the PLAIN token follows as a bare size-prefixed frame and is
    answered by a bare (empty) challenge; requests are then served. A refused token
    gets no answer: the connection closes (Kafka's SaslServerAuthenticator without
    SaslAuthenticate headers)."""
    handshake = SaslHandshakeV0(mechanism="PLAIN")
    raw = Raw(sasl_broker.bootstrap)
    try:
        raw.send(request_frame(handshake))
        answer = raw.read_frame()
        assert answer is not None and decoded(answer, handshake).error_code == ErrorCode.none
        token = plain_token("alice", password)
        raw.send(struct.pack(">i", len(token)) + token)
        challenge = raw.read_frame()
        if not served:
            assert challenge is None
            assert sasl_broker.wait_for_log(r"SASL authentication failed \(mechanism PLAIN")
            return
        assert challenge == b""
        raw.send(request_frame(api_versions_request()))
        assert raw.read_frame() is not None
        assert sasl_broker.wait_for_log(r"SASL authenticated User:alice \(mechanism PLAIN")
    finally:
        raw.close()
