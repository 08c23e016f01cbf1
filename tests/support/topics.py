"""Topic set-up for wire tests, through kio requests: unique names, create, produce."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping

from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from tests.support.wire import call1

TIMEOUT = datetime.timedelta(seconds=30)


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
    """Create a topic (CreateTopics v7); returns its topic id."""
    response = call1(
        bootstrap,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=1,
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
                    ),
                ),
            ),
            timeout=TIMEOUT,
            validate_only=False,
        ),
    )
    (result,) = response.topics
    assert result.error_code == ErrorCode.none, result
    assert result.topic_id is not None
    return result.topic_id


def produce(bootstrap: str, topic: str, records: bytes, *, partition: int = 0) -> int:
    """Append record batches (Produce v9, acks=-1); returns the base offset."""
    response = call1(
        bootstrap,
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=TIMEOUT,
            topic_data=(
                TopicProduceData(
                    name=topic,
                    partition_data=(PartitionProduceData(index=partition, records=records),),
                ),
            ),
        ),
    )
    (result,) = response.responses[0].partition_responses
    assert result.error_code == ErrorCode.none, result
    return int(result.base_offset)
