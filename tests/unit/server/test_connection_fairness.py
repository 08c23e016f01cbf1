"""Connections take turns request by request (server/connection.py): a producer that
pipelines many requests does not hold the loop while another connection waits. A
real broker on a loopback port, in-process: connection A writes PIPELINED Produce
requests of one record each at once, connection B one more to the same partition
right after; B's record lands near the front of the log, not behind all of A's (the
offset B's answer carries is its place in the order the broker served them)."""

from __future__ import annotations

import asyncio
import datetime
import struct
from pathlib import Path

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.protocol import codec
from shoal.server.broker import Broker
from tests.unit.log.batches import make_batch

PRODUCE_KEY = 0
PRODUCE_VERSION = 9
PIPELINED = 300
TOPIC = "fair"
SIZE = struct.Struct(">i")


def produce_frame(correlation_id: int) -> bytes:
    request = ProduceRequest(
        acks=-1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name=TOPIC,
                partition_data=(PartitionProduceData(index=0, records=make_batch(1)),),
            ),
        ),
    )
    header = codec.request_header_for(PRODUCE_KEY, PRODUCE_VERSION, correlation_id, "fairness")
    return codec.encode_request(header, request)


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, int]:
    """(correlation id, base offset) of the next Produce answer."""
    (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
    correlation_id, response = codec.decode_response(
        await reader.readexactly(size), PRODUCE_KEY, PRODUCE_VERSION
    )
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    assert partition.error_code == 0, partition
    return correlation_id, int(partition.base_offset)


def test_a_pipelining_connection_does_not_hold_the_others(tmp_path: Path) -> None:
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }

    async def scenario() -> int:
        broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
        broker.logs.create_topic(TOPIC, partitions=1, configs={})
        await broker.start()
        try:
            a_reader, a_writer = await asyncio.open_connection("127.0.0.1", broker.bound_port)
            b_reader, b_writer = await asyncio.open_connection("127.0.0.1", broker.bound_port)
            a_writer.write(b"".join(produce_frame(i) for i in range(PIPELINED)))
            b_writer.write(produce_frame(PIPELINED))
            await asyncio.gather(a_writer.drain(), b_writer.drain())
            _, b_offset = await asyncio.wait_for(read_answer(b_reader), 30)
            a_answers = [
                await asyncio.wait_for(read_answer(a_reader), 30) for _ in range(PIPELINED)
            ]
            assert [c for c, _ in a_answers] == list(range(PIPELINED)), "A's answers in order"
            offsets = sorted([o for _, o in a_answers] + [b_offset])
            assert offsets == list(range(PIPELINED + 1)), "every record written once"
            for writer in (a_writer, b_writer):
                writer.close()
            return b_offset
        finally:
            await broker.shutdown()

    b_offset = asyncio.run(scenario())
    assert b_offset < PIPELINED // 2, (
        f"B's record went in at offset {b_offset}: A's pipelined requests held the loop"
    )
