"""The shell around the SASL core (security/sasl.py): per-listener settings from the
config, the per-connection session, and the gate `_dispatch` asks before each request.

A connection whose security protocol is SASL_PLAINTEXT or SASL_SSL gets a
`SaslSession` on its first request. The settings of a listener are built from the live
config (cached until the config object changes): the enabled mechanisms, PLAIN's users
from `listener.name.<listener>.plain.sasl.jaas.config` (Kafka's PlainLoginModule
`user_<name>="<password>"` options), SCRAM credentials from the store, the OAUTHBEARER
validator (the JWK set of `sasl.oauthbearer.jwks.endpoint.url`, read here, or the
unsecured validator with the `unsecuredValidator*` options of the listener's
`oauthbearer.sasl.jaas.config`), `connections.max.reauth.ms`, and fresh SCRAM nonces.

`authenticate` runs one round of the exchange for both ways a token arrives: a
SaslAuthenticate request (handlers/sasl_authenticate.py) and, after SaslHandshake v0,
a bare token frame (`raw_token`, called by the connection loop): it logs the outcome
(never a secret), sets the connection's principal on success and waits
`connection.failed.authentication.delay.ms` before a failure is answered.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import struct
from pathlib import Path
from urllib.parse import unquote, urlparse

from shoal.config import BrokerConfig, broker_keys
from shoal.security.oauth import JwksValidator, TokenInvalid, UnsecuredJwsValidator, load_jwks
from shoal.security.sasl import AuthResult, SaslSession, SaslSettings, TokenValidator
from shoal.security.sasl_jaas import JaasError, JaasModule, parse_jaas
from shoal.server.connection_info import ConnectionInfo
from shoal.server.metadata.scram_store import ScramStore

log = logging.getLogger(__name__)
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


def frame_bytes_max(config: BrokerConfig, info: ConnectionInfo) -> int:
    """The largest request frame `info` may send now: `sasl.server.max.receive.size`
    on a SASL listener until it is authenticated, else `socket.request.max.bytes`."""
    request_max = config.get(broker_keys.SOCKET_REQUEST_MAX_BYTES)
    if info.security_protocol in SASL_PROTOCOLS and not (info.sasl and info.sasl.authenticated):
        return min(request_max, config.get(broker_keys.SASL_SERVER_MAX_RECEIVE_SIZE))
    return request_max


async def authenticate(
    config: BrokerConfig, info: ConnectionInfo, session: SaslSession, token: bytes, now_ms: int
) -> AuthResult:
    """One round of `session`'s exchange with `token` (see the module docstring)."""
    result = session.authenticate(token, now_ms=now_ms)
    if result.illegal:
        return result
    if result.failure is not None:
        log.warning(
            "SASL authentication failed (mechanism %s, user %r, connection %d from %s:%d): %s",
            session.mechanism,
            result.user,
            info.connection_id,
            info.peer_host,
            info.peer_port,
            result.log_detail,
        )
        delay_ms = config.get(broker_keys.CONNECTION_FAILED_AUTHENTICATION_DELAY_MS)
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        return result
    if result.complete:
        assert session.principal is not None
        info.principal = session.principal
        log.info(
            "SASL authenticated %s (mechanism %s, connection %d from %s:%d, session %d ms)",
            session.principal,
            session.mechanism,
            info.connection_id,
            info.peer_host,
            info.peer_port,
            result.session_lifetime_ms,
        )
    return result


async def raw_token(
    config: BrokerConfig, info: ConnectionInfo, session: SaslSession, token: bytes, now_ms: int
) -> bytes:
    """The answer to a bare token frame after SaslHandshake v0: the challenge, size
    prefixed and without a header. A failure has no answer: `session.failed` is set
    and the connection closes (as Kafka's SaslServerAuthenticator does without
    SaslAuthenticate headers)."""
    result = await authenticate(config, info, session, token, now_ms)
    if result.failure is not None:
        return b""
    return struct.pack(">i", len(result.auth_bytes)) + result.auth_bytes


def awaiting_raw_token(info: ConnectionInfo) -> bool:
    """The connection's next frame is a bare SASL token (after SaslHandshake v0)."""
    return info.sasl is not None and info.sasl.awaiting_raw_token


class SaslService:
    def __init__(self, scram: ScramStore) -> None:
        self.scram = scram
        self._cache: dict[str, tuple[BrokerConfig, SaslSettings]] = {}

    def session(self, config: BrokerConfig, info: ConnectionInfo) -> SaslSession | None:
        """The connection's SASL session (made on first use), None on non-SASL listeners."""
        if info.security_protocol not in SASL_PROTOCOLS:
            return None
        if info.sasl is None:
            info.sasl = SaslSession(self.settings(config, info.listener_name))
        return info.sasl

    def refusal(
        self,
        config: BrokerConfig,
        info: ConnectionInfo,
        api_key: int,
        api_name: str | None,
        now_ms: int,
    ) -> str | None:
        """Why `info` may not send a request of `api_key` now (close it), or None."""
        session = self.session(config, info)
        if session is None:
            return None
        return session.refusal(api_key, api_name, now_ms=now_ms)

    def settings(self, config: BrokerConfig, listener: str) -> SaslSettings:
        cached = self._cache.get(listener)
        if cached is not None and cached[0] is config:
            return cached[1]
        settings = SaslSettings(
            enabled_mechanisms=tuple(
                config.listener_value(listener, broker_keys.SASL_ENABLED_MECHANISMS)
            ),
            plain_users=_jaas(config, listener, "plain").users()
            if _has_jaas(config, listener, "plain")
            else {},
            scram_credential=self.scram.credential,
            token_validator=_token_validator(config, listener),
            max_reauth_ms=config.listener_value(listener, broker_keys.CONNECTIONS_MAX_REAUTH_MS),
            server_nonce=lambda: secrets.token_urlsafe(24),
        )
        self._cache[listener] = (config, settings)
        return settings


def _has_jaas(config: BrokerConfig, listener: str, mechanism: str) -> bool:
    return config.listener_jaas_config(listener, mechanism) is not None


def _jaas(config: BrokerConfig, listener: str, mechanism: str) -> JaasModule:
    text = config.listener_jaas_config(listener, mechanism)
    try:
        return parse_jaas(str(text))
    except JaasError as exc:
        log.error("listener %s: invalid %s.sasl.jaas.config: %s", listener, mechanism, exc)
        return JaasModule("invalid", "required")


def _token_validator(config: BrokerConfig, listener: str) -> TokenValidator:
    url = config.listener_value(listener, broker_keys.SASL_OAUTHBEARER_JWKS_ENDPOINT_URL)
    if url is None:
        options = (
            _jaas(config, listener, "oauthbearer").options
            if _has_jaas(config, listener, "oauthbearer")
            else {}
        )
        return UnsecuredJwsValidator(
            principal_claim=options.get("unsecuredValidatorPrincipalClaimName", "sub"),
            scope_claim=options.get("unsecuredValidatorScopeClaimName", "scope"),
            required_scope=tuple(options.get("unsecuredValidatorRequiredScope", "").split()),
            allowable_clock_skew_ms=int(options.get("unsecuredValidatorAllowableClockSkewMs", 0)),
        )
    path = Path(unquote(urlparse(url).path))
    try:
        keys = load_jwks(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TokenInvalid) as exc:
        log.error("listener %s: cannot read the JWK set %s: %s", listener, path, exc)
        keys = {}
    return JwksValidator(
        keys=keys,
        expected_audience=tuple(
            config.listener_value(listener, broker_keys.SASL_OAUTHBEARER_EXPECTED_AUDIENCE)
        ),
        expected_issuer=config.listener_value(
            listener, broker_keys.SASL_OAUTHBEARER_EXPECTED_ISSUER
        ),
        principal_claim=config.listener_value(
            listener, broker_keys.SASL_OAUTHBEARER_SUB_CLAIM_NAME
        ),
        scope_claim=config.listener_value(listener, broker_keys.SASL_OAUTHBEARER_SCOPE_CLAIM_NAME),
        allowable_clock_skew_ms=1000
        * config.listener_value(listener, broker_keys.SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS),
    )
