"""The per-connection SASL state machine (security/sasl.py): the gate, the handshake,
each mechanism through it, failures, and KIP-368 re-authentication."""

from __future__ import annotations

import pytest

from shoal.security.acl import KafkaPrincipal
from shoal.security.oauth import UnsecuredJwsValidator, client_message, unsecured_token
from shoal.security.sasl import (
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslSession,
    SaslSettings,
    SaslState,
    kafka_mechanism_order,
)
from shoal.security.sasl_plain import plain_token
from shoal.security.scram import (
    SCRAM_SHA_256,
    ScramClient,
    credential_from_salted,
    salted_password,
)

METADATA, PRODUCE = 3, 0
SALT = b"salt-salt-salt!!"
SCRAM_BOB = credential_from_salted(
    SCRAM_SHA_256, salted_password(SCRAM_SHA_256, "bob-pw", SALT, 4096), SALT, 4096
)


def settings(**kw: object) -> SaslSettings:
    base: dict[str, object] = {
        "enabled_mechanisms": ("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"),
        "plain_users": {"alice": "alice-pw", "eve": "eve-pw"},
        "scram_credential": lambda m, u: SCRAM_BOB if (m, u) == ("SCRAM-SHA-256", "bob") else None,
        "token_validator": UnsecuredJwsValidator(),
        "server_nonce": lambda: "server-nonce",
    }
    base.update(kw)
    return SaslSettings(**base)  # type: ignore[arg-type]


def plain_login(session: SaslSession, user: str = "alice", pw: str = "alice-pw", now: int = 0):  # type: ignore[no-untyped-def]
    assert session.handshake("PLAIN").error is None
    return session.authenticate(plain_token(user, pw), now_ms=now)


def test_before_the_handshake_only_api_versions_and_handshake() -> None:
    session = SaslSession(settings())
    assert session.refusal(API_VERSIONS, "api_versions", now_ms=0) is None
    assert session.refusal(SASL_HANDSHAKE, "sasl_handshake", now_ms=0) is None
    assert session.refusal(METADATA, "metadata", now_ms=0) == (
        "Unexpected Kafka request of type metadata during SASL handshake."
    )
    assert session.refusal(SASL_AUTHENTICATE, "sasl_authenticate", now_ms=0) is not None


def test_unsupported_mechanism_lists_the_enabled_ones_and_fails() -> None:
    session = SaslSession(settings(enabled_mechanisms=("PLAIN",)))
    result = session.handshake("SCRAM-SHA-256")
    assert (result.error, result.mechanisms) == ("unsupported", ("PLAIN",))
    assert session.refusal(SASL_HANDSHAKE, "sasl_handshake", now_ms=0) is not None


def test_plain_success_sets_the_principal_and_opens_the_gate() -> None:
    session = SaslSession(settings())
    assert session.refusal(PRODUCE, "produce", now_ms=0) is not None
    result = plain_login(session)
    assert result.complete and result.failure is None and result.session_lifetime_ms == 0
    assert session.principal == KafkaPrincipal("User", "alice")
    assert session.refusal(PRODUCE, "produce", now_ms=10**12) is None  # never expires
    assert session.authenticate(b"again", now_ms=0).illegal


def test_failure_closes_everything_after_it() -> None:
    session = SaslSession(settings())
    result = plain_login(session, pw="wrong")
    assert result.failure == "Authentication failed: Invalid username or password"
    assert result.user == "alice" and "wrong" not in result.log_detail
    assert session.state is SaslState.FAILED
    for key in (API_VERSIONS, SASL_HANDSHAKE, PRODUCE):
        assert session.refusal(key, "x", now_ms=0) == "SASL authentication failed"


def test_scram_through_the_session() -> None:
    session = SaslSession(settings())
    assert session.handshake("SCRAM-SHA-256").error is None
    client = ScramClient(SCRAM_SHA_256, username="bob", password="bob-pw", nonce="cn")
    first = session.authenticate(client.first(), now_ms=0)
    assert not first.complete and first.failure is None
    assert session.refusal(PRODUCE, "produce", now_ms=0) is not None  # mid exchange
    final = session.authenticate(client.final(first.auth_bytes), now_ms=0)
    assert final.complete
    client.verify(final.auth_bytes)
    assert session.principal == KafkaPrincipal("User", "bob")


@pytest.mark.parametrize("user", ["bob", "nobody"])
def test_scram_failures_use_kafkas_message(user: str) -> None:
    session = SaslSession(settings())
    session.handshake("SCRAM-SHA-256")
    client = ScramClient(SCRAM_SHA_256, username=user, password="bad", nonce="cn")
    first = session.authenticate(client.first(), now_ms=0)
    result = (
        first if first.failure else session.authenticate(client.final(first.auth_bytes), now_ms=0)
    )
    assert result.failure == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )


def test_oauthbearer_invalid_token_gets_the_rfc7628_error_then_fails() -> None:
    session = SaslSession(settings())
    session.handshake("OAUTHBEARER")
    expired = unsecured_token("carol", issued_ms=0, lifetime_ms=1000)
    challenge = session.authenticate(client_message(expired), now_ms=5000)
    assert challenge.auth_bytes == b'{"status":"invalid_token"}' and not challenge.complete
    result = session.authenticate(b"\x01", now_ms=5000)
    assert result.failure == '{"status":"invalid_token"}' and "expired" in result.log_detail


def test_session_lifetime_is_bounded_by_reauth_ms_and_token_expiry() -> None:
    session = SaslSession(settings(max_reauth_ms=10_000))
    session.handshake("OAUTHBEARER")
    token = unsecured_token("carol", issued_ms=0, lifetime_ms=4_000)
    assert session.authenticate(client_message(token), now_ms=1_000).session_lifetime_ms == 3_000
    session = SaslSession(settings(max_reauth_ms=10_000))
    assert plain_login(session, now=1_000).session_lifetime_ms == 10_000
    assert session.refusal(PRODUCE, "produce", now_ms=10_999) is None
    assert session.refusal(PRODUCE, "produce", now_ms=11_000) == (
        "the SASL session expired and the client did not re-authenticate"
    )
    # re-authentication is still allowed, and renews the session
    assert session.refusal(SASL_HANDSHAKE, "sasl_handshake", now_ms=11_000) is None
    result = plain_login(session, now=11_000)
    assert result.complete and result.session_lifetime_ms == 10_000
    assert session.refusal(PRODUCE, "produce", now_ms=20_000) is None


def test_reauthentication_must_keep_principal_and_mechanism() -> None:
    session = SaslSession(settings(max_reauth_ms=10_000))
    plain_login(session)
    result = plain_login(session, user="eve", pw="eve-pw")
    assert result.failure is not None and "Cannot change principals" in result.failure
    assert session.state is SaslState.FAILED
    session = SaslSession(settings(max_reauth_ms=10_000))
    plain_login(session)
    assert session.handshake("SCRAM-SHA-256").error == "unsupported"
    assert session.state is SaslState.FAILED


@pytest.mark.parametrize(
    ("configured", "listed"),
    [  # java.util.HashSet iteration (checked on a JVM: new ArrayList<>(new HashSet<>(list)))
        (("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), ("PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256")),
        (
            ("OAUTHBEARER", "GSSAPI", "SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"),
            ("SCRAM-SHA-512", "PLAIN", "GSSAPI", "SCRAM-SHA-256", "OAUTHBEARER"),
        ),
        (
            ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"),
            ("SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"),
        ),
    ],
)
def test_mechanisms_are_listed_in_kafkas_order(
    configured: tuple[str, ...], listed: tuple[str, ...]
) -> None:
    assert kafka_mechanism_order(configured) == listed
    session = SaslSession(settings(enabled_mechanisms=configured))
    assert session.handshake("GSSAPI-X").mechanisms == listed


def test_handshake_v0_takes_raw_tokens_until_the_exchange_ends() -> None:
    session = SaslSession(settings())
    assert not session.awaiting_raw_token
    assert session.handshake("SCRAM-SHA-256", raw_tokens=True).error is None
    client = ScramClient(SCRAM_SHA_256, username="bob", password="bob-pw", nonce="cn")
    first = session.authenticate(client.first(), now_ms=0)
    assert first.failure is None and not first.complete
    assert session.awaiting_raw_token  # the SCRAM exchange is two tokens
    final = session.authenticate(client.final(first.auth_bytes), now_ms=0)
    assert final.complete and session.authenticated
    assert not session.awaiting_raw_token  # requests again, with headers


def test_handshake_v1_takes_sasl_authenticate_requests() -> None:
    session = SaslSession(settings())
    assert session.handshake("PLAIN").error is None
    assert not session.awaiting_raw_token


def test_without_reauthentication_a_handshake_is_illegal_and_harmless() -> None:
    """connections.max.reauth.ms=0 (no session lifetime): Kafka answers a SaslHandshake
    on an authenticated connection with ILLEGAL_SASL_STATE and keeps serving it."""
    session = SaslSession(settings(max_reauth_ms=0))
    assert plain_login(session).complete
    result = session.handshake("PLAIN")
    assert (result.error, result.mechanisms) == ("illegal", ())
    assert session.authenticated and not session.failed
    assert session.refusal(PRODUCE, "produce", now_ms=0) is None


def test_a_second_handshake_mid_exchange_is_answered_then_fails() -> None:
    session = SaslSession(settings())
    assert session.handshake("PLAIN").error is None
    assert session.refusal(SASL_HANDSHAKE, "sasl_handshake", now_ms=0) is None  # answered
    result = session.handshake("PLAIN")
    assert (result.error, result.mechanisms) == ("illegal", ())
    assert session.failed
