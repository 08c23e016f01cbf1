"""console-share-consumer's `--command-config`: the file the admin tools take (Java
names, SASL_SSL with a JAAS line, `default.api.timeout.ms`) becomes librdkafka
settings librdkafka accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.cli.console_share_consumer import command_config_properties


def test_java_style_sasl_ssl_file_becomes_librdkafka_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="carl" password="pw-1";\n'
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/ca.pem\n"
        "default.api.timeout.ms=10000\n"
        "client.id=console\n"
    )
    settings = command_config_properties(str(path))
    assert settings["security.protocol"] == "SASL_SSL"
    assert settings["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert (settings["sasl.username"], settings["sasl.password"]) == ("carl", "pw-1")
    assert settings["ssl.ca.location"] == "/etc/ca.pem"
    assert settings["client.id"] == "console"
    assert "default.api.timeout.ms" not in settings
    assert not any(
        key.startswith("ssl.truststore") or key == "sasl.jaas.config" for key in settings
    )
    err = capsys.readouterr().err
    assert "'default.api.timeout.ms' has no librdkafka equivalent" in err
    assert "pw-1" not in err
