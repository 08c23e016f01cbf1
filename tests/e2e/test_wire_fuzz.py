"""The wire fuzzer in the default suite: >= 10k fuzzed frames against a real broker.

Frames come from kio's schemas with one field, length, varint, tag, record batch or
header broken per connection (tests/support/wire_fuzz.py), plus raw bytes; a
confluent-kafka producer and consumer round-trip a health topic throughout. The broker
must stay up, answer the well-formed frames, log no traceback or "handler of X
failed", lose no health record, and keep its memory bounded. The long run is
`python -m bench.fuzz --frames 1000000`.

The seed changes with every run (SHOAL_FUZZ_SEED fixes it) and is printed on failure;
a frame that broke something is kept, minimised, as a regression test next to the
code it broke (tests/unit/protocol/test_nulls.py).
"""

from __future__ import annotations

import os
import socket
import struct
import time

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata12

from shoal.protocol import codec
from tests.support import fuzz_runner, tagged_frames
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, flush_all, producer, read_partitions
from tests.support.wire import api_versions_request, call1
from tests.unit.protocol.test_counts import HUGE_COUNT_FRAME

FRAMES = 10_000
WARM_FRAMES = 3_000
"""Sent first and not counted in the RSS growth: the topics, groups and producer ids
the fuzzed requests create, and the codec's per-version readers, are made then."""
RSS_GROWTH_MAX_KB = 16 * 1024
"""The broker's RSS may grow this much over the 10k frames after the warm-up (about
1,200 connections; measured: under 2 MiB); a leak of 16 kB per connection passes it."""


def test_wire_fuzz(broker: BrokerProcess) -> None:
    seed = int(os.environ.get("SHOAL_FUZZ_SEED", time.time_ns() % 1_000_000))
    fuzz_runner.prepare(broker)
    result = fuzz_runner.run(broker, seed=seed, frames=FRAMES, warm_frames=WARM_FRAMES)
    where = f"seed {seed} (SHOAL_FUZZ_SEED={seed} replays it)"
    assert broker.alive, f"the broker died; {where}"
    assert not result.problems, f"{where}: " + "\n".join(result.problems[:20])
    assert result.frames >= FRAMES
    assert result.responses >= FRAMES // 2, f"only {result.responses} answers; {where}"
    assert result.health_sent > 0, f"the health producer delivered nothing; {where}"
    assert result.health_received == result.health_sent, (
        f"{result.health_sent - result.health_received} health records lost; {where}"
    )
    growth_kb = result.rss_end_kb - result.rss_warm_kb
    assert growth_kb < RSS_GROWTH_MAX_KB, (
        f"RSS grew {growth_kb} kB over {result.connections} connections; {where}"
    )


def test_huge_array_count_closes_only_its_connection(broker: BrokerProcess) -> None:
    """The fuzzer's broker-killing frame (tests/unit/protocol/test_counts.py): 30 bytes
    announcing 9.4e9 array entries; now the connection closes with the reason logged."""
    frame = HUGE_COUNT_FRAME
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        assert sock.recv(64) == b"", "the broker answered a malformed request"
    assert broker.wait_for_log(r"closing connection \d+ .*an array of 9422884781")
    assert broker.alive
    assert call1(broker.bootstrap, api_versions_request()).error_code == ErrorCode.none


def _answer(sock: socket.socket, frame: bytes) -> bytes:
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", _exactly(sock, 4))[0]
    return _exactly(sock, size)


def _exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, f"the broker closed the connection after {len(data)} of {count} bytes"
        data += chunk
    return data


def test_unknown_tagged_fields_get_a_normal_answer(broker: BrokerProcess) -> None:
    """Kafka skips tagged fields it does not know; so does Shoal, in the header, the body
    and a nested struct (tests/unit/protocol/test_unknown_tags.py has the levels), on a
    connection that then carries on; confluent-kafka works alongside."""
    create_topic(broker.bootstrap, "tagged")
    api_versions = tagged_frames.request_frame(tagged_frames.API_VERSIONS)
    end = tagged_frames.HEADER_END
    tagged_api_versions = (
        api_versions[:end]
        + tagged_frames.section(3, 9000)
        + api_versions[end + 1 : -1]
        + tagged_frames.section(0, 1)
    )
    metadata = metadata12.MetadataRequest(
        topics=(metadata12.MetadataRequestTopic(topic_id=None, name="tagged"),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    tagged_metadata = tagged_frames.with_tags(
        tagged_frames.request_frame(metadata), metadata.topics[0], tagged_frames.section(42)
    )
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
        for _ in range(2):  # the connection stays open and keeps answering
            correlation, versions = codec.decode_response(_answer(sock, tagged_api_versions), 18, 3)
            assert (correlation, versions.error_code) == (7, ErrorCode.none)
            assert any(key.api_key == 76 for key in versions.api_keys)  # ShareFetch served
            correlation, topics = codec.decode_response(_answer(sock, tagged_metadata), 3, 12)
            assert [(t.name, t.error_code, len(t.partitions)) for t in topics.topics] == [
                ("tagged", ErrorCode.none, 1)
            ]
    p = producer(broker.bootstrap)
    p.produce("tagged", value=b"after the tags")
    flush_all(p)
    records = read_partitions(broker.bootstrap, "tagged", {0: 1})
    assert [r.value for r in records[0]] == [b"after the tags"]
    assert "Unknown tagged field" not in broker.log_text()
