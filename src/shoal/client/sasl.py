"""The client side of SASL, sans-I/O: SaslHandshake v1 then SaslAuthenticate rounds.

A driver runs it right after ApiVersions on every new connection when
`ClientSettings.security.uses_sasl`:

    exchange = SaslExchange(settings.security, versions=..., nonce=<fresh randomness>)
    request = exchange.start()
    while request is not None:
        request = exchange.step(<the response to request>)

Mechanisms: PLAIN, SCRAM-SHA-256/512 (the SCRAM core of security/scram.py, whose
server signature is checked) and OAUTHBEARER with a ready token
(`sasl_oauthbearer_token`). A refusal raises `SaslError` naming the broker's error
(SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ...) and message, as does a
broker that fails SCRAM's server check; the drivers let it through unwrapped (it is
not retried). Secrets are never part of an error message.
"""

from __future__ import annotations

from typing import Any

from shoal.client.errors import ClientError, ErrorCode, error_name
from shoal.client.security import ClientSecurity
from shoal.client.versions import BrokerVersions
from shoal.protocol.schema import request_schema
from shoal.security.oauth import client_message
from shoal.security.sasl_plain import plain_token
from shoal.security.scram import MECHANISMS, ScramClient, ScramError

SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY = 17, 36
SASL_AUTHENTICATE_VERSION_MAX = 2


class SaslError(ClientError):
    """Authentication failed: the broker refused it (its error name and message) or the
    client could not do it (settings, a server that did not prove it knows the SCRAM
    credential). Not retried: Kafka's clients treat an authentication failure as fatal."""


def _check(code: int, message: str | None, context: str) -> None:
    if code != ErrorCode.none:
        raise SaslError(f"{context}: {error_name(code)}: {message or ''}".rstrip(": "))


def new_nonce() -> str:
    """Fresh randomness for a SCRAM client nonce (the drivers call it: it is I/O)."""
    import secrets

    return secrets.token_urlsafe(24)


class SaslExchange:
    def __init__(self, security: ClientSecurity, *, versions: BrokerVersions, nonce: str) -> None:
        assert security.uses_sasl, security
        self.security = security
        self.mechanism = security.sasl_mechanism
        _low, high = versions.get(SASL_AUTHENTICATE_KEY, (0, -1))
        if high < 0:
            raise SaslError("the broker does not serve SaslAuthenticate")
        self._authenticate_version = min(high, SASL_AUTHENTICATE_VERSION_MAX)
        self._scram: ScramClient | None = None
        self._round = 0
        self._nonce = nonce
        self.session_lifetime_ms = 0

    def start(self) -> Any:
        return request_schema(SASL_HANDSHAKE_KEY, 1).make(
            "SaslHandshakeRequest", mechanism=self.mechanism
        )

    def step(self, response: Any) -> Any | None:
        """The next request to send, or None when authenticated."""
        context = f"SASL {self.mechanism}"
        if self._round == 0:
            _check(response.error_code, f"the broker serves {list(response.mechanisms)}", context)
            self._round = 1
            return self._authenticate(self._first_token())
        _check(response.error_code, response.error_message, context)
        lifetime = getattr(response, "session_lifetime", None)  # v1+
        self.session_lifetime_ms = 0 if lifetime is None else int(lifetime.total_seconds() * 1000)
        self._round += 1
        token = bytes(response.auth_bytes)
        if self._scram is not None:
            try:
                if self._round == 2:
                    return self._authenticate(self._scram.final(token))
                self._scram.verify(token)
            except ScramError as exc:
                raise SaslError(f"{context}: {exc}") from exc
            return None
        if self.mechanism == "OAUTHBEARER" and token:
            # RFC 7628: the server's error JSON; answer with %x01 to get the failure
            return self._authenticate(b"\x01")
        return None

    def _authenticate(self, token: bytes) -> Any:
        return request_schema(SASL_AUTHENTICATE_KEY, self._authenticate_version).make(
            "SaslAuthenticateRequest", auth_bytes=token
        )

    def _first_token(self) -> bytes:
        s = self.security
        if self.mechanism == "OAUTHBEARER":
            if not s.sasl_oauthbearer_token:
                raise SaslError("OAUTHBEARER needs a token (sasl_oauthbearer_token)")
            return client_message(s.sasl_oauthbearer_token)
        if s.sasl_username is None or s.sasl_password is None:
            raise SaslError(f"SASL {self.mechanism} needs a username and a password")
        if self.mechanism == "PLAIN":
            return plain_token(s.sasl_username, s.sasl_password)
        mechanism = MECHANISMS.get(self.mechanism)
        if mechanism is None:
            raise SaslError(f"unsupported SASL mechanism {self.mechanism}")
        self._scram = ScramClient(
            mechanism, username=s.sasl_username, password=s.sasl_password, nonce=self._nonce
        )
        return self._scram.first()


__all__ = ["ErrorCode", "SaslError", "SaslExchange"]
