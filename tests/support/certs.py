"""Test certificates, made with `cryptography` at test time and written as PEM files.

`make_pki(folder)` writes a CA, a server certificate for 127.0.0.1/localhost and two
client certificates signed by the CA, plus a client certificate from another (untrusted)
CA. Each `Identity` has a certificate file, a key file and a combined file (key + chain,
Kafka's `ssl.keystore.location` PEM form). `reissue_server` writes a new server
certificate over the old files (for the reload test).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_START = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
_END = datetime.datetime(2099, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class Identity:
    cert: Path
    key: Path
    keystore: Path
    """Key then certificate chain in one PEM file (Kafka's PEM key store)."""
    serial: int


@dataclass(frozen=True)
class Pki:
    folder: Path
    ca: Path
    """The trusted CA's certificate (PEM): the trust store of both sides."""
    server: Identity
    alice: Identity
    """Subject CN=alice,OU=clients,O=shoal."""
    bob: Identity
    """Subject CN=bob,OU=ops,O=shoal."""
    stranger: Identity
    """Signed by a CA nobody trusts."""
    _ca_key: ec.EllipticCurvePrivateKey
    _ca_name: x509.Name


def _name(**parts: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME}
    oids["O"] = NameOID.ORGANIZATION_NAME
    # RFC 2253 prints the last RDN first: build O, OU, CN so the DN reads CN=...,OU=...,O=...
    order = [k for k in ("O", "OU", "CN") if k in parts]
    return x509.Name([x509.NameAttribute(oids[k], parts[k]) for k in order])


def _ca(name: x509.Name) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_START)
        .not_valid_after(_END)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    folder: Path,
    stem: str,
    subject: x509.Name,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    ca_pem: bytes,
    *,
    server: bool,
) -> Identity:
    key = ec.generate_private_key(ec.SECP256R1())
    serial = x509.random_serial_number()
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(_START)
        .not_valid_after(_END)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    cert = builder.sign(ca_key, hashes.SHA256())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    identity = Identity(
        cert=folder / f"{stem}.crt",
        key=folder / f"{stem}.key",
        keystore=folder / f"{stem}-keystore.pem",
        serial=serial,
    )
    identity.cert.write_bytes(cert_pem + ca_pem)
    identity.key.write_bytes(key_pem)
    identity.keystore.write_bytes(key_pem + cert_pem + ca_pem)
    return identity


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca_name = _name(CN="shoal test CA", O="shoal")
    ca_key, ca_cert = _ca(ca_name)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    (folder / "ca.crt").write_bytes(ca_pem)
    other_name = _name(CN="stranger CA", O="elsewhere")
    other_key, other_cert = _ca(other_name)
    other_pem = other_cert.public_bytes(serialization.Encoding.PEM)
    return Pki(
        folder=folder,
        ca=folder / "ca.crt",
        server=_leaf(
            folder, "server", _name(CN="localhost", O="shoal"), ca_key, ca_name, ca_pem, server=True
        ),
        alice=_leaf(
            folder,
            "alice",
            _name(CN="alice", OU="clients", O="shoal"),
            ca_key,
            ca_name,
            ca_pem,
            server=False,
        ),
        bob=_leaf(
            folder,
            "bob",
            _name(CN="bob", OU="ops", O="shoal"),
            ca_key,
            ca_name,
            ca_pem,
            server=False,
        ),
        stranger=_leaf(
            folder,
            "stranger",
            _name(CN="mallory", O="elsewhere"),
            other_key,
            other_name,
            other_pem,
            server=False,
        ),
        _ca_key=ca_key,
        _ca_name=ca_name,
    )


def reissue_server(pki: Pki) -> Identity:
    """A new server certificate (new key, new serial) written over the old files."""
    ca_pem = pki.ca.read_bytes()
    return _leaf(
        pki.folder,
        "server",
        _name(CN="localhost", O="shoal"),
        pki._ca_key,
        pki._ca_name,
        ca_pem,
        server=True,
    )
