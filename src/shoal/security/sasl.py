"""The SASL authentication state of one connection (Kafka's SaslServerAuthenticator
and KIP-368 re-authentication), as a sans-I/O core.

Theory of operation. A connection on a SASL listener starts in HANDSHAKE: only
ApiVersions and SaslHandshake (v1) may arrive; anything else closes the connection
("Unexpected Kafka request of type X during SASL handshake", Kafka's
IllegalSaslStateException). A handshake naming an enabled mechanism moves to
AUTHENTICATE, where only SaslAuthenticate may arrive; the mechanism's exchange runs
over one or more SaslAuthenticate round trips. Success sets the principal and moves to
AUTHENTICATED; a failure moves to FAILED: the shell sends the failure response (delayed
by `connection.failed.authentication.delay.ms`) and closes the connection.

KIP-368: with `connections.max.reauth.ms` > 0 a session expires that long after it
was authenticated (sooner for an OAUTHBEARER token that expires sooner), and
SaslAuthenticate v1+ tells the client the lifetime. An authenticated connection may
start a re-authentication with SaslHandshake at any time (same mechanism, same
principal); once its session has expired, any request other than that handshake
closes the connection. Without a session lifetime there is no re-authentication, as
in Kafka (whose KafkaApis then answers): a SaslHandshake on an authenticated
connection gets ILLEGAL_SASL_STATE without mechanisms and the connection stays.

A SaslHandshake in the middle of an exchange gets ILLEGAL_SASL_STATE, then the
connection closes (Kafka answers any request there with its error response before
closing; Shoal answers only SaslHandshake and closes on the others unanswered).

SaslHandshake v0 (Kafka serves v0-v1): the exchange that follows is raw SASL tokens,
each a size-prefixed frame without a request header, answered by a size-prefixed
challenge without a response header (`raw_tokens`; the shell reads frames as tokens
while it is set). A failure there has no way to say so: the connection just closes,
as Kafka's does. v1 is followed by SaslAuthenticate requests.

The enabled mechanisms are listed in the order Kafka lists them: its
SaslServerAuthenticator copies `sasl.enabled.mechanisms` through a java.util.HashSet,
so clients see the set's iteration order (`kafka_mechanism_order`), not the config's.

    state          allowed requests                         next
    HANDSHAKE      ApiVersions, SaslHandshake               AUTHENTICATE | FAILED
    AUTHENTICATE   SaslAuthenticate                         AUTHENTICATE | AUTHENTICATED | FAILED
    AUTHENTICATED  anything (SaslHandshake: re-auth, when   REAUTHENTICATE | FAILED
                   the session has a lifetime)
                   expired: SaslHandshake only
    REAUTHENTICATE SaslAuthenticate                         AUTHENTICATED | FAILED
    FAILED         nothing (the connection closes)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

from shoal.security.acl import KafkaPrincipal
from shoal.security.oauth import TokenInvalid, ValidToken, parse_client_message
from shoal.security.sasl_plain import PlainFailure, authenticate_plain
from shoal.security.scram import (
    MECHANISMS,
    ScramCredential,
    ScramError,
    ScramServer,
    parse_client_first,
)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


@cache
def kafka_mechanism_order(mechanisms: tuple[str, ...]) -> tuple[str, ...]:
    """`mechanisms` without duplicates, in the iteration order of the java.util.HashSet
    Kafka's SaslServerAuthenticator builds from them (`new HashSet<>(list)`: a table of
    at least 16 buckets, a name's bucket from String.hashCode spread as HashMap.hash
    does, insertion order within a bucket)."""
    unique = tuple(dict.fromkeys(mechanisms))
    capacity = 16
    while capacity < int(len(unique) / 0.75) + 1:
        capacity *= 2
    buckets: dict[int, list[str]] = {}
    for name in unique:
        h = _java_string_hash(name)
        buckets.setdefault((h ^ (h >> 16)) & (capacity - 1), []).append(name)
    return tuple(name for bucket in sorted(buckets) for name in buckets[bucket])


def _java_string_hash(text: str) -> int:
    """java.lang.String.hashCode as an unsigned 32-bit value (over UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"
    REAUTHENTICATE = "reauthenticate"
    FAILED = "failed"


class TokenValidator(Protocol):
    def validate(self, token: str, *, now_ms: int) -> ValidToken: ...


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """What one SASL listener accepts (built by the server from its config)."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    scram_credential: Callable[[str, str], ScramCredential | None] = lambda _m, _u: None
    """(mechanism, user) -> the stored credential, or None."""
    token_validator: TokenValidator | None = None
    max_reauth_ms: int = 0
    server_nonce: Callable[[], str] = lambda: ""
    """Fresh randomness for SCRAM's server nonce (injected: the core does no I/O)."""


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    error: str | None
    """None, or 'unsupported' (UNSUPPORTED_SASL_MECHANISM) or 'illegal' (ILLEGAL_SASL_STATE)."""
    mechanisms: tuple[str, ...]
    message: str = ""


@dataclass(frozen=True, slots=True)
class AuthResult:
    auth_bytes: bytes = b""
    failure: str | None = None
    """Kafka's SASL_AUTHENTICATION_FAILED message, or None."""
    complete: bool = False
    session_lifetime_ms: int = 0
    log_detail: str = ""
    """Why it failed, for the broker's log only (never a secret)."""
    user: str = ""
    """Who tried (for the log), when known."""
    illegal: bool = False
    """SaslAuthenticate outside an exchange: ILLEGAL_SASL_STATE."""


class AuthFailed(Exception):
    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


class _Exchange:
    """One mechanism's server side: `step(token, now_ms)` -> (challenge, done)."""

    principal: str | None = None
    expires_ms: int | None = None

    def step(self, token: bytes, now_ms: int) -> tuple[bytes, bool]:
        raise NotImplementedError


class _PlainExchange(_Exchange):
    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users

    def step(self, token: bytes, now_ms: int) -> tuple[bytes, bool]:
        try:
            self.principal = authenticate_plain(token, self._users)
        except PlainFailure as exc:
            self.principal = exc.username or None
            raise AuthFailed(str(exc)) from exc
        return b"", True


class _ScramExchange(_Exchange):
    def __init__(self, mechanism: str, settings: SaslSettings) -> None:
        self._mechanism = mechanism
        self._server = ScramServer(MECHANISMS[mechanism])
        self._settings = settings
        self._round = 0

    def step(self, token: bytes, now_ms: int) -> tuple[bytes, bool]:
        self._round += 1
        try:
            if self._round == 1:
                first = parse_client_first(token)
                self.principal = first.username
                credential = self._settings.scram_credential(self._mechanism, first.username)
                return self._server.first(first, credential, self._settings.server_nonce()), False
            if self._round == 2:
                return self._server.final(token), True
        except ScramError as exc:
            raise AuthFailed(
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self._mechanism}",
                str(exc),
            ) from exc
        raise AuthFailed("Unexpected SASL request after the SCRAM exchange completed")


class _OAuthExchange(_Exchange):
    """RFC 7628: an invalid token gets the error JSON as a challenge; the client's
    `\\x01` reply then fails the exchange."""

    def __init__(self, validator: TokenValidator | None) -> None:
        self._validator = validator
        self._error: str | None = None

    def step(self, token: bytes, now_ms: int) -> tuple[bytes, bool]:
        if self._error is not None:
            raise AuthFailed(self._error)
        try:
            if self._validator is None:
                raise TokenInvalid("no OAUTHBEARER validator is configured")
            valid = self._validator.validate(parse_client_message(token), now_ms=now_ms)
        except TokenInvalid as exc:
            self._error = '{"status":"invalid_token"}'
            self.detail = str(exc)
            return self._error.encode(), False
        self.principal = valid.principal
        self.expires_ms = valid.expires_ms
        return b"", True

    detail = ""


class SaslSession:
    """The SASL state of one connection; the shell asks `refusal` before each
    request and calls `handshake` / `authenticate` from the two handlers."""

    def __init__(self, settings: SaslSettings) -> None:
        self.settings = settings
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self.session_expires_ms: int | None = None
        self.raw_tokens = False
        """A SaslHandshake v0 began the exchange in hand: its tokens come as bare frames."""
        self._exchange: _Exchange | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED

    @property
    def failed(self) -> bool:
        """The exchange failed: the shell closes the connection after its answer."""
        return self.state is SaslState.FAILED

    def refusal(self, api_key: int, api_name: str | None, *, now_ms: int) -> str | None:
        """Why a request of `api_key` may not be served now (close the connection), or None."""
        state = self.state
        if state is SaslState.FAILED:
            return "SASL authentication failed"
        if state is SaslState.HANDSHAKE and api_key not in (API_VERSIONS, SASL_HANDSHAKE):
            return f"Unexpected Kafka request of type {api_name} during SASL handshake."
        if state in (SaslState.AUTHENTICATE, SaslState.REAUTHENTICATE) and api_key not in (
            SASL_AUTHENTICATE,
            SASL_HANDSHAKE,  # answered ILLEGAL_SASL_STATE by `handshake`, then closed
        ):
            return f"Unexpected Kafka request of type {api_name} during SASL authentication."
        if (
            state is SaslState.AUTHENTICATED
            and api_key != SASL_HANDSHAKE
            and self.session_expires_ms is not None
            and now_ms >= self.session_expires_ms
        ):
            return "the SASL session expired and the client did not re-authenticate"
        return None

    @property
    def awaiting_raw_token(self) -> bool:
        """The next frame is a bare SASL token (after SaslHandshake v0), not a request."""
        return self.raw_tokens and self.state in (
            SaslState.AUTHENTICATE,
            SaslState.REAUTHENTICATE,
        )

    def handshake(self, mechanism: str, *, raw_tokens: bool = False) -> HandshakeResult:
        """SaslHandshake naming `mechanism`; `raw_tokens` for v0 (module docstring)."""
        enabled = kafka_mechanism_order(self.settings.enabled_mechanisms)
        if self.state is SaslState.AUTHENTICATED:
            if self.session_expires_ms is None:  # connections.max.reauth.ms is 0
                return HandshakeResult(
                    "illegal", (), "SaslHandshake on an authenticated connection"
                )
            if mechanism != self.mechanism:
                self.state = SaslState.FAILED
                return HandshakeResult(
                    "unsupported",
                    enabled,
                    f"SASL mechanism '{mechanism}' requested by client is not supported for "
                    f"re-authentication of mechanism '{self.mechanism}'",
                )
            self.state = SaslState.REAUTHENTICATE
        elif self.state is SaslState.HANDSHAKE:
            if mechanism not in enabled or mechanism not in SUPPORTED_MECHANISMS:
                self.state = SaslState.FAILED
                return HandshakeResult(
                    "unsupported", enabled, f"Unsupported SASL mechanism {mechanism}"
                )
            self.mechanism = mechanism
            self.state = SaslState.AUTHENTICATE
        else:
            self.state = SaslState.FAILED
            return HandshakeResult("illegal", (), "Unexpected SaslHandshake request")
        self._exchange = self._new_exchange(mechanism)
        self.raw_tokens = raw_tokens
        return HandshakeResult(None, enabled)

    def _new_exchange(self, mechanism: str) -> _Exchange:
        if mechanism == "PLAIN":
            return _PlainExchange(self.settings.plain_users)
        if mechanism == "OAUTHBEARER":
            return _OAuthExchange(self.settings.token_validator)
        return _ScramExchange(mechanism, self.settings)

    def authenticate(self, token: bytes, *, now_ms: int) -> AuthResult:
        """One SaslAuthenticate round (refusal() has checked the state)."""
        exchange = self._exchange
        if exchange is None or self.state not in (
            SaslState.AUTHENTICATE,
            SaslState.REAUTHENTICATE,
        ):
            return AuthResult(
                failure="SaslAuthenticate request received after successful authentication",
                illegal=True,
            )
        try:
            challenge, done = exchange.step(token, now_ms)
        except AuthFailed as exc:
            self.state = SaslState.FAILED
            detail = getattr(exchange, "detail", "") or exc.detail
            return AuthResult(failure=str(exc), log_detail=detail, user=exchange.principal or "")
        if not done:
            return AuthResult(auth_bytes=challenge)
        assert exchange.principal is not None
        principal = KafkaPrincipal("User", exchange.principal)
        if self.state is SaslState.REAUTHENTICATE and principal != self.principal:
            self.state = SaslState.FAILED
            return AuthResult(
                failure=(
                    f"Cannot change principals during re-authentication from {self.principal}: "
                    f"{principal}"
                ),
                log_detail="principal changed on re-authentication",
                user=principal.name,
            )
        self.principal = principal
        self.state = SaslState.AUTHENTICATED
        self.raw_tokens = False
        self._exchange = None
        lifetime_ms = self._session_lifetime_ms(exchange, now_ms)
        self.session_expires_ms = now_ms + lifetime_ms if lifetime_ms > 0 else None
        return AuthResult(
            auth_bytes=challenge,
            complete=True,
            session_lifetime_ms=lifetime_ms,
            user=principal.name,
        )

    def _session_lifetime_ms(self, exchange: _Exchange, now_ms: int) -> int:
        max_reauth_ms = self.settings.max_reauth_ms
        if max_reauth_ms <= 0:
            return 0
        if exchange.expires_ms is not None:
            return max(1, min(max_reauth_ms, exchange.expires_ms - now_ms))
        return max_reauth_ms
