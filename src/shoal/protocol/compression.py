"""Record compression: Kafka's codec ids and levels, and the one compressor and the one
decompressor of a batch's records (the bytes after its 61-byte header). Sans-I/O.

Codec ids are the low three bits of a v2 batch's attributes (Kafka's CompressionType):
0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. cramjam does the work; the framing is what
Kafka's Java clients write and read (clients' org.apache.kafka.common.compress):

- gzip: a gzip member (RFC 1952). Level -1 is zlib's default (6); 1..9 as zlib.
- snappy: xerial snappy-java's stream framing (SnappyOutputStream), which is what the
  Java producer and broker write: the 8-byte magic `\\x82SNAPPY\\x00`, two big-endian
  int32 (version 1, compatible version 1), then per 32 KiB of input a big-endian int32
  length and a raw snappy block. Decoding also takes a raw snappy block (librdkafka
  and some other clients write that). Snappy has no level.
- lz4: one LZ4 frame with independent 64 KiB blocks, no content size and no content
  checksum (Kafka's Lz4BlockInputStream refuses linked blocks). Kafka's level 9 (its
  default) selects the fast compressor; any other level the high-compression one at
  that level, as Kafka's Lz4BlockOutputStream does (lz4's own levels stop at 12).
- zstd: one zstd frame at the level given (-131072..22; 0 is zstd's default, 3).

The level ranges and defaults are Kafka's (CompressionType, KIP-390); the config keys
that hold them are checked in shoal.config.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam


class Codec(IntEnum):
    """Kafka's compression ids (a batch's attributes & 7)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


CODEC_NAMES = {"uncompressed": Codec.NONE, "gzip": Codec.GZIP, "snappy": Codec.SNAPPY,
               "lz4": Codec.LZ4, "zstd": Codec.ZSTD}  # fmt: skip
"""`compression.type`'s values that name a codec (the other one is `producer`)."""

GZIP_LEVEL_MIN, GZIP_LEVEL_MAX, GZIP_LEVEL_DEFAULT = 1, 9, -1
LZ4_LEVEL_MIN, LZ4_LEVEL_MAX, LZ4_LEVEL_DEFAULT = 1, 17, 9
ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX, ZSTD_LEVEL_DEFAULT = -131072, 22, 3

DEFAULT_LEVELS = {Codec.GZIP: GZIP_LEVEL_DEFAULT, Codec.LZ4: LZ4_LEVEL_DEFAULT,
                  Codec.ZSTD: ZSTD_LEVEL_DEFAULT}  # fmt: skip
"""Kafka's default level per codec that has levels."""

_ZLIB_DEFAULT_LEVEL = 6
_LZ4_FAST = 0
"""cramjam's LZ4 frame level for the fast (non-HC) compressor."""

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_VERSIONS = struct.pack(">ii", 1, 1)
XERIAL_HEADER_SIZE = len(XERIAL_MAGIC) + len(_XERIAL_VERSIONS)
XERIAL_BLOCK_SIZE = 32 * 1024
"""Input bytes per snappy block: snappy-java's SnappyOutputStream default."""
_BLOCK_LENGTH = struct.Struct(">i")


class CompressionError(ValueError):
    """Data that does not decompress with its codec, or an unknown codec id."""


def compress(data: bytes | bytearray | memoryview, codec: Codec, level: int | None = None) -> bytes:
    """`data` compressed with `codec` at `level` (None: Kafka's default for the codec;
    snappy and none take no level), framed as Kafka's Java clients frame it."""
    match codec:
        case Codec.NONE:
            return bytes(data)
        case Codec.GZIP:
            if level is None or level == GZIP_LEVEL_DEFAULT:
                level = _ZLIB_DEFAULT_LEVEL
            return bytes(cramjam.gzip.compress(data, level=level))
        case Codec.SNAPPY:
            view = memoryview(data)
            parts = [XERIAL_MAGIC, _XERIAL_VERSIONS]
            for start in range(0, len(view), XERIAL_BLOCK_SIZE):
                block = cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE])
                parts += (_BLOCK_LENGTH.pack(len(block)), bytes(block))
            return b"".join(parts)
        case Codec.LZ4:
            if level is None or level == LZ4_LEVEL_DEFAULT:
                level = _LZ4_FAST
            compressor = cramjam.lz4.Compressor(
                level=level, content_checksum=False, block_linked=False
            )
            compressor.compress(data)
            return bytes(compressor.finish())
        case Codec.ZSTD:
            return bytes(
                cramjam.zstd.compress(data, level=ZSTD_LEVEL_DEFAULT if level is None else level)
            )
    raise CompressionError(f"unknown compression codec {codec}")


def decompress(data: bytes | bytearray | memoryview, codec: int) -> bytes:
    """`data` inflated per `codec` (an id from a batch's attributes); CompressionError
    when it does not inflate or the id names no codec."""
    try:
        match codec:
            case Codec.NONE:
                return bytes(data)
            case Codec.GZIP:
                return bytes(cramjam.gzip.decompress(data))
            case Codec.SNAPPY:
                return _snappy(bytes(data))
            case Codec.LZ4:
                return bytes(cramjam.lz4.decompress(data))
            case Codec.ZSTD:
                return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, struct.error) as exc:
        raise CompressionError(str(exc)) from exc
    raise CompressionError(f"unknown compression codec {codec}")


def _snappy(payload: bytes) -> bytes:
    if not payload.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(payload))
    blocks = []
    position = XERIAL_HEADER_SIZE
    while position < len(payload):
        (length,) = _BLOCK_LENGTH.unpack_from(payload, position)
        position += _BLOCK_LENGTH.size
        if length < 0 or position + length > len(payload):
            raise CompressionError(f"snappy block of {length} bytes overruns the data")
        blocks.append(bytes(cramjam.snappy.decompress_raw(payload[position : position + length])))
        position += length
    return b"".join(blocks)
