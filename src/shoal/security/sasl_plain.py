"""SASL/PLAIN (RFC 4616) on the server, as Kafka's PlainSaslServer checks it. Sans-I/O.

The token is `authzid NUL username NUL password`. Users and passwords come from the
listener's JAAS config (`user_<name>="<password>"` options of PlainLoginModule, see
sasl_jaas.py). Failure messages are Kafka's, and never contain the password.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass


class PlainFailure(Exception):
    """Authentication failed; the message is what the client is told (Kafka's words),
    `username` who tried (for the log; empty when unknown)."""

    def __init__(self, message: str, username: str = "") -> None:
        super().__init__(message)
        self.username = username


@dataclass(frozen=True, slots=True)
class PlainToken:
    authzid: str
    username: str
    password: str


def plain_token(username: str, password: str) -> bytes:
    """The client's PLAIN message (no authorization id)."""
    return b"\x00" + username.encode("utf-8") + b"\x00" + password.encode("utf-8")


def parse_plain(raw: bytes) -> PlainToken:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlainFailure("Invalid SASL/PLAIN response: not UTF-8") from exc
    tokens = text.split("\x00")
    if len(tokens) != 3:
        raise PlainFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    authzid, username, password = tokens
    if not username:
        raise PlainFailure("Authentication failed: username not specified")
    if not password:
        raise PlainFailure("Authentication failed: password not specified")
    if authzid and authzid != username:
        raise PlainFailure(
            "Authentication failed: Client requested an authorization id that is different "
            "from username"
        )
    return PlainToken(authzid, username, password)


def authenticate_plain(raw: bytes, users: Mapping[str, str]) -> str:
    """The authenticated user name, or PlainFailure."""
    token = parse_plain(raw)
    expected = users.get(token.username)
    # Compare even for an unknown user so timing does not tell which users exist.
    matches = hmac.compare_digest(
        (expected or "\x00unknown").encode("utf-8"), token.password.encode("utf-8")
    )
    if expected is None or not matches:
        raise PlainFailure("Authentication failed: Invalid username or password", token.username)
    return token.username
