"""`shoal configs` client quota options: entity pairing, config parsing, usage errors."""

from __future__ import annotations

import argparse

import pytest

from shoal.cli import configs
from shoal.cli.client_quotas import (
    describe_entity,
    entity_of,
    parse_quota_configs,
    parse_quota_deletions,
)
from shoal.cli.kafka_options import UsageError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configs.add_parser(parser.add_subparsers())
    return parser.parse_args(["configs", "--bootstrap-server", "127.0.0.1:9092", *argv])


def test_entity_types_pair_with_names_and_defaults_in_order() -> None:
    args = parse(
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
    assert entity_of(args) == [("user", "alice"), ("client-id", None)]
    configs._validate(args)
    assert configs._quotas(args)
    assert describe_entity(entity_of(args)) == "user-principal 'alice', the default client-id"


def test_scram_configs_on_users_stay_scram() -> None:
    args = parse(
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "SCRAM-SHA-256=[password=p]",
    )
    configs._validate(args)
    assert not configs._quotas(args)
    assert args.entity_name == "alice"


def test_quota_config_parsing() -> None:
    assert parse_quota_configs("producer_byte_rate=1048576, consumer_byte_rate=2048") == {
        "producer_byte_rate": 1048576.0,
        "consumer_byte_rate": 2048.0,
    }
    assert parse_quota_deletions("producer_byte_rate") == ["producer_byte_rate"]
    assert parse_quota_configs("request_percentage=12.5") == {"request_percentage": 12.5}
    for bad in ("controller_mutation_rate=5", "producer_byte_rate", "producer_byte_rate=fast"):
        with pytest.raises(UsageError):
            parse_quota_configs(bad)
    with pytest.raises(UsageError):
        parse_quota_deletions("nope")


def test_alter_needs_a_name_or_default_for_each_type() -> None:
    args = parse("--alter", "--entity-type", "clients", "--add-config", "producer_byte_rate=1")
    with pytest.raises(UsageError, match="--entity-default"):
        configs._validate(args)
