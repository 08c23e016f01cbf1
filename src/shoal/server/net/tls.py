"""TLS of one SSL or SASL_SSL listener: its SSLContext, its reload, a peer's principal.

`ListenerTls.build` makes the server-side SSLContext from the listener's `ssl.*` values
(`BrokerConfig.listener_value`: `listener.name.<name>.ssl.*` over the global key): the
key store in PEM (`ssl.keystore.location`, or the inline `ssl.keystore.certificate.chain`
+ `ssl.keystore.key`, with `ssl.key.password`), the trust store in PEM
(`ssl.truststore.location` or the inline `ssl.truststore.certificates`),
`ssl.client.auth`, `ssl.enabled.protocols` (TLS 1.2 and 1.3 only) and
`ssl.cipher.suites`.

`check_reload` (on the broker's timer driver, every `shoal.ssl.reload.check.interval.ms`)
compares the store files' modification times and sizes with those last loaded and, on a
change, builds a new context: connections accepted afterwards use it, open ones keep
theirs. A store that fails to load is logged and the previous context stays.

`principal` maps a handshaken connection's client certificate to a `KafkaPrincipal`:
its subject DN in RFC 2253 form through `ssl.principal.mapping.rules`; no certificate
is User:ANONYMOUS.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shoal.config import BrokerConfig, ConfigError
from shoal.security.acl import ANONYMOUS, KafkaPrincipal
from shoal.security.principal_mapping import PrincipalMapper

log = logging.getLogger(__name__)

_VERIFY_MODES = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}

FileStamp = tuple[str, int, int]
"""(path, mtime in ns, size): what a reload check compares."""


class ListenerTls:
    """The current SSLContext of one listener, reloaded when its files change."""

    def __init__(self, listener_name: str, config: Callable[[], BrokerConfig]) -> None:
        self.listener_name = listener_name
        self._config = config
        self.context, self._stamps = self.build(config())
        self.mapper = PrincipalMapper.parse(
            config().listener_value(listener_name, "ssl.principal.mapping.rules")
        )
        self.reloads = 0
        """How many times the context was rebuilt after a file change."""

    def _value(self, config: BrokerConfig, key: str) -> Any:
        return config.listener_value(self.listener_name, key)

    def build(self, config: BrokerConfig) -> tuple[ssl.SSLContext, list[FileStamp]]:
        """A new server context from the listener's values, and the stamps of the files
        it read; ConfigError naming the key when a store does not load."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        versions = sorted(_VERSIONS[v] for v in self._value(config, "ssl.enabled.protocols"))
        context.minimum_version = versions[0]
        context.maximum_version = versions[-1]
        ciphers = self._value(config, "ssl.cipher.suites")
        if ciphers:
            try:
                context.set_ciphers(":".join(ciphers))
            except ssl.SSLError as exc:
                raise ConfigError("ssl.cipher.suites", f"no usable cipher: {exc}") from None
        stamps: list[FileStamp] = []
        self._load_keystore(config, context, stamps)
        self._load_truststore(config, context, stamps)
        context.verify_mode = _VERIFY_MODES[self._value(config, "ssl.client.auth")]
        return context, stamps

    def _load_keystore(
        self, config: BrokerConfig, context: ssl.SSLContext, stamps: list[FileStamp]
    ) -> None:
        password = self._value(config, "ssl.key.password")
        location = self._value(config, "ssl.keystore.location")
        try:
            if location:
                stamps.append(_stamp(location))
                context.load_cert_chain(location, password=password)
                return
            chain = self._value(config, "ssl.keystore.certificate.chain")
            key = self._value(config, "ssl.keystore.key")
            if not chain or not key:
                raise ConfigError(
                    "ssl.keystore.location",
                    f"listener {self.listener_name} needs a key store",
                )
            # `load_cert_chain` reads files only: the inline PEM goes through a private
            # temporary directory, removed at once.
            with tempfile.TemporaryDirectory(prefix="shoal-tls-") as folder:
                chain_path, key_path = Path(folder, "chain.pem"), Path(folder, "key.pem")
                chain_path.write_text(chain)
                key_path.touch(mode=0o600)
                key_path.write_text(key)
                context.load_cert_chain(chain_path, key_path, password=password)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                "ssl.keystore.location", f"listener {self.listener_name}: {exc}"
            ) from None

    def _load_truststore(
        self, config: BrokerConfig, context: ssl.SSLContext, stamps: list[FileStamp]
    ) -> None:
        location = self._value(config, "ssl.truststore.location")
        inline = self._value(config, "ssl.truststore.certificates")
        try:
            if location:
                stamps.append(_stamp(location))
                context.load_verify_locations(cafile=location)
            elif inline:
                context.load_verify_locations(cadata=inline)
            elif self._value(config, "ssl.client.auth") != "none":
                context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                "ssl.truststore.location", f"listener {self.listener_name}: {exc}"
            ) from None

    def check_reload(self, _now_ms: int = 0) -> bool:
        """Rebuild the context if a store file changed; True when it was replaced."""
        try:
            current = [_stamp(path) for path, _, _ in self._stamps]
        except OSError as exc:
            log.warning("listener %s: cannot check TLS files: %s", self.listener_name, exc)
            return False
        if current == self._stamps:
            return False
        try:
            context, stamps = self.build(self._config())
        except ConfigError as exc:
            log.error(
                "listener %s: TLS files changed but do not load (%s); keeping the previous ones",
                self.listener_name,
                exc,
            )
            self._stamps = current  # do not retry the same broken files every check
            return False
        self.context, self._stamps = context, stamps
        self.reloads += 1
        log.info(
            "listener %s: TLS key/trust store reloaded from %s",
            self.listener_name,
            ", ".join(path for path, _, _ in stamps),
        )
        return True

    def principal(self, ssl_object: Any) -> KafkaPrincipal:
        """The principal of a handshaken connection (its `ssl_object`): the mapped
        subject DN of the client certificate, or ANONYMOUS without one. Raises
        `NoMatchingRule` when no mapping rule applies."""
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return ANONYMOUS
        return KafkaPrincipal("User", self.mapper.name(subject_dn(der)))


def subject_dn(der: bytes) -> str:
    """A DER certificate's subject in RFC 2253 form (as Java's X500Principal prints it)."""
    # on a TLS handshake only, not at start-up (docs/performance/startup.md)
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _stamp(path: str) -> FileStamp:
    status = os.stat(path)
    return (path, status.st_mtime_ns, status.st_size)
