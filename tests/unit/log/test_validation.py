"""What a topic's settings ask of produced batches (log/validation.py): one batch per
partition, broker-side recompression, keys on compacted topics; and the untouched
path, which must not read a single record."""

from __future__ import annotations

import struct
from typing import Any

import crc32c
import pytest
from kio.records.readers import read_batch

from shoal import limits
from shoal.config import TOPIC_KEYS
from shoal.log.settings import LogConfig
from shoal.log.validation import MORE_THAN_ONE_BATCH, reads_records, validate
from shoal.protocol import compression
from shoal.protocol.compression import Codec
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    TRANSACTIONAL_MASK,
    BatchError,
    BatchHeader,
    encode_batch,
    parse_header,
    validate_produced,
)
from shoal.protocol.records import inflated
from shoal.server.handlers.produce import reads_off_loop

TS = 1_700_000_000_000
KEYED = [(b"key-%d" % i, b"value %d " % i * 10) for i in range(100)]
NAMES = {codec: name for name, codec in compression.CODEC_NAMES.items()}


def settings(**config: str) -> LogConfig:
    """The log settings of a topic with these overrides (strings, as a client sets them)."""
    return LogConfig.from_config({k: TOPIC_KEYS[k].parse(v) for k, v in config.items()})


def produced(records: list[tuple[bytes | None, bytes | None]], **kw: Any) -> bytes:
    return encode_batch(records, timestamp_ms=TS, **kw)


def run(batch: bytes, config: LogConfig, max_batch_bytes: int = 1 << 20) -> tuple[bytes, Any]:
    headers = validate_produced(batch, max_batch_bytes=1 << 20)
    return validate(batch, headers, config, topic="t", partition=3, max_batch_bytes=max_batch_bytes)


def records_of(batch: bytes) -> list[tuple[bytes | None, bytes | None, int, int]]:
    decoded, _ = read_batch(inflated(batch, parse_header(batch)), 0)
    return [(r.key, r.value, int(r.offset), r.timestamp) for r in decoded.records]


def garbage_codec_batch(codec: Codec) -> bytes:
    """A batch whose header says `codec` but whose records are not compressed data at
    all, with a valid CRC: only a reader of the records can tell."""
    batch = bytearray(produced(KEYED))
    struct.pack_into(">h", batch, 21, codec)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


@pytest.mark.parametrize("codec", list(Codec))
def test_producer_and_same_codec_keep_the_batch_unread(codec: Codec) -> None:
    """`producer`, or the topic's own codec: the same bytes and headers come back, and
    the records are never read (garbage inside passes)."""
    batch = garbage_codec_batch(codec)
    headers = validate_produced(batch, max_batch_bytes=1 << 20)
    for config in (settings(), settings(**{"compression.type": NAMES[codec]})):
        assert not reads_records(headers, config)
        out, out_headers = validate(
            batch, headers, config, topic="t", partition=0, max_batch_bytes=1 << 20
        )
        assert out is batch and out_headers is headers


def test_same_codec_at_another_level_is_not_recompressed() -> None:
    batch = produced(KEYED, codec=Codec.ZSTD, level=1)
    out, _ = run(batch, settings(**{"compression.type": "zstd", "compression.zstd.level": "19"}))
    assert out is batch


def test_more_than_one_batch_is_refused_whatever_the_codecs() -> None:
    for config in (settings(), settings(**{"compression.type": "gzip"})):
        with pytest.raises(BatchError) as refused:
            run(produced(KEYED) + produced(KEYED), config)
        assert refused.value.code == ErrorCode.invalid_record
        assert str(refused.value) == MORE_THAN_ONE_BATCH
        assert not refused.value.answered


@pytest.mark.parametrize("source", list(Codec))
@pytest.mark.parametrize("target", list(Codec))
def test_recompression_to_the_topics_codec(source: Codec, target: Codec) -> None:
    batch = produced(
        KEYED,
        codec=source,
        attributes=TRANSACTIONAL_MASK,
        producer_id=77,
        producer_epoch=4,
        base_sequence=900,
    )
    out, (header,) = run(batch, settings(**{"compression.type": NAMES[target]}))
    assert header.compression == target
    assert (out is batch) == (source == target)
    before = parse_header(batch)
    kept = ("producer_id", "producer_epoch", "base_sequence", "records_count",
            "last_offset_delta", "base_timestamp", "max_timestamp")  # fmt: skip
    assert [getattr(header, f) for f in kept] == [getattr(before, f) for f in kept]
    assert header.attributes & ~COMPRESSION_MASK == before.attributes & ~COMPRESSION_MASK
    assert records_of(out) == records_of(batch)
    assert validate_produced(out, max_batch_bytes=1 << 20) == [header]  # CRC and length


def test_the_topics_level_is_used() -> None:
    batch = produced(KEYED)
    fast, _ = run(batch, settings(**{"compression.type": "gzip", "compression.gzip.level": "1"}))
    best, _ = run(batch, settings(**{"compression.type": "gzip", "compression.gzip.level": "9"}))
    assert fast[HEADER_SIZE:] == compression.compress(batch[HEADER_SIZE:], Codec.GZIP, 1)
    assert best[HEADER_SIZE:] == compression.compress(batch[HEADER_SIZE:], Codec.GZIP, 9)
    assert fast != best


def test_a_batch_grown_past_max_message_bytes_is_refused() -> None:
    batch = produced(KEYED, codec=Codec.ZSTD)
    plain_size = len(produced(KEYED))
    config = settings(**{"compression.type": "uncompressed"})
    assert run(batch, config, max_batch_bytes=plain_size)[1][0].size == plain_size
    with pytest.raises(BatchError) as refused:
        run(batch, config, max_batch_bytes=plain_size - 1)
    assert refused.value.code == ErrorCode.message_too_large


REASON = "Compacted topic cannot accept message without key in topic partition t-3"


@pytest.mark.parametrize("codec", list(Codec))
@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_compacted_topics_refuse_records_without_a_key(codec: Codec, policy: str) -> None:
    records = [*KEYED[:5], (None, b"a"), KEYED[6], (None, b"b"), (None, None), (None, b"c")]
    with pytest.raises(BatchError) as refused:
        run(produced(records, codec=codec), settings(**{"cleanup.policy": policy}))
    error = refused.value
    assert error.code == ErrorCode.invalid_record
    assert error.answered
    assert error.record_errors == tuple((i, REASON) for i in (5, 7, 8, 9))
    assert str(error) == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        "showing the first three errors at most: "
        f"[RecordError(batchIndex=5, message='{REASON}'), "
        f"RecordError(batchIndex=7, message='{REASON}'), "
        f"RecordError(batchIndex=8, message='{REASON}')]"
    )


def test_compacted_topics_take_keyed_records_and_tombstones() -> None:
    batch = produced([*KEYED, (b"gone", None)], codec=Codec.LZ4)
    out, _ = run(batch, settings(**{"cleanup.policy": "compact"}))
    assert out is batch
    compressed, (header,) = run(
        batch, settings(**{"cleanup.policy": "compact", "compression.type": "gzip"})
    )
    assert header.compression == Codec.GZIP
    assert records_of(compressed) == records_of(batch)


def test_keys_are_not_read_on_a_topic_that_does_not_compact() -> None:
    batch = produced([(None, b"a")] * 3)
    assert run(batch, settings(**{"cleanup.policy": "delete"}))[0] is batch


def _with_count(batch: bytes, count: int) -> bytes:
    patched = bytearray(batch)
    struct.pack_into(">ii", patched, 23, count - 1, 0)  # last offset delta; ts kept below
    patched[27:35] = batch[27:35]
    struct.pack_into(">i", patched, 57, count)
    struct.pack_into(">I", patched, 17, crc32c.crc32c(bytes(patched[21:])))
    return bytes(patched)


def test_records_that_do_not_match_the_count_are_invalid() -> None:
    """Kafka's record reader: fewer records than counted is an invalid structure, more
    bytes than counted records a wrong declared size; both INVALID_RECORD."""
    batch = produced(KEYED[:4])
    for count in (3, 5):
        with pytest.raises(BatchError) as refused:
            run(_with_count(batch, count), settings(**{"cleanup.policy": "compact"}))
        assert refused.value.code == ErrorCode.invalid_record


def test_log_config_takes_the_codec_and_its_level() -> None:
    assert (settings().compression, settings().compression_level) == (None, None)
    cases = {
        "uncompressed": (Codec.NONE, None),
        "snappy": (Codec.SNAPPY, None),
        "gzip": (Codec.GZIP, -1),
        "lz4": (Codec.LZ4, 9),
        "zstd": (Codec.ZSTD, 3),
    }
    for name, expected in cases.items():
        config = settings(**{"compression.type": name})
        assert (config.compression, config.compression_level) == expected
    config = settings(**{"compression.type": "zstd", "compression.zstd.level": "-7"})
    assert config.compression_level == -7


def test_config_ranges_are_the_codecs() -> None:
    """The level keys' bounds and defaults are protocol/compression.py's."""
    gzip = TOPIC_KEYS["compression.gzip.level"]
    lz4 = TOPIC_KEYS["compression.lz4.level"]
    zstd = TOPIC_KEYS["compression.zstd.level"]
    assert gzip.default == compression.GZIP_LEVEL_DEFAULT
    assert gzip.check is not None
    assert [v for v in range(-3, 12) if gzip.check(v) is None] == [
        compression.GZIP_LEVEL_DEFAULT,
        *range(compression.GZIP_LEVEL_MIN, compression.GZIP_LEVEL_MAX + 1),
    ]
    assert (lz4.min, lz4.max, lz4.default) == (
        compression.LZ4_LEVEL_MIN,
        compression.LZ4_LEVEL_MAX,
        compression.LZ4_LEVEL_DEFAULT,
    )
    assert (zstd.min, zstd.max, zstd.default) == (
        compression.ZSTD_LEVEL_MIN,
        compression.ZSTD_LEVEL_MAX,
        compression.ZSTD_LEVEL_DEFAULT,
    )


def test_big_batches_are_read_off_the_event_loop() -> None:
    """limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX: up to it on the loop, beyond it in a
    worker thread; a batch that needs no reading never leaves the loop."""
    header: list[BatchHeader] = [parse_header(produced(KEYED))]
    limit = limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX
    recompress = settings(**{"compression.type": "gzip"})
    compact = settings(**{"cleanup.policy": "compact"})
    for config in (recompress, compact):
        assert not reads_off_loop(limit, header, config)
        assert reads_off_loop(limit + 1, header, config)
    assert not reads_off_loop(10 * limit, header, settings())
