"""Spark Kafka's `kafka.`-prefixed security options on the Shoal data sources."""

from __future__ import annotations

import pytest

from shoal.client.security import ClientSecurity
from shoal.spark.options import BOOTSTRAP_SERVERS, SECURITY, OptionError, parse_options
from shoal.spark.topic_stream_options import parse_stream_options

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="alice" password="alice-secret";'
)


def test_security_options_become_client_security() -> None:
    parsed = parse_options(
        {
            "bootstrap.servers": "127.0.0.1:9093",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.ssl.truststore.location": "/ca.pem",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": JAAS,
        },
        [BOOTSTRAP_SERVERS],
        source="shoal",
    )
    security = parsed[SECURITY]
    assert isinstance(security, ClientSecurity)
    assert (security.security_protocol, security.ssl_cafile) == ("SASL_SSL", "/ca.pem")
    assert (security.sasl_mechanism, security.sasl_username) == ("PLAIN", "alice")
    assert security.sasl_password == "alice-secret"


def test_without_security_options_plaintext() -> None:
    parsed = parse_options({"bootstrap.servers": "h:1"}, [BOOTSTRAP_SERVERS], source="shoal")
    assert parsed[SECURITY] == ClientSecurity()


def test_an_unknown_security_option_is_named() -> None:
    with pytest.raises(OptionError, match=r"kafka\.ssl\.keystore\.pasword"):
        parse_options(
            {"bootstrap.servers": "h:1", "kafka.ssl.keystore.pasword": "x"},
            [BOOTSTRAP_SERVERS],
            source="shoal",
        )


def test_other_kafka_options_stay_unknown() -> None:
    with pytest.raises(OptionError, match=r"unknown option 'kafka\.linger\.ms'"):
        parse_options(
            {"bootstrap.servers": "h:1", "kafka.linger.ms": "5"}, [BOOTSTRAP_SERVERS], source="s"
        )


def test_the_topic_stream_carries_security() -> None:
    options = parse_stream_options(
        {
            "bootstrap.servers": "h:1",
            "subscribe": "t",
            "kafka.security.protocol": "SSL",
            "kafka.ssl.ca.location": "/ca.pem",
        }
    )
    assert options.security.uses_tls


def test_the_share_source_carries_security() -> None:
    from shoal.spark.share_options import parse_share_options

    options = parse_share_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "topic": "t",
            "group.id": "g",
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": "/ca.pem",
        }
    )
    assert options.security.uses_tls
    assert options.security.ssl_cafile == "/ca.pem"
