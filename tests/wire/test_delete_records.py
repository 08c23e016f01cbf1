"""DeleteRecords (21) v0-v2: the log start offset moves, ListOffsets and Fetch follow."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)

from shoal.protocol.schema import request_schema
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1


def delete_before(
    bootstrap: str, version: int, topic: str, *partitions: tuple[int, int]
) -> list[Any]:
    schema = request_schema(21, version)
    request = schema.make(
        "DeleteRecordsRequest",
        topics=(
            schema.make(
                "DeleteRecordsTopic",
                name=topic,
                partitions=tuple(
                    schema.make("DeleteRecordsPartition", partition_index=p, offset=o)
                    for p, o in partitions
                ),
            ),
        ),
        timeout=datetime.timedelta(seconds=10),
    )
    (result,) = call1(bootstrap, request).topics
    assert result.name == topic
    return list(result.partitions)


def earliest(bootstrap: str, topic: str) -> int:
    response = call1(
        bootstrap,
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name=topic,
                    partitions=(ListOffsetsPartition(partition_index=0, timestamp=-2),),
                ),
            ),
        ),
    )
    answer = response.topics[0].partitions[0]
    assert answer.error_code == ErrorCode.none
    return int(answer.offset)


def ten_records(bootstrap: str) -> str:
    name = topic_name("dr")
    create_topic(bootstrap, name)
    produce(bootstrap, name, values_batch(5))
    produce(bootstrap, name, values_batch(5))
    return name


@pytest.mark.parametrize("version", [0, 2])
def test_moves_the_low_watermark(broker: BrokerProcess, version: int) -> None:
    name = ten_records(broker.bootstrap)
    (result,) = delete_before(broker.bootstrap, version, name, (0, 7))
    assert (result.partition_index, result.error_code, result.low_watermark) == (
        0,
        ErrorCode.none,
        7,
    )
    assert earliest(broker.bootstrap, name) == 7
    (lower,) = delete_before(broker.bootstrap, version, name, (0, 3))  # never moves back
    assert (lower.error_code, lower.low_watermark) == (ErrorCode.none, 7)
    (everything,) = delete_before(broker.bootstrap, version, name, (0, -1))  # -1 = HWM
    assert (everything.error_code, everything.low_watermark) == (ErrorCode.none, 10)
    assert earliest(broker.bootstrap, name) == 10


def test_errors(broker: BrokerProcess) -> None:
    name = ten_records(broker.bootstrap)
    results = delete_before(broker.bootstrap, 1, name, (0, 11), (0, -5), (3, 1))
    assert [(r.partition_index, r.error_code, r.low_watermark) for r in results] == [
        (0, ErrorCode.offset_out_of_range, -1),
        (0, ErrorCode.offset_out_of_range, -1),
        (3, ErrorCode.unknown_topic_or_partition, -1),
    ]
    assert earliest(broker.bootstrap, name) == 0
    (missing,) = delete_before(broker.bootstrap, 2, topic_name("dr-missing"), (0, 0))
    assert missing.error_code == ErrorCode.unknown_topic_or_partition
