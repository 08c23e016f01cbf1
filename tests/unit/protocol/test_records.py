"""Record offsets and timestamps inside v2 batches, for every compression codec."""

from __future__ import annotations

import struct

import cramjam
import pytest

from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import BatchError, parse_header
from shoal.protocol.records import first_at_or_after, record_timestamps
from tests.support.batches import HEADER, Record, build_batch, encode_record

BASE = 1_700_000_000_000
RECORDS = [Record(b"a" * 40, timestamp_delta=7), Record(b"b" * 40), Record(b"c", timestamp_delta=3)]


def xerial(data: bytes) -> bytes:
    """Kafka's Java clients' snappy framing: magic, version, compat, then blocks."""
    block = bytes(cramjam.snappy.compress_raw(data))
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block


CODECS = {
    2: lambda data: bytes(cramjam.snappy.compress_raw(data)),
    3: lambda data: bytes(cramjam.lz4.compress(data)),
    4: lambda data: bytes(cramjam.zstd.compress(data)),
}


def compressed_batch(codec: int, payload: bytes, *, base_offset: int = 100) -> bytes:
    """A batch of RECORDS whose payload is `payload` (already compressed by `codec`)."""
    uncompressed = build_batch(RECORDS, base_offset=base_offset, base_timestamp=BASE)
    fields = list(HEADER.unpack_from(uncompressed))
    fields[1] = HEADER.size - 12 + len(payload)  # batch length
    fields[5] = codec  # attributes
    return HEADER.pack(*fields) + payload  # the CRC is not checked here


def plain_payload() -> bytes:
    return b"".join(encode_record(r, i) for i, r in enumerate(RECORDS))


EXPECTED = [(100, BASE + 7), (101, BASE), (102, BASE + 3)]


def test_uncompressed_and_gzip() -> None:
    for compression in (0, 1):
        batch = build_batch(RECORDS, base_offset=100, base_timestamp=BASE, compression=compression)
        assert list(record_timestamps(batch, parse_header(batch))) == EXPECTED


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_other_codecs(codec: int) -> None:
    batch = compressed_batch(codec, CODECS[codec](plain_payload()))
    assert list(record_timestamps(batch, parse_header(batch))) == EXPECTED


def test_snappy_with_java_framing() -> None:
    batch = compressed_batch(2, xerial(plain_payload()))
    assert list(record_timestamps(batch, parse_header(batch))) == EXPECTED


def test_batch_inside_a_larger_buffer() -> None:
    first = build_batch([b"x"], base_offset=99, base_timestamp=BASE)
    second = build_batch(RECORDS, base_offset=100, base_timestamp=BASE)
    buffer = first + second
    header = parse_header(buffer, len(first))
    assert list(record_timestamps(buffer, header)) == EXPECTED


def test_log_append_time_gives_every_record_the_batch_time() -> None:
    batch = bytearray(build_batch(RECORDS, base_offset=100, base_timestamp=BASE))
    struct.pack_into(">h", batch, 21, 0x08)  # timestamp type: LogAppendTime
    struct.pack_into(">q", batch, 35, BASE + 500)  # max timestamp = append time
    header = parse_header(batch)
    assert list(record_timestamps(batch, header)) == [(o, BASE + 500) for o in (100, 101, 102)]


def test_first_at_or_after() -> None:
    batch = build_batch(RECORDS, base_offset=100, base_timestamp=BASE)
    header = parse_header(batch)
    assert first_at_or_after(batch, header, timestamp_ms=BASE + 1, min_offset=0) == (100, BASE + 7)
    assert first_at_or_after(batch, header, timestamp_ms=BASE, min_offset=101) == (101, BASE)
    assert first_at_or_after(batch, header, timestamp_ms=BASE + 4, min_offset=101) is None


@pytest.mark.parametrize(
    "payload", [b"\xff\xff\xff", bytes(cramjam.zstd.compress(b"short")), b"\x82SNAPPY\x00junk"]
)
def test_corrupt_payloads(payload: bytes) -> None:
    codec = 2 if payload.startswith(b"\x82") else 4 if payload[:1] == b"\x28" else 3
    batch = compressed_batch(codec, payload)
    with pytest.raises(BatchError) as raised:
        list(record_timestamps(batch, parse_header(batch)))
    assert raised.value.code == ErrorCode.corrupt_message


def test_truncated_records() -> None:
    batch = compressed_batch(0, plain_payload()[:-5])
    with pytest.raises(BatchError, match="truncated"):
        list(record_timestamps(batch, parse_header(batch)))
