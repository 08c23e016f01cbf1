"""--command-config files and the client settings the admin tools build from them.
No broker involved."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from shoal.cli.kafka_options import (
    CLIENT_ID_DEFAULT,
    COMMAND_CONFIG_BYTES_MAX,
    ToolFailed,
    client_settings,
    load_command_config,
    parse_properties,
)
from shoal.client import ClientSettings
from shoal.client.settings import API_TIMEOUT_MS_DEFAULT, REQUEST_TIMEOUT_MS_DEFAULT


def test_java_properties_syntax() -> None:
    text = (
        "# a comment\n! another\n\nrequest.timeout.ms=1500\nclient.id : tools\n"
        "default.api.timeout.ms 2500\nsasl.jaas.config = a=b c\nflag\n"
    )
    assert parse_properties(text) == {
        "request.timeout.ms": "1500",
        "client.id": "tools",
        "default.api.timeout.ms": "2500",
        "sasl.jaas.config": "a=b c",
        "flag": "",
    }


def test_settings_from_properties_and_the_tool_timeout() -> None:
    assert client_settings({}) == client_settings({"bootstrap.servers": "x:1"})
    defaults = client_settings({})
    assert (defaults.api_timeout_ms, defaults.request_timeout_ms, defaults.client_id) == (
        API_TIMEOUT_MS_DEFAULT,
        REQUEST_TIMEOUT_MS_DEFAULT,
        CLIENT_ID_DEFAULT,
    )
    properties = {"request.timeout.ms": "700", "default.api.timeout.ms": "900", "client.id": "me"}
    settings = client_settings(properties)
    assert (settings.api_timeout_ms, settings.request_timeout_ms, settings.client_id) == (
        900,
        700,
        "me",
    )
    assert client_settings(properties, api_timeout_ms=5000).api_timeout_ms == 5000
    assert isinstance(settings, ClientSettings), "the tools configure the one client"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ToolFailed, match=r"request\.timeout\.ms must be a positive number"):
        client_settings({"request.timeout.ms": "soon"})
    with pytest.raises(ToolFailed, match=r"ssl\.keystore\.pasword: not a client security"):
        client_settings({"security.protocol": "SSL", "ssl.keystore.pasword": "x"})
    with pytest.raises(ToolFailed, match=r"security\.protocol: 'TLS' is not one of"):
        client_settings({"security.protocol": "TLS"})
    assert client_settings({"security.protocol": "plaintext"}).client_id == CLIENT_ID_DEFAULT


def test_security_settings_reach_the_client(tmp_path: Path) -> None:
    path = tmp_path / "ssl.properties"
    path.write_text(
        "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n"
    )
    warnings = io.StringIO()
    settings = client_settings(load_command_config(str(path), warn=warnings))
    assert warnings.getvalue() == "", "security keys are known"
    assert settings.security.uses_tls
    assert settings.security.ssl_cafile == "/ca.pem"


def test_unknown_keys_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "admin.properties"
    path.write_text("client.id=x\nlinger.ms=5\nbootstrap.servers=h:1\n")
    warnings = io.StringIO()
    assert load_command_config(str(path), warn=warnings) == {
        "client.id": "x",
        "linger.ms": "5",
        "bootstrap.servers": "h:1",
    }
    assert warnings.getvalue() == (
        "WARN The configuration 'linger.ms' was supplied but isn't a known config.\n"
    )


def test_a_command_config_file_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.properties"
    path.write_text("#" * (COMMAND_CONFIG_BYTES_MAX + 1))
    with pytest.raises(ToolFailed, match=f"larger than {COMMAND_CONFIG_BYTES_MAX} bytes"):
        load_command_config(str(path), warn=io.StringIO())
    with pytest.raises(ToolFailed, match="cannot read --command-config file"):
        load_command_config(str(tmp_path / "missing"), warn=io.StringIO())
