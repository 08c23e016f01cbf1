"""SASL/OAUTHBEARER (RFC 7628) tokens, validated as Kafka's validators do. Sans-I/O.

- The client's message: `n,,\\x01auth=Bearer <token>\\x01[key=value\\x01]*\\x01`
  (`parse_client_message`, `client_message`).
- `UnsecuredJwsValidator` (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, for
  development): a JWS with `alg: none` and no signature; `exp` required (seconds),
  the principal claim (`sub` by default) required, an optional required scope.
- `JwksValidator` (Kafka's JWKS-based validator with a `file:` endpoint): a signature
  by a key of the JWK set (by `kid`; RS*, PS*, ES* or EdDSA, as the key allows), `exp`,
  the principal claim and, when configured, `aud` and `iss`.

A failed validation raises `TokenInvalid`; the server answers RFC 7628's error JSON
and fails the exchange. Times are milliseconds given by the caller (the one clock).

The JWS and JWK mechanics (compact serialization, JWK parsing, signature verification,
`aud` and `iss`) are PyJWT's, a well-kept library on top of `cryptography`; what stays
here is Kafka's part: which claims are required and how, the time checks against the
caller's clock (PyJWT's would read the wall clock), the principal and scope claims,
the unsecured validator's rules, and the refusals worded for the broker's log.
PyJWT (with `cryptography`, a tenth of the broker's imports) is imported on first use,
not at start-up (docs/performance/startup.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from shoal import limits

if TYPE_CHECKING:
    from jwt import PyJWK

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


def _unverified(token: str) -> tuple[dict[str, Any], str]:
    """A compact JWS's header and its signature part, unverified (PyJWT's parsing)."""
    import jwt  # on first use (module docstring)

    if token.count(".") != 2:
        raise TokenInvalid("token is not a compact JWS (three dot-separated parts)")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise TokenInvalid(f"token header is invalid: {exc}") from exc
    return header, token.rsplit(".", 1)[1]


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
    nbf = claims.get("nbf")
    if isinstance(nbf, int | float) and not isinstance(nbf, bool) and nbf * 1000 > now_ms + skew_ms:
        raise TokenInvalid("token not valid yet ('nbf')")
    return principal, expires_ms


@dataclass(frozen=True, slots=True)
class UnsecuredJwsValidator:
    """Kafka's unsecured validator options (`unsecuredValidator*` JAAS options)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    def validate(self, token: str, *, now_ms: int) -> ValidToken:
        header, signature = _unverified(token)
        if header.get("alg") != "none":
            raise TokenInvalid("unsecured token must have 'alg': 'none'")
        if signature:
            raise TokenInvalid("unsecured token must have an empty signature")
        claims = _claims(token, None, algorithms=None, options=_UNVERIFIED)
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


_RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
VERIFYING_ALGORITHMS = frozenset({*_RSA_ALGORITHMS, "ES256", "ES384", "ES512", "EdDSA"})
"""The JWS algorithms a key of the JWK set may verify: Kafka's validator takes any but
`none` (jose4j's DISALLOW_NONE); symmetric (HS*) ones would need a shared secret in
the JWK set, which Shoal does not take."""

_CLOCK_FREE: dict[str, Any] = {
    "verify_exp": False,
    "verify_iat": False,
    "verify_nbf": False,
    "verify_sub": False,
    "verify_jti": False,
}
"""PyJWT's time checks read the wall clock; Shoal checks `exp`, `iat` and `nbf` against
the caller's clock (`_check_common`), and the principal claim as configured."""
_UNVERIFIED: dict[str, Any] = {
    **_CLOCK_FREE,
    "verify_signature": False,
    "verify_aud": False,
    "verify_iss": False,
}


@dataclass(frozen=True, slots=True)
class VerificationKey:
    """A key of the JWK set with the JWS algorithms it verifies: its JWK's `alg`, else
    those of its kind (an RSA key: RS* and PS*; an EC key: its curve's ES*)."""

    jwk: PyJWK
    algorithms: tuple[str, ...]


def load_jwks(document: str) -> dict[str, VerificationKey]:
    """The signature keys of a JWK set (RFC 7517) by key id, parsed by PyJWT (RSA, EC
    P-256/384/521 and Ed25519 keys). Encryption keys (`use` other than `sig`) and keys
    PyJWT cannot read are left out, as Kafka's key resolver passes over them."""
    import jwt  # on first use (module docstring)

    try:
        keys = json.loads(document)["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise TokenInvalid("JWKS document has no 'keys' array") from exc
    if not isinstance(keys, list):
        raise TokenInvalid("JWKS document has no 'keys' array")
    result: dict[str, VerificationKey] = {}
    for data in keys:
        if not isinstance(data, dict) or data.get("use", "sig") != "sig":
            continue
        try:
            jwk = jwt.PyJWK(data)
        except (jwt.PyJWTError, ValueError, TypeError):
            continue
        algorithms = (
            _RSA_ALGORITHMS
            if data.get("kty") == "RSA" and "alg" not in data
            else (jwk.algorithm_name,)
        )
        if set(algorithms) <= VERIFYING_ALGORITHMS:
            result[str(data.get("kid", ""))] = VerificationKey(jwk, algorithms)
    return result


def _claims(
    token: str,
    key: Any,
    *,
    algorithms: tuple[str, ...] | None,
    options: dict[str, Any],
    audience: tuple[str, ...] = (),
    issuer: str | None = None,
) -> dict[str, Any]:
    """The token's claims, its signature (unless `options` say not) and its `aud` and
    `iss` checked by PyJWT; TokenInvalid in Shoal's words."""
    import jwt  # on first use (module docstring)

    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(algorithms) if algorithms is not None else None,
            audience=list(audience) or None,
            issuer=issuer,
            options=cast("Any", options),  # PyJWT types it as its own TypedDict
        )
    except jwt.InvalidSignatureError as exc:
        raise TokenInvalid("token signature is invalid") from exc
    except jwt.InvalidAlgorithmError as exc:
        raise TokenInvalid(f"unsupported token algorithm for its key: {exc}") from exc
    except jwt.InvalidAudienceError as exc:
        raise TokenInvalid("token audience ('aud') is not an expected one") from exc
    except jwt.InvalidIssuerError as exc:
        raise TokenInvalid("token issuer ('iss') is not the expected one") from exc
    except jwt.MissingRequiredClaimError as exc:
        what = {"aud": "audience ('aud')", "iss": "issuer ('iss')"}.get(exc.claim, exc.claim)
        raise TokenInvalid(f"token has no {what} claim") from exc
    except jwt.PyJWTError as exc:
        raise TokenInvalid(f"token is invalid: {exc}") from exc
    return claims


@dataclass(frozen=True, slots=True)
class JwksValidator:
    """Kafka's JWT validator against a JWK set (`sasl.oauthbearer.*` broker keys)."""

    keys: Mapping[str, VerificationKey]
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    allowable_clock_skew_ms: int = 30_000

    def validate(self, token: str, *, now_ms: int) -> ValidToken:
        header, _ = _unverified(token)
        key = self.keys.get(str(header.get("kid", "")))
        if key is None:
            raise TokenInvalid("no key in the JWK set matches the token's 'kid'")
        claims = _claims(
            token,
            key.jwk.key,
            algorithms=key.algorithms,
            options={
                **_CLOCK_FREE,
                "verify_aud": bool(self.expected_audience),
                "verify_iss": self.expected_issuer is not None,
            },
            audience=self.expected_audience,
            issuer=self.expected_issuer,
        )
        principal, expires_ms = _check_common(
            claims,
            principal_claim=self.principal_claim,
            now_ms=now_ms,
            skew_ms=self.allowable_clock_skew_ms,
        )
        return ValidToken(principal, expires_ms, _scope(claims, self.scope_claim))


def unsecured_token(principal: str, *, issued_ms: int, lifetime_ms: int, scope: str = "") -> str:
    """A development token as librdkafka's `sasl.oauthbearer.config=principal=...` makes
    (header `{"alg":"none"}`, no signature)."""
    import jwt  # on first use (module docstring)

    claims: dict[str, Any] = {
        "sub": principal,
        "iat": issued_ms / 1000,
        "exp": (issued_ms + lifetime_ms) / 1000,
    }
    if scope:
        claims["scope"] = scope
    return jwt.encode(claims, "", algorithm="none", headers={"typ": None})
