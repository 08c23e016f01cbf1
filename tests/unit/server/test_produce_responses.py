"""The Produce handler's response objects (server/handlers/produce.py): built with the
kio class directly where the version has every field the handler gives, else through
`Schema.make`; either way what `Schema.make` builds, for every version served."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from shoal.config import BrokerConfig
from shoal.log.api import AppendResult
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.handlers import produce


@pytest.mark.parametrize("version", range(3, 14))
def test_partition_responses_match_schema_make(version: int) -> None:
    schema = response_schema(produce.API_KEY, version)
    types = produce._types(version)
    ok = AppendResult(base_offset=41, last_offset=46, log_append_time_ms=-1, log_start_offset=3)
    assert produce._partition_ok(types, 2, ok) == schema.make(
        "PartitionProduceResponse",
        index=2,
        error_code=ErrorCode.none,
        base_offset=41,
        log_append_time=None,
        log_start_offset=3,
        record_errors=(),
        error_message=None,
    )
    error = produce._partition_error(types, 5, ErrorCode.corrupt_message, "bad CRC")
    assert error == schema.make(
        "PartitionProduceResponse",
        index=5,
        error_code=ErrorCode.corrupt_message,
        base_offset=-1,
        log_append_time=None,
        log_start_offset=-1,
        record_errors=(),
        error_message="bad CRC",
    )
    # v13 answers a topic by the id it was asked by, older versions by its name
    asked = SimpleNamespace(name="t", topic_id=uuid.UUID(int=7))
    topic = types.topic(asked, (error,))
    assert topic == schema.make(
        "TopicProduceResponse", name="t", topic_id=uuid.UUID(int=7), partition_responses=(error,)
    )
    assert (getattr(topic, "name", None), getattr(topic, "topic_id", None)) == (
        (None, uuid.UUID(int=7)) if version >= 13 else ("t", None)
    )
    response = types.response(responses=(topic,), throttle_time=produce._ZERO)
    assert response == schema.response(responses=(topic,), throttle_time=produce._ZERO)


def test_latest_versions_skip_the_filtering() -> None:
    """From v8 every field the handler gives exists: the kio class is used as it is."""
    for version in (10, 13):
        schema = response_schema(produce.API_KEY, version)
        assert produce._types(version).partition is schema.cls("PartitionProduceResponse")
    assert produce._types(3).partition is not response_schema(produce.API_KEY, 3).cls(
        "PartitionProduceResponse"
    )


def test_message_max_bytes_follows_the_effective_config(tmp_path: Path) -> None:
    """The broker's message.max.bytes is read once per effective config: a new one (a
    reconfigure) is read again, and each answers its own value."""

    def config(max_bytes: int) -> BrokerConfig:
        raw = {
            "log.dirs": str(tmp_path),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "message.max.bytes": str(max_bytes),
        }
        return BrokerConfig.from_raw(raw)

    first, second = config(1000), config(2000)
    assert produce._message_max_bytes(first) == 1000
    assert produce._message_max_bytes(first) == 1000
    assert produce._message_max_bytes(second) == 2000
    assert produce._message_max_bytes(first) == 1000
