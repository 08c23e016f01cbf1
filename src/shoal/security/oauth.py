"""SASL/OAUTHBEARER (RFC 7628) tokens, validated as Kafka's validators do. Sans-I/O.

- The client's message: `n,,\\x01auth=Bearer <token>\\x01[key=value\\x01]*\\x01`
  (`parse_client_message`, `client_message`).
- `UnsecuredJwsValidator` (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, for
  development): a JWS with `alg: none` and no signature; `exp` required (seconds),
  the principal claim (`sub` by default) required, an optional required scope.
- `JwksValidator` (Kafka's JWKS-based validator with a `file:` endpoint): RS256 or ES256
  signature by a key of the JWK set (by `kid`), `exp`, the principal claim and, when
  configured, `aud` and `iss`.

A failed validation raises `TokenInvalid`; the server answers RFC 7628's error JSON
and fails the exchange. Times are milliseconds given by the caller (the one clock).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from shoal import limits

TOKEN_BYTES_MAX = limits.OAUTHBEARER_MESSAGE_BYTES_MAX


class TokenInvalid(Exception):
    """The token is not acceptable; the message says why (never the token)."""


@dataclass(frozen=True, slots=True)
class ValidToken:
    principal: str
    expires_ms: int
    scope: tuple[str, ...]


def client_message(token: str, extensions: Mapping[str, str] | None = None) -> bytes:
    extra = "".join(f"{k}={v}\x01" for k, v in (extensions or {}).items())
    return f"n,,\x01auth=Bearer {token}\x01{extra}\x01".encode()


def parse_client_message(raw: bytes) -> str:
    """The bearer token of a client's initial OAUTHBEARER message."""
    if len(raw) > TOKEN_BYTES_MAX:
        raise TokenInvalid(f"OAUTHBEARER message of {len(raw)} bytes (at most {TOKEN_BYTES_MAX})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenInvalid("OAUTHBEARER message is not UTF-8") from exc
    header, sep, rest = text.partition("\x01")
    if not sep or not header.startswith("n,") or not rest.endswith("\x01\x01"):
        raise TokenInvalid("Invalid OAUTHBEARER client first message")
    for pair in rest[:-2].split("\x01"):
        key, _, value = pair.partition("=")
        if key == "auth":
            scheme, _, token = value.partition(" ")
            if scheme.lower() != "bearer" or not token:
                raise TokenInvalid("Invalid OAUTHBEARER client first message")
            return token
    raise TokenInvalid("Invalid OAUTHBEARER client first message: no auth")


def _b64url(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except ValueError as exc:
        raise TokenInvalid("token part is not base64url") from exc


def _json_part(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64url(part))
    except ValueError as exc:
        raise TokenInvalid(f"token {what} is not JSON") from exc
    if not isinstance(value, dict):
        raise TokenInvalid(f"token {what} is not a JSON object")
    return value


def _split(token: str) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenInvalid("token is not a compact JWS (three dot-separated parts)")
    return _json_part(parts[0], "header"), _json_part(parts[1], "claims"), parts


def _scope(claims: Mapping[str, Any], claim: str) -> tuple[str, ...]:
    value = claims.get(claim)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TokenInvalid(f"scope claim {claim!r} is neither a string nor a list of strings")


def _check_common(
    claims: Mapping[str, Any], *, principal_claim: str, now_ms: int, skew_ms: int
) -> tuple[str, int]:
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise TokenInvalid("token has no numeric 'exp' claim")
    expires_ms = int(exp * 1000)
    if now_ms >= expires_ms + skew_ms:
        raise TokenInvalid(f"token expired at {expires_ms} ms (now {now_ms} ms)")
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise TokenInvalid(f"token has no principal claim {principal_claim!r}")
    iat = claims.get("iat")
    if isinstance(iat, int | float) and not isinstance(iat, bool) and iat * 1000 > now_ms + skew_ms:
        raise TokenInvalid("token issued in the future ('iat')")
    return principal, expires_ms


@dataclass(frozen=True, slots=True)
class UnsecuredJwsValidator:
    """Kafka's unsecured validator options (`unsecuredValidator*` JAAS options)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    def validate(self, token: str, *, now_ms: int) -> ValidToken:
        header, claims, parts = _split(token)
        if header.get("alg") != "none":
            raise TokenInvalid("unsecured token must have 'alg': 'none'")
        if parts[2]:
            raise TokenInvalid("unsecured token must have an empty signature")
        principal, expires_ms = _check_common(
            claims,
            principal_claim=self.principal_claim,
            now_ms=now_ms,
            skew_ms=self.allowable_clock_skew_ms,
        )
        scope = _scope(claims, self.scope_claim)
        missing = [s for s in self.required_scope if s not in scope]
        if missing:
            raise TokenInvalid(f"token lacks the required scope {missing}")
        return ValidToken(principal, expires_ms, scope)


PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


def _jwk_int(jwk: Mapping[str, Any], name: str) -> int:
    value = jwk.get(name)
    if not isinstance(value, str):
        raise TokenInvalid(f"JWK has no {name!r}")
    return int.from_bytes(_b64url(value), "big")


def load_jwks(document: str) -> dict[str, PublicKey]:
    """The RSA and P-256 keys of a JWK set (RFC 7517), by key id."""
    try:
        keys = json.loads(document)["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise TokenInvalid("JWKS document has no 'keys' array") from exc
    result: dict[str, PublicKey] = {}
    for jwk in keys:
        kid = str(jwk.get("kid", ""))
        if jwk.get("kty") == "RSA":
            numbers = rsa.RSAPublicNumbers(_jwk_int(jwk, "e"), _jwk_int(jwk, "n"))
            result[kid] = numbers.public_key()
        elif jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
            point = ec.EllipticCurvePublicNumbers(
                _jwk_int(jwk, "x"), _jwk_int(jwk, "y"), ec.SECP256R1()
            )
            result[kid] = point.public_key()
    return result


@dataclass(frozen=True, slots=True)
class JwksValidator:
    """Kafka's JWT validator against a JWK set (`sasl.oauthbearer.*` broker keys)."""

    keys: Mapping[str, PublicKey]
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    allowable_clock_skew_ms: int = 30_000

    def validate(self, token: str, *, now_ms: int) -> ValidToken:
        header, claims, parts = _split(token)
        key = self.keys.get(str(header.get("kid", "")))
        if key is None:
            raise TokenInvalid("no key in the JWK set matches the token's 'kid'")
        signed = f"{parts[0]}.{parts[1]}".encode("ascii")
        signature = _b64url(parts[2])
        alg = header.get("alg")
        try:
            if alg == "RS256" and isinstance(key, rsa.RSAPublicKey):
                key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
            elif alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey):
                if len(signature) != 64:
                    raise TokenInvalid("ES256 signature must be 64 bytes")
                der = encode_dss_signature(
                    int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
                )
                key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
            else:
                raise TokenInvalid(f"unsupported token algorithm {alg!r} for its key")
        except InvalidSignature as exc:
            raise TokenInvalid("token signature is invalid") from exc
        principal, expires_ms = _check_common(
            claims,
            principal_claim=self.principal_claim,
            now_ms=now_ms,
            skew_ms=self.allowable_clock_skew_ms,
        )
        if self.expected_issuer is not None and claims.get("iss") != self.expected_issuer:
            raise TokenInvalid("token issuer ('iss') is not the expected one")
        if self.expected_audience:
            aud = claims.get("aud")
            audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if not any(a in self.expected_audience for a in audiences):
                raise TokenInvalid("token audience ('aud') is not an expected one")
        return ValidToken(principal, expires_ms, _scope(claims, self.scope_claim))


def unsecured_token(principal: str, *, issued_ms: int, lifetime_ms: int, scope: str = "") -> str:
    """A development token as librdkafka's `sasl.oauthbearer.config=principal=...` makes."""

    def part(value: Mapping[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode("utf-8")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    claims: dict[str, Any] = {
        "sub": principal,
        "iat": issued_ms / 1000,
        "exp": (issued_ms + lifetime_ms) / 1000,
    }
    if scope:
        claims["scope"] = scope
    return f"{part({'alg': 'none'})}.{part(claims)}."
