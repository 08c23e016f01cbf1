"""Wire-level helpers: send kio requests to a broker from synchronous tests."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from shoal.client import KafkaConnection

T = TypeVar("T")


def call(bootstrap: str, *requests: Any, timeout_s: float = 30.0) -> list[Any]:
    """Send requests in order on one connection; return their responses."""

    async def go(conn: KafkaConnection) -> list[Any]:
        return [await conn.request(r, timeout_s=timeout_s) for r in requests]

    return with_connection(bootstrap, go)


def call1(bootstrap: str, request: Any, timeout_s: float = 30.0) -> Any:
    return call(bootstrap, request, timeout_s=timeout_s)[0]


def with_connection(bootstrap: str, fn: Callable[[KafkaConnection], Awaitable[T]]) -> T:
    """Run `fn(connection)` in a fresh event loop against `bootstrap`."""
    host, _, port = bootstrap.rpartition(":")

    async def main() -> T:
        conn = await KafkaConnection.open(host, int(port), client_id="shoal-test")
        try:
            return await fn(conn)
        finally:
            await conn.close()

    return asyncio.run(main())


# ---- request builders (kio objects; send them with `call`, `call1` or a connection)

_LONG_TIMEOUT = datetime.timedelta(seconds=30)


def api_versions_request() -> Any:
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    return ApiVersionsRequest(client_software_name="shoal-test", client_software_version="1")


def metadata_request(*topics: str) -> Any:
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    return MetadataRequest(
        topics=tuple(MetadataRequestTopic(topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def init_producer_id_request() -> Any:
    """InitProducerId v4 for an idempotent (not transactional) producer."""
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

    return InitProducerIdRequest(transactional_id=None, transaction_timeout=_LONG_TIMEOUT)


def produce_request(topic: str, partition: int, records: bytes | None, *, acks: int = -1) -> Any:
    """Produce v9 of one partition."""
    from kio.schema.produce.v9.request import (
        PartitionProduceData,
        ProduceRequest,
        TopicProduceData,
    )

    return ProduceRequest(
        acks=acks,
        timeout=_LONG_TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=topic,
                partition_data=(PartitionProduceData(index=partition, records=records),),
            ),
        ),
    )


def produced(response: Any) -> Any:
    """The single partition response of a one-partition Produce."""
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


def list_offsets_request(topic: str, partition: int, timestamp: int = -1) -> Any:
    """ListOffsets v7; timestamp -1 latest (high watermark), -2 earliest."""
    from kio.schema.list_offsets.v7.request import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )

    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=(
            ListOffsetsTopic(
                name=topic,
                partitions=(ListOffsetsPartition(partition_index=partition, timestamp=timestamp),),
            ),
        ),
    )


def log_end_offset(bootstrap: str, topic: str, partition: int) -> int:
    response = call1(bootstrap, list_offsets_request(topic, partition, -1))
    (partition_response,) = response.topics[0].partitions
    assert partition_response.error_code == 0, partition_response
    return int(partition_response.offset)


def fetch_request(
    topic: str | uuid.UUID,
    partition: int,
    offset: int,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 * 2**20,
    partition_max_bytes: int = 10 * 2**20,
) -> Any:
    """Fetch v12 by topic name, or v16 when given a topic id."""
    fields: dict[str, Any] = {"fetch_offset": offset, "partition_max_bytes": partition_max_bytes}
    if isinstance(topic, uuid.UUID):
        from kio.schema.fetch.v16 import request as fetch

        topics = (
            fetch.FetchTopic(
                topic_id=topic, partitions=(fetch.FetchPartition(partition=partition, **fields),)
            ),
        )
    else:
        from kio.schema.fetch.v12 import request as fetch  # type: ignore[no-redef]

        topics = (
            fetch.FetchTopic(
                topic=topic, partitions=(fetch.FetchPartition(partition=partition, **fields),)
            ),
        )
    return fetch.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=topics,
        forgotten_topics_data=(),
    )


def fetched(response: Any) -> Any:
    """The single partition of a one-partition Fetch response."""
    assert response.error_code == 0, response
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition
