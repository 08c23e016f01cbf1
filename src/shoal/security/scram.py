"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them. Sans-I/O.

Owns the credential format Kafka stores (`ScramCredential`: salt, StoredKey, ServerKey,
iterations; never the password), the salting a client does before
AlterUserScramCredentials (`salted_password`, `credential_from_salted`), and both
sides of the exchange as message-in/message-out objects (`ScramServer`,
`ScramClient`). Nonces are randomness and so are injected by the caller.

Kafka's mechanism ids (AlterUserScramCredentials / DescribeUserScramCredentials):
SCRAM-SHA-256 = 1, SCRAM-SHA-512 = 2; iterations 4096..16384.

Hand-written on purpose rather than on scramp (the SCRAM library for Python): the
primitives are the standard library's (hashlib's PBKDF2, hmac), so a library would add
only the message exchange, about a hundred lines here, and would differ from Kafka
where Kafka is the judge: Kafka's server takes only the `n` GS2 flag (scramp also
takes `y`), Kafka credentials come in salted (AlterUserScramCredentials carries the
salted password, which scramp's public API cannot turn into a credential), nonces must
be injectable for deterministic tests, and the client refuses fewer than 4096
iterations as Kafka's does. scramp would also bring asn1crypto (for channel binding,
which Kafka does not use).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from shoal import limits

ITERATIONS_MIN = 4096
"""Kafka's ScramMechanism minimum iterations (UNACCEPTABLE_CREDENTIAL below)."""
ITERATIONS_MAX = 16384
"""Kafka's ScramMechanism maximum iterations (UNACCEPTABLE_CREDENTIAL above)."""
SCRAM_MESSAGE_BYTES_MAX = limits.SCRAM_MESSAGE_BYTES_MAX


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    type_id: int
    hash_name: str

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
MECHANISMS_BY_ID = {m.type_id: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


class ScramError(Exception):
    """The peer's SCRAM message is malformed or its proof is wrong."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps of a SCRAM user for one mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted(
    mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """The stored credential for a salted password (what the broker does with an
    AlterUserScramCredentials upsertion)."""
    client_key = mechanism.hmac(salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=mechanism.hash(client_key),
        server_key=mechanism.hmac(salted, b"Server Key"),
        iterations=iterations,
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise ScramError("invalid base64") from exc


def _attributes(message: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"invalid SCRAM attribute {part[:16]!r}")
        parsed.setdefault(part[0], part[2:])
    return parsed


def _decode_message(raw: bytes) -> str:
    if len(raw) > SCRAM_MESSAGE_BYTES_MAX:
        raise ScramError(f"SCRAM message of {len(raw)} bytes (at most {SCRAM_MESSAGE_BYTES_MAX})")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScramError("SCRAM message is not UTF-8") from exc


def unescape_username(saslname: str) -> str:
    """RFC 5802 saslname: '=2C' is ',' and '=3D' is '='."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


def escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


@dataclass(frozen=True, slots=True)
class ClientFirst:
    username: str
    nonce: str
    bare: str
    gs2_header: str


def parse_client_first(raw: bytes) -> ClientFirst:
    text = _decode_message(raw)
    parts = text.split(",", 2)
    if len(parts) != 3 or parts[0] != "n":
        raise ScramError("client-first-message must start with 'n,' (no channel binding)")
    authzid = parts[1]
    bare = parts[2]
    attrs = _attributes(bare)
    if "n" not in attrs or "r" not in attrs or not attrs["n"]:
        raise ScramError("client-first-message needs n= and r=")
    username = unescape_username(attrs["n"])
    if authzid and authzid != f"a={attrs['n']}":
        raise ScramError("authorization id must equal the user name")
    return ClientFirst(username, attrs["r"], bare, f"{parts[0]},{authzid},")


class ScramServer:
    """The server side of one SCRAM exchange: `first(client_first, credential, nonce)`
    returns the server-first message (an unknown user, credential None, fails here as
    in Kafka's ScramSaslServer), then `final(client_final)` returns the server-final
    message or raises ScramError."""

    def __init__(self, mechanism: ScramMechanism) -> None:
        self.mechanism = mechanism
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._auth_prefix = ""
        self._nonce = ""
        self._gs2 = ""

    def first(
        self, client_first: ClientFirst, credential: ScramCredential | None, server_nonce: str
    ) -> bytes:
        self.username = client_first.username
        if credential is None:
            raise ScramError("unknown user")
        self._credential = credential
        salt, iterations = credential.salt, credential.iterations
        self._nonce = client_first.nonce + server_nonce
        self._gs2 = client_first.gs2_header
        server_first = f"r={self._nonce},s={_b64(salt)},i={iterations}"
        self._auth_prefix = f"{client_first.bare},{server_first}"
        return server_first.encode("utf-8")

    def final(self, raw: bytes) -> bytes:
        text = _decode_message(raw)
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final-message has no proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise ScramError("invalid nonce")
        if _unb64(attrs.get("c", "")) != self._gs2.encode("utf-8"):
            raise ScramError("invalid channel binding")
        proof = _unb64(proof_part)
        auth_message = f"{self._auth_prefix},{without_proof}".encode()
        credential = self._credential
        assert credential is not None, "final() before first()"
        signature = self.mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self.mechanism.hash(client_key), credential.stored_key):
            raise ScramError("invalid client proof")
        server_signature = self.mechanism.hmac(credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()


class ScramClient:
    """The client side: `first()` -> send, `final(server_first)` -> send,
    `verify(server_final)` checks the server's signature (raises ScramError)."""

    def __init__(
        self, mechanism: ScramMechanism, *, username: str, password: str, nonce: str
    ) -> None:
        self.mechanism = mechanism
        self._password = password
        self._bare = f"n={escape_username(username)},r={nonce}"
        self._nonce = nonce
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, raw: bytes) -> bytes:
        server_first = _decode_message(raw)
        attrs = _attributes(server_first)
        nonce, salt_text, iterations_text = attrs.get("r", ""), attrs.get("s"), attrs.get("i")
        if not nonce.startswith(self._nonce) or salt_text is None or iterations_text is None:
            raise ScramError("invalid server-first-message")
        iterations = int(iterations_text)
        if iterations < ITERATIONS_MIN:
            raise ScramError(f"server asked for {iterations} iterations (< {ITERATIONS_MIN})")
        salted = salted_password(self.mechanism, self._password, _unb64(salt_text), iterations)
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        auth_message = f"{self._bare},{server_first},{without_proof}".encode()
        client_key = self.mechanism.hmac(salted, b"Client Key")
        signature = self.mechanism.hmac(self.mechanism.hash(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = self.mechanism.hmac(salted, b"Server Key")
        self._server_signature = self.mechanism.hmac(server_key, auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, raw: bytes) -> None:
        attrs = _attributes(_decode_message(raw))
        if "e" in attrs:
            raise ScramError(f"server error: {attrs['e']}")
        if not hmac.compare_digest(_unb64(attrs.get("v", "")), self._server_signature):
            raise ScramError("invalid server signature")
