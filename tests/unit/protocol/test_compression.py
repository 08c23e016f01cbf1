"""Compressing records the way Kafka's Java clients frame them, and batches built or
re-encoded with a codec: round trips, framing, and the header fields a re-encoded
batch keeps."""

from __future__ import annotations

import os
import struct

import cramjam
import pytest
from kio.records.readers import read_batch

from shoal.protocol.compression import (
    XERIAL_BLOCK_SIZE,
    XERIAL_HEADER_SIZE,
    XERIAL_MAGIC,
    Codec,
    CompressionError,
    compress,
    decompress,
)
from shoal.protocol.record_batch import (
    COMPRESSION_MASK,
    TRANSACTIONAL_MASK,
    encode_batch,
    parse_header,
    validate_produced,
)
from shoal.protocol.records import inflated, recompressed, record_timestamps

TEXT = b"".join(b"key-%d value-%d and some repeated text " % (i, i * 7) for i in range(6000))
NOISE = os.urandom(100_000)
"""Incompressible input: LZ4 stores such blocks raw (the high bit of their size)."""

LEVELS = {
    Codec.NONE: [None],
    Codec.GZIP: [None, -1, 1, 9],
    Codec.SNAPPY: [None],
    Codec.LZ4: [None, 1, 9, 12, 17],
    Codec.ZSTD: [None, -131072, -5, 0, 3, 22],
}
CASES = [(codec, level) for codec, levels in LEVELS.items() for level in levels]


@pytest.mark.parametrize(("codec", "level"), CASES)
@pytest.mark.parametrize("data", [b"x", TEXT, NOISE], ids=["one-byte", "text", "noise"])
def test_round_trip(codec: Codec, level: int | None, data: bytes) -> None:
    packed = compress(data, codec, level)
    assert decompress(packed, codec) == data
    if codec is not Codec.NONE and data is TEXT and level is None:
        assert len(packed) < len(TEXT) // 3


def test_levels_change_the_output() -> None:
    """The level reaches the compressor: the extremes of each leveled codec differ."""
    assert compress(TEXT, Codec.GZIP, 1) != compress(TEXT, Codec.GZIP, 9)
    assert compress(TEXT, Codec.LZ4, 9) != compress(TEXT, Codec.LZ4, 12)
    assert len(compress(TEXT, Codec.ZSTD, -131072)) > len(compress(TEXT, Codec.ZSTD, 22))
    # -1 is gzip's default level (zlib's 6), 9 lz4's (the fast compressor)
    assert compress(TEXT, Codec.GZIP, -1) == compress(TEXT, Codec.GZIP, 6)
    assert compress(TEXT, Codec.GZIP, None) == compress(TEXT, Codec.GZIP, 6)
    assert compress(TEXT, Codec.LZ4, None) == compress(TEXT, Codec.LZ4, 9)


def test_snappy_is_xerial_framed_in_32k_blocks() -> None:
    """snappy-java's SnappyOutputStream framing, which Kafka's Java clients write and
    require: magic, version 1, compatible version 1, then length-prefixed raw blocks of
    at most 32 KiB of input each."""
    packed = compress(TEXT, Codec.SNAPPY)
    assert packed[:XERIAL_HEADER_SIZE] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    position, blocks = XERIAL_HEADER_SIZE, []
    while position < len(packed):
        (length,) = struct.unpack_from(">i", packed, position)
        block = packed[position + 4 : position + 4 + length]
        blocks.append(bytes(cramjam.snappy.decompress_raw(block)))
        position += 4 + length
    assert position == len(packed)
    assert [len(b) for b in blocks[:-1]] == [XERIAL_BLOCK_SIZE] * (len(blocks) - 1)
    assert b"".join(blocks) == TEXT


def test_lz4_frame_has_independent_64k_blocks() -> None:
    """Kafka's Lz4BlockInputStream refuses dependent (linked) blocks: FLG must have the
    block-independence bit, version 01, no content checksum; BD says 64 KiB blocks."""
    for level in (None, 1, 12):
        packed = compress(TEXT, Codec.LZ4, level)
        assert packed[:4] == b"\x04\x22\x4d\x18"
        flg, bd = packed[4], packed[5]
        assert flg >> 6 == 0b01  # version
        assert flg & 0x20  # blocks independent
        assert not flg & 0x04  # no content checksum
        assert not flg & 0x08  # no content size
        assert bd == 0x40  # 64 KiB maximum block


def test_unknown_codec_and_corrupt_data() -> None:
    with pytest.raises(CompressionError):
        compress(b"x", 5)  # type: ignore[arg-type]
    with pytest.raises(CompressionError):
        decompress(b"x", 6)
    for codec in (Codec.GZIP, Codec.LZ4, Codec.ZSTD):
        with pytest.raises(CompressionError):
            decompress(b"\x00not compressed data", codec)
    with pytest.raises(CompressionError):
        decompress(XERIAL_MAGIC + struct.pack(">iii", 1, 1, 99) + b"short", Codec.SNAPPY)


RECORDS = [(b"k%d" % i, b"value %d " % i * 20) for i in range(200)] + [(None, None)]
HEADERS = [[(b"h", b"%d" % i)] for i in range(len(RECORDS))]


def _records_of(batch: bytes) -> list[tuple[bytes | None, bytes | None, int]]:
    """(key, value, offset) of each record, read by kio from the batch inflated."""
    plain = inflated(batch, parse_header(batch))
    decoded, _ = read_batch(plain, 0)
    return [(r.key, r.value, int(r.offset)) for r in decoded.records]


@pytest.mark.parametrize(("codec", "level"), CASES)
def test_encode_batch_with_a_codec(codec: Codec, level: int | None) -> None:
    plain = encode_batch(RECORDS, timestamp_ms=1_700_000_000_000, headers=HEADERS)
    packed = encode_batch(
        RECORDS, timestamp_ms=1_700_000_000_000, headers=HEADERS, codec=codec, level=level
    )
    (header,) = validate_produced(packed, max_batch_bytes=1 << 20)  # CRC, length, count
    assert header.compression == codec
    assert header.records_count == len(RECORDS)
    assert _records_of(packed) == _records_of(plain)
    assert inflated(packed, header) == plain
    if codec is not Codec.NONE and level is None:
        assert len(packed) < len(plain) // 3
    assert [t for _, t in record_timestamps(packed, header)] == [1_700_000_000_000] * len(RECORDS)


@pytest.mark.parametrize("source", list(Codec))
@pytest.mark.parametrize("target", list(Codec))
def test_recompressed_keeps_every_header_field_but_codec_length_and_crc(
    source: Codec, target: Codec
) -> None:
    batch = encode_batch(
        RECORDS,
        timestamp_ms=1_700_000_000_000,
        attributes=TRANSACTIONAL_MASK,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=1000,
        partition_leader_epoch=3,
        headers=HEADERS,
        codec=source,
    )
    before = parse_header(batch)
    after_bytes = recompressed(batch, before, target, None)
    (after,) = validate_produced(after_bytes, max_batch_bytes=1 << 20)
    assert after.compression == target
    assert after.attributes & ~COMPRESSION_MASK == before.attributes & ~COMPRESSION_MASK
    kept = ("base_offset", "partition_leader_epoch", "magic", "last_offset_delta",
            "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
            "base_sequence", "records_count")  # fmt: skip
    assert {f: getattr(after, f) for f in kept} == {f: getattr(before, f) for f in kept}
    assert _records_of(after_bytes) == _records_of(batch)
