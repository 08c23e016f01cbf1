"""ClientSecurity.from_properties: Java and librdkafka names, errors naming the key."""

from __future__ import annotations

import pytest

from shoal.client.security import ClientSecurity


def test_java_names() -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "sasl_ssl",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/etc/ca.pem",
            "ssl.keystore.type": "pem",
            "ssl.keystore.location": "/etc/me.pem",
            "ssl.key.password": "k",
            "ssl.endpoint.identification.algorithm": "",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="alice" password="s3cr\\"et";',
        }
    )
    assert security.security_protocol == "SASL_SSL"
    assert (security.ssl_cafile, security.ssl_certfile, security.ssl_key_password) == (
        "/etc/ca.pem",
        "/etc/me.pem",
        "k",
    )
    assert security.ssl_check_hostname is False
    assert security.sasl_mechanism == "SCRAM-SHA-512"
    assert (security.sasl_username, security.sasl_password) == ("alice", 's3cr"et')
    assert "s3cr" not in repr(security)


def test_librdkafka_names() -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "SSL",
            "ssl.ca.location": "ca.pem",
            "ssl.certificate.location": "c.pem",
            "ssl.key.location": "k.pem",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "bob",
            "sasl.password": "pw",
        }
    )
    assert (security.ssl_cafile, security.ssl_certfile, security.ssl_keyfile) == (
        "ca.pem",
        "c.pem",
        "k.pem",
    )
    assert security.ssl_check_hostname is True
    assert (security.sasl_username, security.sasl_password) == ("bob", "pw")
    assert security.librdkafka_config()["ssl.key.location"] == "k.pem"


def test_inline_truststore() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----"
    assert ClientSecurity.from_properties({"ssl.truststore.certificates": pem}).ssl_cadata == pem


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"ssl.truststore.password": "x"}, "ssl.truststore.password"),
        ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type"),
        ({"security.protocol": "TLS"}, "security.protocol"),
        (
            {"ssl.endpoint.identification.algorithm": "ldap"},
            "ssl.endpoint.identification.algorithm",
        ),
        ({"sasl.jaas.config": "com.example.Krb5LoginModule required;"}, "sasl.jaas.config"),
    ],
)
def test_refused_keys_are_named(properties: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        ClientSecurity.from_properties(properties)


def test_plaintext_has_no_tls_context() -> None:
    assert ClientSecurity().ssl_context() is None
