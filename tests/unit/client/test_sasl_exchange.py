"""The client's SASL exchange (client/sasl.py) wired to the server's session
(security/sasl.py) in memory, through kio messages as the drivers carry them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.sasl import SaslError, SaslExchange
from shoal.client.security import ClientSecurity
from shoal.protocol.schema import response_schema
from shoal.security.oauth import UnsecuredJwsValidator, unsecured_token
from shoal.security.sasl import SaslSession, SaslSettings
from shoal.security.scram import SCRAM_SHA_512, credential_from_salted, salted_password

SALT = b"0123456789abcdef"
CAROL = credential_from_salted(
    SCRAM_SHA_512, salted_password(SCRAM_SHA_512, "carol-pw", SALT, 4096), SALT, 4096
)
VERSIONS = {17: (1, 1), 36: (0, 2)}


def server() -> SaslSession:
    return SaslSession(
        SaslSettings(
            enabled_mechanisms=("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"),
            plain_users={"alice": "alice-pw"},
            scram_credential=lambda m, u: CAROL if u == "carol" else None,
            token_validator=UnsecuredJwsValidator(),
            max_reauth_ms=60_000,
            server_nonce=lambda: "snonce",
        )
    )


def answer(session: SaslSession, request: Any) -> Any:
    """What the two handlers answer, minus the I/O."""
    if int(request.__api_key__) == 17:
        result = session.handshake(str(request.mechanism))
        code = ErrorCode.none if result.error is None else ErrorCode.unsupported_sasl_mechanism
        return response_schema(17, 1).response(error_code=code, mechanisms=result.mechanisms)
    result = session.authenticate(bytes(request.auth_bytes), now_ms=1_000)
    failed = result.failure is not None
    return response_schema(36, int(request.__version__)).response(
        error_code=ErrorCode.sasl_authentication_failed if failed else ErrorCode.none,
        error_message=result.failure,
        auth_bytes=result.auth_bytes,
        session_lifetime=datetime.timedelta(milliseconds=result.session_lifetime_ms),
    )


def run(security: ClientSecurity) -> tuple[SaslSession, SaslExchange]:
    session = server()
    exchange = SaslExchange(security, versions=VERSIONS, nonce="cnonce")
    request = exchange.start()
    rounds = 0
    while request is not None:
        rounds += 1
        assert rounds < 5
        request = exchange.step(answer(session, request))
    return session, exchange


def sasl(mechanism: str, **kw: Any) -> ClientSecurity:
    return ClientSecurity(security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, **kw)


def test_plain_scram_and_oauthbearer_authenticate() -> None:
    session, exchange = run(sasl("PLAIN", sasl_username="alice", sasl_password="alice-pw"))
    assert str(session.principal) == "User:alice" and exchange.session_lifetime_ms == 60_000
    session, _ = run(sasl("SCRAM-SHA-512", sasl_username="carol", sasl_password="carol-pw"))
    assert str(session.principal) == "User:carol"
    token = unsecured_token("dave", issued_ms=0, lifetime_ms=30_000)
    session, exchange = run(sasl("OAUTHBEARER", sasl_oauthbearer_token=token))
    assert str(session.principal) == "User:dave" and exchange.session_lifetime_ms == 29_000


@pytest.mark.parametrize(
    ("security", "message"),
    [
        (
            sasl("PLAIN", sasl_username="alice", sasl_password="nope"),
            "SASL PLAIN: SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username "
            "or password",
        ),
        (
            sasl("SCRAM-SHA-512", sasl_username="carol", sasl_password="nope"),
            "invalid credentials with SASL mechanism SCRAM-SHA-512",
        ),
        (
            sasl(
                "OAUTHBEARER",
                sasl_oauthbearer_token=unsecured_token("x", issued_ms=0, lifetime_ms=1),
            ),
            'SASL_AUTHENTICATION_FAILED: {"status":"invalid_token"}',
        ),
        (sasl("SCRAM-SHA-256", sasl_username="u", sasl_password="p"), "UNSUPPORTED_SASL_MECHANISM"),
        (sasl("PLAIN"), "needs a username and a password"),
    ],
)
def test_refusals_are_sasl_errors_without_secrets(security: ClientSecurity, message: str) -> None:
    with pytest.raises(SaslError) as caught:
        run(security)
    assert message in str(caught.value)
    assert "nope" not in str(caught.value)
