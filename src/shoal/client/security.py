"""The client's security settings: how a connection is secured and authenticated.

Field by field these are Kafka's client properties (Java names first, librdkafka's
where they differ); `from_properties` (a `--command-config` file, Spark's `kafka.`
options) maps either spelling onto them and refuses any other key. The drivers wrap
the socket in TLS when the protocol says SSL (`ssl_context` builds the client context:
it reads the PEM files named here, nothing else); the core runs the SASL exchange after
ApiVersions when it says SASL.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    """`security.protocol`."""
    ssl_cafile: str | None = None
    """PEM CA certificates: `ssl.truststore.location` (with `ssl.truststore.type=PEM`) or
    librdkafka's `ssl.ca.location`. None: the system's default CAs."""
    ssl_cadata: str | None = None
    """PEM CA certificates inline: `ssl.truststore.certificates`."""
    ssl_certfile: str | None = None
    """The client certificate (PEM, may also hold the key): `ssl.keystore.location` (with
    `ssl.keystore.type=PEM`) or `ssl.certificate.location`."""
    ssl_keyfile: str | None = None
    """The client key (PEM) when not in `ssl_certfile`: `ssl.key.location`."""
    ssl_key_password: str | None = None
    """`ssl.key.password`."""
    ssl_check_hostname: bool = True
    """`ssl.endpoint.identification.algorithm` (`https`, the default, checks; empty does not)."""
    sasl_mechanism: str = "PLAIN"
    """`sasl.mechanism`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER."""
    sasl_username: str | None = None
    """From `sasl.jaas.config`'s `username=` or librdkafka's `sasl.username`."""
    sasl_password: str | None = None
    """From `sasl.jaas.config`'s `password=` or `sasl.password`; never logged."""
    sasl_oauthbearer_token: str | None = None
    """A ready OAUTHBEARER token (compact JWS); never logged."""

    def __post_init__(self) -> None:
        assert self.security_protocol in SECURITY_PROTOCOLS, self.security_protocol

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ClientSecurity:
        """Kafka client properties (Java or librdkafka names) as settings; ValueError
        naming the key for a key that is not a security setting or a bad value."""
        fields: dict[str, object] = {}
        for raw_key, raw_value in properties.items():
            key, value = raw_key.strip(), str(raw_value).strip()
            target = _PROPERTY_FIELDS.get(key)
            if target is not None:
                fields[target] = value or None
            elif key == "security.protocol":
                if value.upper() not in SECURITY_PROTOCOLS:
                    raise ValueError(
                        f"{key}: {value!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
                    )
                fields["security_protocol"] = value.upper()
            elif key in ("ssl.truststore.type", "ssl.keystore.type"):
                if value.upper() != "PEM":
                    raise ValueError(f"{key}: only PEM stores are supported, not {value!r}")
            elif key == "ssl.endpoint.identification.algorithm":
                if value.lower() not in ("", "https", "none"):
                    raise ValueError(f"{key}: {value!r} is not https or empty")
                fields["ssl_check_hostname"] = value.lower() == "https"
            elif key in ("sasl.mechanism", "sasl.mechanisms"):
                fields["sasl_mechanism"] = value.upper()
            elif key == "sasl.jaas.config":
                fields.update(_jaas_credentials(value))
            else:
                raise ValueError(f"{key}: not a client security setting Shoal knows")
        return cls(**fields)  # type: ignore[arg-type]

    def librdkafka_config(self) -> dict[str, str]:
        """These settings in librdkafka's names (for a confluent-kafka client)."""
        config: dict[str, str] = {"security.protocol": self.security_protocol}
        named = {
            "ssl.ca.location": self.ssl_cafile,
            "ssl.ca.pem": self.ssl_cadata,
            "ssl.certificate.location": self.ssl_certfile,
            "ssl.key.location": self.ssl_keyfile or self.ssl_certfile,
            "ssl.key.password": self.ssl_key_password,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
        }
        config.update({k: v for k, v in named.items() if v})
        if self.uses_tls:
            check = "https" if self.ssl_check_hostname else "none"
            config["ssl.endpoint.identification.algorithm"] = check
        if self.uses_sasl:
            config["sasl.mechanisms"] = self.sasl_mechanism
        return config

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client TLS context (None without TLS): the CA from `ssl_cafile` /
        `ssl_cadata` (else the system's), the client certificate if given, TLS 1.2+."""
        if not self.uses_tls:
            return None
        if self.ssl_cafile or self.ssl_cadata:
            context = ssl.create_default_context(cafile=self.ssl_cafile, cadata=self.ssl_cadata)
        else:
            context = ssl.create_default_context()
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            context.load_cert_chain(
                self.ssl_certfile, self.ssl_keyfile, password=self.ssl_key_password
            )
        return context

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def __repr__(self) -> str:
        return (
            f"ClientSecurity(security_protocol={self.security_protocol!r}, "
            f"sasl_mechanism={self.sasl_mechanism!r}, sasl_username={self.sasl_username!r})"
        )


_PROPERTY_FIELDS = {
    "ssl.truststore.location": "ssl_cafile",
    "ssl.ca.location": "ssl_cafile",
    "ssl.truststore.certificates": "ssl_cadata",
    "ssl.keystore.location": "ssl_certfile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
}
"""Properties that set one field as they are (Java and librdkafka names)."""

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
_JAAS_MODULES = ("PlainLoginModule", "ScramLoginModule", "OAuthBearerLoginModule")


def _jaas_credentials(text: str) -> dict[str, object]:
    """`username`/`password` of a `sasl.jaas.config` (PlainLoginModule or
    ScramLoginModule, `required`); ValueError otherwise. The password is never echoed."""
    head = text.split(None, 1)[0] if text.split() else ""
    if not head.endswith(_JAAS_MODULES):
        raise ValueError(f"sasl.jaas.config: login module {head!r} is not one Shoal knows")
    found: dict[str, object] = {}
    for match in _JAAS_OPTION.finditer(text):
        name = match.group(1)
        quoted, bare = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        if name == "username":
            found["sasl_username"] = value
        elif name == "password":
            found["sasl_password"] = value
    return found


def is_security_property(key: str) -> bool:
    """Whether a client property is a security setting (`from_properties`' domain)."""
    return key.strip().startswith(("security.", "ssl.", "sasl."))
