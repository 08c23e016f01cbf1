"""ListOffsets to each partition's leader, for either driver: the offset of many
partitions at one timestamp each, routed and retried by `to_leaders`.

`list_offsets` (blocking `Client`) and `list_offsets_async` (`AsyncClient`) return
`{(topic, partition): offset}`; a partition the broker answers with an error raises
`KafkaError` naming it. `offset_errors` and `offsets_of` are the two readers both
share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shoal.client import requests
from shoal.client.aio import AsyncClient
from shoal.client.errors import ErrorCode, KafkaError, check
from shoal.client.metadata import TopicPartition
from shoal.client.sync import Client


def offset_errors(response: Any) -> dict[TopicPartition, int]:
    """The error code of each partition of a ListOffsets response."""
    return {
        (str(t.name), int(p.partition_index)): int(p.error_code)
        for t in response.topics
        for p in t.partitions
    }


def offsets_of(
    answered: Mapping[TopicPartition, Any], wanted: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """The offset of each wanted partition from the response that answered it;
    `KafkaError` for a partition answered with an error, or not answered."""
    offsets: dict[TopicPartition, int] = {}
    for tp in sorted(wanted):
        context = f"ListOffsets of {tp[0]}-{tp[1]}"
        response = answered[tp]
        for topic in response.topics:
            for p in topic.partitions:
                if (str(topic.name), int(p.partition_index)) == tp:
                    check(p.error_code, None, context=context)
                    offsets[tp] = int(p.offset)
        if tp not in offsets:
            raise KafkaError(
                ErrorCode.unknown_server_error,
                "the leader sent no answer for this partition",
                context=context,
            )
    return offsets


def list_offsets(
    client: Client,
    timestamps: Mapping[TopicPartition, int],
    *,
    isolation_level: int = requests.READ_UNCOMMITTED,
) -> dict[TopicPartition, int]:
    """The offset of each partition at its timestamp (`requests.EARLIEST_TIMESTAMP`,
    `LATEST_TIMESTAMP` or epoch ms), asked of each leader."""
    answered = client.to_leaders(
        timestamps,
        lambda tps: requests.list_offsets(
            {tp: timestamps[tp] for tp in tps}, isolation_level=isolation_level
        ),
        offset_errors,
    )
    return offsets_of(answered, timestamps)


async def list_offsets_async(
    client: AsyncClient,
    timestamps: Mapping[TopicPartition, int],
    *,
    isolation_level: int = requests.READ_UNCOMMITTED,
) -> dict[TopicPartition, int]:
    """`list_offsets` with the asyncio client."""
    answered = await client.to_leaders(
        timestamps,
        lambda tps: requests.list_offsets(
            {tp: timestamps[tp] for tp in tps}, isolation_level=isolation_level
        ),
        offset_errors,
    )
    return offsets_of(answered, timestamps)
