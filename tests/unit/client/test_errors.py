"""Bootstrap lists and the client's error messages (what the admin tools print)."""

from __future__ import annotations

import pytest

from shoal.client import KafkaError, Node, parse_bootstrap
from shoal.client.errors import error_name


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
