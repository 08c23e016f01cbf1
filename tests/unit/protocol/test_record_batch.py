"""Record-batch header parsing, validation and re-stamping (protocol/record_batch.py)."""

from __future__ import annotations

import datetime
import io

import pytest
from kio.records.schema import NewRecordBatch, RecordHeader
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from shoal.protocol import record_batch as rb
from shoal.protocol.errors import ErrorCode
from tests.support.batches import Record, build_batch, decode_records, values_batch


def test_parse_header_fields() -> None:
    batch = build_batch(
        [Record(b"a", key=b"k"), Record(b"b", timestamp_delta=5)],
        base_offset=7,
        base_timestamp=1000,
        producer_id=42,
        producer_epoch=3,
        base_sequence=9,
    )
    header = rb.parse_header(batch)
    assert (header.base_offset, header.last_offset, header.next_offset) == (7, 8, 9)
    assert header.records_count == 2
    assert (header.base_timestamp, header.max_timestamp) == (1000, 1005)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 9)
    assert header.last_sequence == 10
    assert header.size == len(batch)
    assert not header.is_control and not header.is_transactional
    assert rb.compute_crc(batch, header) == header.crc


def test_last_sequence_wraps() -> None:
    batch = values_batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    assert rb.parse_header(batch).last_sequence == 0


def test_validate_accepts_several_batches() -> None:
    data = values_batch(3) + values_batch(2, prefix=b"w")
    headers = rb.validate_produced(data, max_batch_bytes=1 << 20)
    assert [h.records_count for h in headers] == [3, 2]
    assert headers[1].position == headers[0].size
    # The validator builds its headers itself: the same values and type parse_header gives.
    assert headers == [rb.parse_header(data, 0), rb.parse_header(data, headers[0].size)]
    assert all(type(h) is rb.BatchHeader for h in headers)


def test_restamped_is_replace_in_one_step() -> None:
    header = rb.parse_header(values_batch(3, producer_id=5, producer_epoch=1, base_sequence=4))
    stored = rb.restamped(header, position=4096, base_offset=77, leader_epoch=3)
    assert type(stored) is rb.BatchHeader
    assert stored == header._replace(position=4096, base_offset=77, partition_leader_epoch=3)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", ErrorCode.invalid_record),
        (values_batch(2)[:40], ErrorCode.invalid_record),  # Kafka sees no batch at all
        (values_batch(2)[:-3], ErrorCode.invalid_record),
        (values_batch(2) + values_batch(2)[:-3], ErrorCode.corrupt_message),
        (
            values_batch(2)[:8] + (13).to_bytes(4, "big") + values_batch(2)[12:],
            ErrorCode.corrupt_message,
        ),
        (values_batch(2, magic=3), ErrorCode.corrupt_message),
        (values_batch(2, magic=3)[:20], ErrorCode.corrupt_message),
        (values_batch(2, magic=-1), ErrorCode.corrupt_message),
        (values_batch(2, corrupt_crc=True), ErrorCode.corrupt_message),
        (values_batch(2, magic=1), ErrorCode.invalid_record),
        (values_batch(2, control=True), ErrorCode.invalid_record),
        (build_batch([b"x" * 2000]), ErrorCode.message_too_large),
    ],
    ids=[
        "empty",
        "short-header",
        "truncated",
        "second-truncated",
        "size-below-14",
        "magic-3",
        "magic-3-short",
        "magic-negative",
        "bad-crc",
        "magic-1",
        "control",
        "too-large",
    ],
)
def test_validate_refuses(data: bytes, code: str) -> None:
    with pytest.raises(rb.BatchError) as info:
        rb.validate_produced(data, max_batch_bytes=1024)
    assert info.value.code == code
    # Kafka 4.2 answers only a magic outside 0..2 with its message (Produce v8+)
    assert info.value.answered == (code == ErrorCode.corrupt_message and "magic" in str(info.value))


def test_an_out_of_range_magic_is_answered_in_kafkas_words() -> None:
    with pytest.raises(rb.BatchError) as info:
        rb.validate_produced(values_batch(2, magic=3), max_batch_bytes=1024)
    assert (str(info.value), info.value.answered) == ("Invalid magic found in record: 3", True)


def test_records_count_must_match_offset_delta() -> None:
    batch = bytearray(values_batch(3))
    batch[57:61] = (5).to_bytes(4, "big")  # records_count inside the CRC: fix the CRC too
    header = rb.parse_header(batch)
    batch[17:21] = rb.compute_crc(batch, header).to_bytes(4, "big")
    with pytest.raises(rb.BatchError, match="5 records"):
        rb.validate_produced(bytes(batch), max_batch_bytes=1 << 20)


def test_stamp_prefix_keeps_crc_valid_and_records_intact() -> None:
    batch = build_batch([Record(b"hello", key=b"k", headers=[("h", b"v")])])
    header = rb.parse_header(batch)
    stamped = (
        rb.stamp_prefix(header, base_offset=1234, leader_epoch=7) + batch[rb.STAMPED_PREFIX_SIZE :]
    )
    restamped = rb.parse_header(stamped)
    assert (restamped.base_offset, restamped.partition_leader_epoch) == (1234, 7)
    assert rb.compute_crc(stamped, restamped) == restamped.crc
    assert decode_records(stamped)[0].offset == 1234
    assert decode_records(stamped)[0].headers == (("h", b"v"),)


def test_log_append_time_rewrites_crc() -> None:
    batch = values_batch(2, base_timestamp=10)
    header = rb.parse_header(batch)
    patched = rb.with_log_append_time(batch, header, now_ms=99_999)
    new = rb.parse_header(patched)
    assert new.max_timestamp == 99_999
    assert new.attributes & rb.TIMESTAMP_TYPE_MASK
    assert rb.compute_crc(patched, new) == new.crc


def test_iter_headers_stops_at_partial_batch() -> None:
    data = values_batch(2) + values_batch(3)
    full = rb.iter_headers(data, base_position=100)
    assert [h.position for h in full] == [100, 100 + rb.parse_header(data).size]
    assert len(rb.iter_headers(data[:-1])) == 1
    assert rb.peek_size(data, 0) == rb.parse_header(data).size
    assert rb.peek_size(data[:5], 0) is None


def _kio_batch(
    records: list[tuple[bytes | None, bytes | None]],
    *,
    timestamp_ms: int,
    headers: list[rb.RecordHeaders] | None = None,
    **header: int,
) -> bytes:
    """The reference: kio's batch writer, as the coordinator sink, the transaction
    markers, the DLQ copies and the simulator used it."""
    stamp = TZAwareMicros.parse(
        datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
        + datetime.timedelta(milliseconds=timestamp_ms)
    )
    entries = tuple(
        KioRecord(
            attributes=i8(0),
            timestamp=stamp,
            offset=i64(n),
            key=k,
            value=v,
            headers=()
            if headers is None
            else tuple(RecordHeader(key=hk, value=hv) for hk, hv in headers[n]),
        )
        for n, (k, v) in enumerate(records)
    )
    buffer = io.BytesIO()
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=i64(header.get("producer_id", -1)),
            producer_epoch=i16(header.get("producer_epoch", -1)),
            partition_leader_epoch=i32(header.get("partition_leader_epoch", 0)),
            base_sequence=i32(header.get("base_sequence", -1)),
            records=entries,
            attributes=i16(header.get("attributes", 0)),
        ),
    )
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("records", "timestamp_ms", "header"),
    [
        ([(b"k", b"v")], 1_764_236_056_123, {}),
        ([(b"\x00\x01key", None)], 0, {}),  # a tombstone
        ([(None, b"no key"), (b"", b"")], 1, {}),
        ([(b"k" * 63, b"v" * 64), (b"k" * 8191, b"v" * 8192)], 1_700_000_000_000, {}),
        ([(b"k%d" % n, b"v" * n) for n in range(300)], 2**41, {}),  # deltas past one byte
        (
            [(b"a", b"b"), (b"c", None)],
            5,
            {
                "producer_id": 7,
                "producer_epoch": 2,
                "base_sequence": 40,
                "partition_leader_epoch": 3,
            },
        ),
        (  # a transaction marker: transactional and control, no sequence
            [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")],
            1_764_236_056_123,
            {
                "attributes": rb.TRANSACTIONAL_MASK | rb.CONTROL_MASK,
                "producer_id": 2**40,
                "producer_epoch": 32767,
            },
        ),
        (  # a transactional batch (the simulator's)
            [(None, b"0"), (None, b"1")],
            1_767_225_600_000,
            {"attributes": rb.TRANSACTIONAL_MASK, "producer_id": 1000, "base_sequence": 2},
        ),
    ],
)
def test_encode_batch_writes_kios_bytes(
    records: list[tuple[bytes | None, bytes | None]], timestamp_ms: int, header: dict[str, int]
) -> None:
    data = rb.encode_batch(records, timestamp_ms=timestamp_ms, **header)
    assert data == _kio_batch(records, timestamp_ms=timestamp_ms, **header)
    (parsed,) = rb.iter_headers(data)
    assert parsed.size == len(data)
    assert rb.compute_crc(data, parsed) == parsed.crc
    assert parsed.attributes == header.get("attributes", 0)
    if not parsed.is_control:  # clients may not produce those
        assert rb.validate_produced(data, max_batch_bytes=1 << 24) == [parsed]
    assert (parsed.base_timestamp, parsed.max_timestamp) == (timestamp_ms, timestamp_ms)
    assert parsed.records_count == len(records)
    assert [(r.key, r.value) for r in decode_records(data)] == records


@pytest.mark.parametrize(
    ("records", "headers"),
    [
        ([(None, None)], [[(b"h", b"v")]]),
        ([(b"k", b"v"), (None, b"w")], [[], [(b"", b""), (b"null", None), (None, b"v")]]),
        (  # a DLQ copy: the original's headers, then the context ones
            [(b"key", b"value" * 30)],
            [
                [
                    (b"orig", b"x" * 200),
                    (b"__dlq.errors.topic", b"t"),
                    (b"__dlq.errors.offset", b"9"),
                ]
            ],
        ),
        ([(b"k%d" % n, None) for n in range(130)], [[(b"n", b"%d" % n)] * n for n in range(130)]),
    ],
)
def test_encode_batch_with_headers_writes_kios_bytes(
    records: list[tuple[bytes | None, bytes | None]], headers: list[rb.RecordHeaders]
) -> None:
    data = rb.encode_batch(records, timestamp_ms=77, headers=headers)
    assert data == _kio_batch(records, timestamp_ms=77, headers=headers)
    decoded = decode_records(data)
    assert [(r.key, r.value) for r in decoded] == records
    assert [[(k.encode(), v) for k, v in r.headers] for r in decoded] == [
        [(k or b"", v) for k, v in h]
        for h in headers  # the test decoder reads b"" for null
    ]


def test_signed_varint_zigzags_both_signs() -> None:
    assert rb.signed_varint(0) == b"\x00"
    assert rb.signed_varint(-1) == b"\x01"
    assert rb.signed_varint(1) == b"\x02"
    assert rb.signed_varint(63) == b"\x7e"
    assert rb.signed_varint(64) == b"\x80\x01"
    assert rb.signed_varint(-65) == b"\x81\x01"


def test_first_is_transactional_reads_the_first_batch_only() -> None:
    """Kafka's ProduceRequest decides from each partition's first batch whether a
    request carries transactional records (the Produce handler refuses them without a
    TransactionalId)."""
    plain = values_batch(1)
    transactional = values_batch(1, producer_id=7, producer_epoch=0, transactional=True)
    assert rb.first_is_transactional(transactional)
    assert rb.first_is_transactional(transactional + plain)
    assert not rb.first_is_transactional(plain + transactional)
    assert not rb.first_is_transactional(transactional[: rb.HEADER_SIZE - 1])  # no header
    assert not rb.first_is_transactional(b"")
