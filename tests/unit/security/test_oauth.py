"""OAUTHBEARER tokens: the client message, the unsecured (alg none) validator and the
JWKS validator with RS256 and ES256 keys made here."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from shoal import limits
from shoal.security.oauth import (
    JwksValidator,
    TokenInvalid,
    UnsecuredJwsValidator,
    client_message,
    load_jwks,
    parse_client_message,
    unsecured_token,
)

NOW_MS = 1_700_000_000_000


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64_int(value: int) -> str:
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


def test_client_message_round_trip() -> None:
    assert parse_client_message(client_message("tok.en.", {"ext": "1"})) == "tok.en."
    for bad in (b"n,,auth=Bearer x", b"n,,\x01auth=Basic x\x01\x01", b"n,,\x01x=y\x01\x01"):
        with pytest.raises(TokenInvalid):
            parse_client_message(bad)


def test_oversize_message_is_refused_before_parsing() -> None:
    huge = client_message("a" * limits.OAUTHBEARER_MESSAGE_BYTES_MAX)
    with pytest.raises(TokenInvalid, match="at most 65536"):
        parse_client_message(huge)


def test_unsecured_token_validates() -> None:
    token = unsecured_token("alice", issued_ms=NOW_MS, lifetime_ms=60_000, scope="read write")
    valid = UnsecuredJwsValidator(required_scope=("read",)).validate(token, now_ms=NOW_MS + 1)
    assert (valid.principal, valid.expires_ms, valid.scope) == (
        "alice",
        NOW_MS + 60_000,
        ("read", "write"),
    )


def test_unsecured_token_refusals() -> None:
    token = unsecured_token("alice", issued_ms=NOW_MS, lifetime_ms=60_000)
    validator = UnsecuredJwsValidator()
    with pytest.raises(TokenInvalid, match="expired"):
        validator.validate(token, now_ms=NOW_MS + 60_000)
    with pytest.raises(TokenInvalid, match="required scope"):
        UnsecuredJwsValidator(required_scope=("admin",)).validate(token, now_ms=NOW_MS)
    with pytest.raises(TokenInvalid, match="principal claim"):
        UnsecuredJwsValidator(principal_claim="upn").validate(token, now_ms=NOW_MS)
    signed = token + "c2ln"
    with pytest.raises(TokenInvalid, match="empty signature"):
        validator.validate(signed, now_ms=NOW_MS)
    header = b64(json.dumps({"alg": "HS256"}).encode())
    with pytest.raises(TokenInvalid, match="alg"):
        validator.validate(header + token[token.index(".") :], now_ms=NOW_MS)


def claims(**extra: Any) -> dict[str, Any]:
    return {"sub": "svc", "exp": NOW_MS / 1000 + 60, "iss": "https://idp", "aud": "shoal", **extra}


def jpart(value: dict[str, Any]) -> str:
    return b64(json.dumps(value).encode())


def rs256(key: rsa.RSAPrivateKey, body: dict[str, Any], kid: str = "r1") -> str:
    signing = (
        f"{b64(json.dumps({'alg': 'RS256', 'kid': kid}).encode())}.{b64(json.dumps(body).encode())}"
    )
    signature = key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing}.{b64(signature)}"


def es256(key: ec.EllipticCurvePrivateKey, body: dict[str, Any]) -> str:
    signing = f"{jpart({'alg': 'ES256', 'kid': 'e1'})}.{jpart(body)}"
    r, s = decode_dss_signature(key.sign(signing.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


@pytest.fixture(scope="module")
def keys() -> tuple[rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, JwksValidator]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_numbers = rsa_key.public_key().public_numbers()
    ec_numbers = ec_key.public_key().public_numbers()
    document = {
        "keys": [
            {"kty": "RSA", "kid": "r1", "n": b64_int(rsa_numbers.n), "e": b64_int(rsa_numbers.e)},
            {
                "kty": "EC",
                "kid": "e1",
                "crv": "P-256",
                "x": b64(ec_numbers.x.to_bytes(32, "big")),
                "y": b64(ec_numbers.y.to_bytes(32, "big")),
            },
        ]
    }
    validator = JwksValidator(
        keys=load_jwks(json.dumps(document)),
        expected_audience=("shoal",),
        expected_issuer="https://idp",
        allowable_clock_skew_ms=0,
    )
    return rsa_key, ec_key, validator


def test_jwks_accepts_rs256_and_es256(keys: Any) -> None:
    rsa_key, ec_key, validator = keys
    assert validator.validate(rs256(rsa_key, claims()), now_ms=NOW_MS).principal == "svc"
    assert validator.validate(es256(ec_key, claims()), now_ms=NOW_MS).principal == "svc"


def test_jwks_refusals(keys: Any) -> None:
    rsa_key, ec_key, validator = keys
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cases = {
        "signature is invalid": rs256(other, claims()),
        "audience": rs256(rsa_key, claims(aud="someone-else")),
        "issuer": rs256(rsa_key, claims(iss="https://evil")),
        "expired": rs256(rsa_key, claims(exp=NOW_MS / 1000 - 1)),
        "kid": rs256(rsa_key, claims(), kid="unknown"),
    }
    for reason, token in cases.items():
        with pytest.raises(TokenInvalid, match=reason):
            validator.validate(token, now_ms=NOW_MS)
    tampered = es256(ec_key, claims())
    head, _body, sig = tampered.split(".")
    forged = b64(json.dumps(claims(sub="admin")).encode())
    with pytest.raises(TokenInvalid, match="signature is invalid"):
        validator.validate(f"{head}.{forged}.{sig}", now_ms=NOW_MS)


def _signed(key: Any, alg: str, body: dict[str, Any], kid: str) -> str:
    """A token signed with PS256 / RS384 / ES384 (what Kafka's jose4j validator takes)."""
    signing = f"{jpart({'alg': alg, 'kid': kid})}.{jpart(body)}"
    data = signing.encode()
    if alg == "PS256":
        pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32)
        signature = key.sign(data, pss, hashes.SHA256())
    elif alg == "RS384":
        signature = key.sign(data, padding.PKCS1v15(), hashes.SHA384())
    else:
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA384())))
        signature = r.to_bytes(48, "big") + s.to_bytes(48, "big")
    return f"{signing}.{b64(signature)}"


def test_jwks_accepts_the_other_algorithms_of_its_keys() -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP384R1())
    n, e = rsa_key.public_key().public_numbers().n, rsa_key.public_key().public_numbers().e
    point = ec_key.public_key().public_numbers()
    document = {
        "keys": [
            {"kty": "RSA", "kid": "r", "n": b64_int(n), "e": b64_int(e)},
            {"kty": "RSA", "kid": "pinned", "alg": "RS256", "n": b64_int(n), "e": b64_int(e)},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": b64_int(n), "e": b64_int(e)},
            {
                "kty": "EC",
                "kid": "p384",
                "crv": "P-384",
                "x": b64(point.x.to_bytes(48, "big")),
                "y": b64(point.y.to_bytes(48, "big")),
            },
        ]
    }
    keys = load_jwks(json.dumps(document))
    assert set(keys) == {"r", "pinned", "p384"}, "an encryption key verifies nothing"
    validator = JwksValidator(keys=keys, allowable_clock_skew_ms=0)
    for alg, key, kid in (
        ("PS256", rsa_key, "r"),
        ("RS384", rsa_key, "r"),
        ("ES384", ec_key, "p384"),
    ):
        assert (
            validator.validate(_signed(key, alg, claims(), kid), now_ms=NOW_MS).principal == "svc"
        )
    with pytest.raises(TokenInvalid, match="algorithm"):
        validator.validate(_signed(rsa_key, "RS384", claims(), "pinned"), now_ms=NOW_MS)


def test_jwks_refuses_a_token_not_valid_yet_and_an_hmac_forgery(keys: Any) -> None:
    rsa_key, _ec_key, validator = keys
    with pytest.raises(TokenInvalid, match="nbf"):
        validator.validate(rs256(rsa_key, claims(nbf=NOW_MS / 1000 + 60)), now_ms=NOW_MS)
    assert validator.validate(rs256(rsa_key, claims(nbf=NOW_MS / 1000)), now_ms=NOW_MS)
    # HS256 "signed" with the public key's bytes: a classic key-confusion forgery
    signing = f"{jpart({'alg': 'HS256', 'kid': 'r1'})}.{jpart(claims(sub='admin'))}"
    numbers = rsa_key.public_key().public_numbers()
    secret = numbers.n.to_bytes(256, "big")
    mac = hmac.new(secret, signing.encode(), hashlib.sha256).digest()
    with pytest.raises(TokenInvalid, match="algorithm"):
        validator.validate(f"{signing}.{b64(mac)}", now_ms=NOW_MS)
