"""`shoal configs`' command line (cli/configs_options.py): entity types and names paired
as kafka-configs.sh pairs them, its checks and messages, `--add-config` parsing, and
the Java formats of quota output (cli/client_quotas.py, cli/java_order.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from shoal.cli import configs
from shoal.cli.client_quotas import describe_entity, java_double
from shoal.cli.configs_options import ConfigArgError, ConfigRequest, check, configs_to_add
from shoal.cli.java_order import quota_entity_order


def parse(*argv: str, bootstrap: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configs.add_parser(parser.add_subparsers())
    given = ["--bootstrap-server", "127.0.0.1:9092"] if bootstrap else []
    return parser.parse_args(["configs", *given, *argv])


def checked(*argv: str) -> ConfigRequest:
    return check(parse(*argv))


def test_entity_types_pair_with_names_and_defaults_in_order() -> None:
    request = checked(
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-default",
        "--add-config",
        "producer_byte_rate=1024",
    )
    assert request.entity_types == ["users", "clients"]
    assert request.entity_names == ["alice", ""]


def test_shorthands_list_types_in_kafkas_flag_order() -> None:
    """--client comes before --user in Kafka's list of entity flags, whatever the
    command line's order."""
    request = checked("--alter", "--user", "alice", "--client", "app", "--add-config", "a=1")
    assert (request.entity_types, request.entity_names) == (["clients", "users"], ["app", "alice"])
    assert checked("--describe", "--broker-defaults").entity_names == [""]
    assert checked("--describe", "--topic", "t").entity_types == ["topics"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--describe", "--alter", "--topic", "t"), "exactly one action"),
        (("--describe", "--topic", "t", "--add-config", "a=b"), '"[add-config]"'),
        (("--describe", "--entity-type", "foo"), "Invalid entity type foo, the entity type"),
        (("--describe",), "At least one entity type must be specified"),
        (("--describe", "--topic", "a", "--entity-type", "topics"), "Duplicate entity type"),
        (("--describe", "--entity-type", "topics", "--entity-type", "brokers"), "'users' and"),
        (("--describe", "--topic", "a", "--entity-name", "b"), "specific entity flags"),
        (("--describe", "--broker", "x"), "valid integer broker id, but it is: x"),
        (("--describe", "--ip", "not an ip!"), "valid IP or resolvable host"),
        (("--describe", "--entity-type", "groups", "--entity-default"), "--entity-default"),
        (("--describe", "--entity-type", "broker-loggers"), "An entity name must be"),
        (("--alter", "--entity-type", "topics", "--add-config", "a=b"), "--alter of topics"),
        (("--alter", "--entity-type", "clients", "--add-config", "a=1"), "entity-name or default"),
        (("--alter", "--topic", "t"), "At least one of --add-config"),
        (
            ("--alter", "--topic", "t", "--add-config", "a=1", "--add-config-file", "f"),
            "Only one of --add-config or --add-config-file",
        ),
        (
            (
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                "alice",
                "--entity-type",
                "clients",
                "--add-config",
                "producer_byte_rate=5",
            ),
            "An entity name must be specified for every entity type",
        ),
    ],
)
def test_bad_command_lines_get_kafkas_messages(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigArgError, match=message.replace("[", r"\[").replace("]", r"\]")):
        checked(*argv)


def test_bootstrap_is_required() -> None:
    with pytest.raises(ConfigArgError, match="Either --bootstrap-server or"):
        check(parse("--describe", "--topic", "t", bootstrap=False))


def test_add_config_groups_bracketed_values_and_checks_keys(tmp_path: Path) -> None:
    request = checked(
        "--alter",
        "--topic",
        "t",
        "--add-config",
        "retention.ms=1000, cleanup.policy=[compact,delete],ssl.endpoint.identification.algorithm=",
    )
    assert configs_to_add(request) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
        "ssl.endpoint.identification.algorithm": "",
    }
    with pytest.raises(ConfigArgError, match='"key=val"'):
        configs_to_add(checked("--alter", "--topic", "t", "--add-config", "a"))
    with pytest.raises(ConfigArgError, match="Invalid character found for config key: a b"):
        configs_to_add(checked("--alter", "--topic", "t", "--add-config", "a b=1"))
    file = tmp_path / "add.properties"
    file.write_text("# comment\nretention.ms=5\nsegment.ms = 7\n")
    from_file = checked("--alter", "--topic", "t", "--add-config-file", str(file))
    assert configs_to_add(from_file) == {"retention.ms": "5", "segment.ms": "7"}


def test_delete_config_splits_on_commas_and_repeats() -> None:
    request = checked("--alter", "--topic", "t", "--delete-config", "a, b", "--delete-config", "c")
    assert request.delete_config == ["a", "b", "c"]


def test_quota_values_print_as_java_doubles() -> None:
    assert java_double(1000) == "1000.0"
    assert java_double(50.5) == "50.5"
    assert java_double(1e7) == "1.0E7"
    assert java_double(12345678) == "1.2345678E7"
    assert java_double(0.0001) == "1.0E-4"
    assert java_double(0.001) == "0.001"
    assert java_double(9999999.0) == "9999999.0"


def test_quota_entities_are_named_user_client_ip() -> None:
    one = [("client-id", "app")]
    assert quota_entity_order([one], capacity=1) == [one]
    assert describe_entity([("client-id", None), ("user", "alice")]) == (
        "user-principal 'alice', the default client-id"
    )
