"""The connection's frame reader (server/net/connection.py `_read_frame`): whatever
chunks the bytes arrive in (split size prefixes, several frames in one chunk, a frame
larger than one read), it yields the frames the reference framing
(`protocol/framing.FrameDecoder`) finds in the same bytes, and it says where the
peer left mid frame."""

from __future__ import annotations

import asyncio
import random
import struct

import pytest

from shoal.clock import ManualClock
from shoal.protocol import codec
from shoal.protocol.framing import FrameDecoder
from shoal.server.connection_info import ConnectionInfo
from shoal.server.net import connection
from shoal.server.net.connection import MIN_FRAME_BYTES, ConnectionClosed
from tests.support.wire import api_versions_request

MAX_BYTES = 1 << 20


def _frame(body_bytes: int, seed: int) -> bytes:
    body = bytes((seed + i) % 251 for i in range(body_bytes))
    return struct.pack(">i", body_bytes) + body


def _stream(sizes: list[int]) -> bytes:
    return b"".join(_frame(size, i) for i, size in enumerate(sizes))


def _reference(data: bytes) -> list[bytes]:
    decoder = FrameDecoder(max_bytes=MAX_BYTES, min_bytes=MIN_FRAME_BYTES)
    decoder.feed(data)
    return list(decoder.frames())


def _chunks(data: bytes, rng: random.Random) -> list[bytes]:
    chunks, at = [], 0
    while at < len(data):
        size = rng.choice((1, 2, 3, 5, 17, 600, 70_000))
        chunks.append(data[at : at + size])
        at += size
    return chunks


def _read_all(chunks: list[bytes], info: ConnectionInfo) -> list[bytes | None]:
    """Frames read until the end, the chunks fed one per loop pass; a frame not yet
    whole must have its start recorded while the reader waits."""
    frames: list[bytes | None] = []

    async def main() -> None:
        reader = asyncio.StreamReader()
        decoder = FrameDecoder(max_bytes=MAX_BYTES, min_bytes=MIN_FRAME_BYTES)

        async def feed() -> None:
            for chunk in chunks:
                reader.feed_data(chunk)
                await asyncio.sleep(0)
            reader.feed_eof()

        feeder = asyncio.create_task(feed())
        received = connection._Received()
        while True:
            info.busy = False
            frame = await connection._read_frame(
                reader, decoder, received, info, "peer", ManualClock()
            )
            frames.append(frame)
            if frame is None:
                break
            assert info.busy and info.frame_started_ms is None
        await feeder

    asyncio.run(main())
    return frames


@pytest.mark.parametrize("seed", range(6))
def test_frames_in_any_chunks_are_the_reference_framing(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.choice((8, 9, 60, 1100, 200_000)) for _ in range(25)]
    data = _stream(sizes)
    frames = _read_all(_chunks(data, rng), ConnectionInfo(1, "127.0.0.1", 1))
    assert frames == [*_reference(data), None]


def test_all_frames_in_one_chunk() -> None:
    data = _stream([8, 70_000, 9, 8, 100])
    assert _read_all([data], ConnectionInfo(1, "127.0.0.1", 1)) == [*_reference(data), None]


@pytest.mark.parametrize("cut", [1, 3, 4, 5, 19])
def test_the_peer_leaving_mid_frame_ends_the_frames(cut: int) -> None:
    whole = _frame(8, 0)
    data = whole + _frame(16, 1)[:cut]
    assert _read_all([data[:7], data[7:]], ConnectionInfo(1, "127.0.0.1", 1)) == [whole[4:], None]


def test_a_size_out_of_bounds_closes_the_connection() -> None:
    with pytest.raises(ConnectionClosed, match=r"socket\.request\.max\.bytes"):
        _read_all([_frame(8, 0) + struct.pack(">i", MAX_BYTES + 1)], ConnectionInfo(1, "h", 1))
    with pytest.raises(ConnectionClosed):
        _read_all([struct.pack(">i", 3) + b"abc"], ConnectionInfo(1, "h", 1))


def test_a_frame_waiting_for_its_rest_is_marked_started() -> None:
    """Between its size and its last byte, a frame is in hand (`busy`) and started."""
    seen: list[tuple[bool, int | None]] = []
    info = ConnectionInfo(1, "127.0.0.1", 1)

    async def main() -> None:
        reader = asyncio.StreamReader()
        decoder = FrameDecoder(max_bytes=MAX_BYTES, min_bytes=MIN_FRAME_BYTES)
        frame = _frame(100, 3)
        reader.feed_data(frame[:50])
        clock = ManualClock(start_ms=1234)
        task = asyncio.create_task(
            connection._read_frame(reader, decoder, connection._Received(), info, "peer", clock)
        )
        await asyncio.sleep(0)
        seen.append((info.busy, info.frame_started_ms))
        reader.feed_data(frame[50:])
        assert await task == frame[4:]
        seen.append((info.busy, info.frame_started_ms))

    asyncio.run(main())
    assert seen == [(True, 1234), (True, None)]


def test_codec_frames_are_read_back() -> None:
    """A real request frame (codec.encode_request) is read back without its size."""
    request = codec.encode_request(codec.request_header_for(18, 3, 1, "t"), api_versions_request())
    assert _read_all([request], ConnectionInfo(1, "h", 1)) == [request[4:], None]
