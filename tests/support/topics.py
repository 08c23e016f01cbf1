"""Topic set-up for wire tests, through the client's request builders: unique names,
create, produce."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from shoal.client import requests
from tests.support.wire import call1


def topic_name(prefix: str) -> str:
    """A topic name no other test uses, even across broker restarts."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
) -> uuid.UUID:
    """Create a topic (CreateTopics, replication factor 1); returns its topic id."""
    call = requests.create_topic(name, partitions=partitions, replication_factor=1, configs=configs)
    (result,) = call1(bootstrap, call).topics
    assert result.error_code == ErrorCode.none, result
    assert result.topic_id is not None
    return result.topic_id  # type: ignore[no-any-return]


def produce(bootstrap: str, topic: str, records: bytes, *, partition: int = 0) -> int:
    """Append record batches (acks=-1); returns the base offset."""
    response = call1(bootstrap, requests.produce({(topic, partition): records}))
    (result,) = response.responses[0].partition_responses
    assert result.error_code == ErrorCode.none, result
    return int(result.base_offset)
