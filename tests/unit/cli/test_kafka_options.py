"""--command-config files, admin-client settings, bootstrap parsing and error names
shared by the admin tools. No broker involved."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from shoal.cli.admin_client import (
    API_TIMEOUT_MS_DEFAULT,
    CLIENT_ID_DEFAULT,
    REQUEST_TIMEOUT_MS_DEFAULT,
    KafkaError,
    Node,
    error_name,
    parse_bootstrap,
)
from shoal.cli.kafka_options import (
    COMMAND_CONFIG_BYTES_MAX,
    ToolFailed,
    client_settings,
    load_command_config,
    parse_properties,
)


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


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ToolFailed, match=r"request\.timeout\.ms must be a positive number"):
        client_settings({"request.timeout.ms": "soon"})
    with pytest.raises(ToolFailed, match=r"security\.protocol=SSL is not supported"):
        client_settings({"security.protocol": "SSL"})
    assert client_settings({"security.protocol": "plaintext"}).client_id == CLIENT_ID_DEFAULT


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


def test_bootstrap_lists() -> None:
    assert parse_bootstrap("127.0.0.1:9092, [::1]:19092") == [
        Node("127.0.0.1", 9092),
        Node("::1", 19092),
    ]
    for bad in ("localhost", "host:0", "host:port", ":9092", "a:1,"):
        with pytest.raises(ValueError, match="expected HOST:PORT"):
            parse_bootstrap(bad)


def test_kafka_errors_carry_the_error_name() -> None:
    assert error_name(69) == "GROUP_ID_NOT_FOUND"
    assert error_name(32_000) == "UNKNOWN_ERROR_CODE_32000"
    error = KafkaError(3, None, context="topic 't'")
    assert error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert str(error) == (
        "topic 't': This server does not host this topic-partition. (UNKNOWN_TOPIC_OR_PARTITION)"
    )
    assert str(KafkaError(36, "Topic 'x' already exists.")) == (
        "Topic 'x' already exists. (TOPIC_ALREADY_EXISTS)"
    )
