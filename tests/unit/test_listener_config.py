"""Listener and TLS config validation: listener_endpoints, per-listener ssl.* keys."""

from __future__ import annotations

import pytest

from shoal.config import BrokerConfig, ConfigError


def test_default_is_one_plaintext_listener() -> None:
    (endpoint,) = BrokerConfig.from_raw({}).listener_endpoints()
    assert (endpoint.name, endpoint.security_protocol, endpoint.host, endpoint.port) == (
        "PLAINTEXT",
        "PLAINTEXT",
        "127.0.0.1",
        9092,
    )


def test_custom_names_map_to_protocols_and_advertise() -> None:
    config = BrokerConfig.from_raw(
        {
            "listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://0.0.0.0:9093",
            "advertised.listeners": "EXTERNAL://broker.example:443",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SSL",
            "ssl.keystore.location": "/server.pem",
        }
    )
    internal, external = config.listener_endpoints()
    assert (internal.security_protocol, internal.advertised_host) == ("PLAINTEXT", "127.0.0.1")
    assert (external.security_protocol, external.uses_tls) == ("SSL", True)
    assert (external.advertised_host, external.advertised_port) == ("broker.example", 443)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"listeners": "EXTERNAL://h:1"}, "listener EXTERNAL has no security protocol"),
        ({"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "appears twice"),
        ({"listeners": "PLAINTEXT://h:1,SSL://h:1", "ssl.keystore.location": "/k"}, "used by two"),
        ({"advertised.listeners": "SSL://h:1"}, "SSL not among the listeners"),
        ({"listener.security.protocol.map": "A:TLS"}, "PROTOCOL one of"),
        ({"listeners": "SSL://h:1"}, "needs ssl.keystore.location"),
        ({"ssl.client.auth": "always"}, "not one of none, requested, required"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "not one of TLSv1.2, TLSv1.3"),
        ({"ssl.principal.mapping.rules": "RULE:x/y"}, "invalid rule"),
        ({"listener.name.ssl.ssl.nonsense": "1"}, "unknown per-listener config key"),
        ({"listener.name.SSL.ssl.client.auth": "required"}, "lower case"),
        ({"listener.name.ssl.ssl.client.auth": "sometimes"}, "listener.name.ssl.ssl.client.auth"),
    ],
)
def test_bad_listener_configs_are_refused(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_raw(raw)


def test_per_listener_value_overrides_the_global_key() -> None:
    config = BrokerConfig.from_raw(
        {
            "listeners": "PLAINTEXT://h:1,SSL://h:2,MTLS://h:3",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
            "ssl.keystore.location": "/k",
            "listener.name.mtls.ssl.client.auth": "required",
        }
    )
    assert config.listener_value("MTLS", "ssl.client.auth") == "required"
    assert config.listener_value("SSL", "ssl.client.auth") == "none"
    changed = config.with_overrides({"log.retention.ms": 1000})
    assert changed.listener_value("MTLS", "ssl.client.auth") == "required", "kept on reconfigure"
