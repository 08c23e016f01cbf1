"""SCRAM: RFC 7677's SCRAM-SHA-256 example in both directions, a SHA-512 round trip,
and the failures (wrong proof, unknown user, tampered nonce)."""

from __future__ import annotations

import base64

import pytest

from shoal.security.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramClient,
    ScramError,
    ScramServer,
    credential_from_salted,
    parse_client_first,
    salted_password,
)

# RFC 7677 section 3
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_credential() -> object:
    return credential_from_salted(
        SCRAM_SHA_256, salted_password(SCRAM_SHA_256, "pencil", SALT, 4096), SALT, 4096
    )


def test_rfc7677_server_side() -> None:
    server = ScramServer(SCRAM_SHA_256)
    first = parse_client_first(CLIENT_FIRST)
    assert first.username == "user"
    assert server.first(first, rfc_credential(), SERVER_NONCE) == SERVER_FIRST  # type: ignore[arg-type]
    assert server.final(CLIENT_FINAL) == SERVER_FINAL


def test_rfc7677_client_side() -> None:
    client = ScramClient(SCRAM_SHA_256, username="user", password="pencil", nonce=CLIENT_NONCE)
    assert client.first() == CLIENT_FIRST
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)
    with pytest.raises(ScramError, match="server signature"):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))


def exchange(password: str, *, stored_password: str = "secret") -> bytes:
    salt = b"0123456789abcdef"
    credential = credential_from_salted(
        SCRAM_SHA_512, salted_password(SCRAM_SHA_512, stored_password, salt, 4096), salt, 4096
    )
    client = ScramClient(SCRAM_SHA_512, username="a=b,c", password=password, nonce="cn")
    server = ScramServer(SCRAM_SHA_512)
    first = parse_client_first(client.first())
    assert first.username == "a=b,c"  # saslname escaping round trip
    server_final = server.final(client.final(server.first(first, credential, "sn")))
    client.verify(server_final)
    return server_final


def test_sha512_round_trip() -> None:
    assert exchange("secret").startswith(b"v=")


def test_wrong_password_fails_at_the_proof() -> None:
    with pytest.raises(ScramError, match="invalid client proof"):
        exchange("not-the-secret")


def test_unknown_user_fails_at_the_first_message() -> None:
    with pytest.raises(ScramError, match="unknown user"):
        ScramServer(SCRAM_SHA_256).first(parse_client_first(CLIENT_FIRST), None, SERVER_NONCE)


def test_tampered_nonce_and_malformed_messages() -> None:
    server = ScramServer(SCRAM_SHA_256)
    server.first(parse_client_first(CLIENT_FIRST), rfc_credential(), SERVER_NONCE)  # type: ignore[arg-type]
    with pytest.raises(ScramError, match="nonce"):
        server.final(CLIENT_FINAL.replace(b"k0,p", b"k1,p"))
    for bad in (b"y,,n=user,r=x", b"n,,r=x", b"n,a=other,n=user,r=x", b"x" * 5000):
        with pytest.raises(ScramError):
            parse_client_first(bad)


def test_credential_keeps_no_password() -> None:
    credential = rfc_credential()
    assert b"pencil" not in repr(credential).encode()
