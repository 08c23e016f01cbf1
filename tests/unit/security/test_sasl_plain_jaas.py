"""PLAIN tokens (Kafka's PlainSaslServer messages) and JAAS config parsing."""

from __future__ import annotations

import pytest

from shoal.security.sasl_jaas import JaasError, parse_jaas
from shoal.security.sasl_plain import PlainFailure, authenticate_plain, plain_token

USERS = {"alice": "alice-secret"}


def test_plain_accepts_the_right_password() -> None:
    assert authenticate_plain(plain_token("alice", "alice-secret"), USERS) == "alice"
    assert authenticate_plain(b"alice\x00alice\x00alice-secret", USERS) == "alice"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (plain_token("alice", "wrong"), "Authentication failed: Invalid username or password"),
        (plain_token("bob", "x"), "Authentication failed: Invalid username or password"),
        (b"\x00\x00pw", "Authentication failed: username not specified"),
        (b"\x00alice\x00", "Authentication failed: password not specified"),
        (b"alice\x00pw", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"bob\x00alice\x00alice-secret", "different from username"),
    ],
)
def test_plain_failures(token: bytes, message: str) -> None:
    with pytest.raises(PlainFailure, match=message) as caught:
        authenticate_plain(token, USERS)
    assert "alice-secret" not in str(caught.value)


def test_jaas_plain_login_module() -> None:
    module = parse_jaas(
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="a \\"quoted\\" secret";'
    )
    assert module.login_module.endswith("PlainLoginModule")
    assert module.flag == "required"
    assert module.users() == {"admin": "admin-secret", "alice": 'a "quoted" secret'}
    assert module.options["username"] == "admin"


@pytest.mark.parametrize(
    "text",
    [
        "Module required user_a=x",  # no ';'
        "Module mandatory user_a=x;",  # bad flag
        "Module required user_a;",  # not key=value
        "required;",
    ],
)
def test_jaas_errors(text: str) -> None:
    with pytest.raises(JaasError):
        parse_jaas(text)
