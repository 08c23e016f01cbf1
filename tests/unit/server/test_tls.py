"""ListenerTls: the context of a TLS listener, its reload, the principal of a peer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shoal.config import BrokerConfig, ConfigError
from shoal.security.acl import ANONYMOUS
from shoal.server.net.tls import ListenerTls, subject_dn
from tests.support.certs import make_pki, reissue_server


class _Peer:
    def __init__(self, der: bytes | None) -> None:
        self._der = der

    def getpeercert(self, binary_form: bool) -> bytes | None:
        assert binary_form
        return self._der


def _config(pki_dir: Path, **extra: str) -> BrokerConfig:
    return BrokerConfig.from_raw(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.location": str(pki_dir / "server-keystore.pem"),
            "ssl.truststore.location": str(pki_dir / "ca.crt"),
            **extra,
        }
    )


def _der(cert_path: Path) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    return x509.load_pem_x509_certificate(cert_path.read_bytes()).public_bytes(Encoding.DER)


def test_principal_is_the_mapped_dn_or_anonymous(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    config = _config(tmp_path, **{"ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/U"})
    tls = ListenerTls("SSL", lambda: config)
    assert subject_dn(_der(pki.alice.cert)) == "CN=alice,OU=clients,O=shoal"
    assert str(tls.principal(_Peer(_der(pki.alice.cert)))) == "User:ALICE"
    assert tls.principal(_Peer(None)) == ANONYMOUS


def test_changed_files_reload_and_broken_ones_keep_the_old_context(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    config = _config(tmp_path)
    tls = ListenerTls("SSL", lambda: config)
    first = tls.context
    assert not tls.check_reload(), "nothing changed"
    reissue_server(pki)
    os.utime(pki.server.keystore, ns=(1, 1))  # a different mtime, whatever the clock
    assert tls.check_reload()
    assert tls.context is not first and tls.reloads == 1
    second = tls.context
    pki.server.keystore.write_text("not a key store")
    assert not tls.check_reload()
    assert tls.context is second, "a broken file keeps the previous context"


def test_a_missing_key_store_is_a_config_error(tmp_path: Path) -> None:
    make_pki(tmp_path)
    config = _config(tmp_path, **{"ssl.keystore.location": str(tmp_path / "nope.pem")})
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.location"):
        ListenerTls("SSL", lambda: config)


def test_inline_pem_stores(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    config = BrokerConfig.from_raw(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.certificate.chain": pki.server.cert.read_text(),
            "ssl.keystore.key": pki.server.key.read_text(),
            "ssl.truststore.certificates": pki.ca.read_text(),
            "ssl.client.auth": "required",
        }
    )
    tls = ListenerTls("SSL", lambda: config)
    assert tls.context.verify_mode.name == "CERT_REQUIRED"
