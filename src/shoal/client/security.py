"""The client's security settings: how a connection is secured and authenticated.

Field by field these are Kafka's client properties (Java names first, librdkafka's
where they differ); `from_properties` (a `--command-config` file, Spark's `kafka.`
options) maps either spelling onto them. The drivers wrap the socket in TLS when the
protocol says SSL; the core runs the SASL exchange after ApiVersions when it says SASL.
"""

from __future__ import annotations

from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    """`security.protocol`."""
    ssl_cafile: str | None = None
    """PEM CA certificates: `ssl.truststore.location` (with `ssl.truststore.type=PEM`) or
    librdkafka's `ssl.ca.location`. None: the system's default CAs."""
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
