"""`record_facts`: the keys and `shoal.deliver.at` headers of a log read's records.

Hand-made cases (offsets of compacted batches, control and LogAppendTime batches,
several headers on one record, malformed values, varints of every width, every codec,
records that do not parse), a property test against kio's record reader on random
reads, and random corruption of valid reads (BatchError or an answer, never another
exception).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from shoal.protocol.compression import Codec, compress
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    CONTROL_MASK,
    TIMESTAMP_TYPE_MASK,
    BatchError,
    BatchHeader,
    iter_headers,
    signed_varint,
    with_new_records,
)
from shoal.protocol.records import DELIVER_AT_HEADER, RecordFacts, inflated, record_facts
from tests.support.batches import Record, encode_record

TS = 1_764_000_000_000
DUE = b"1764400000000"
NAME = DELIVER_AT_HEADER.decode()


@dataclass
class Batch:
    """A batch to build: `records` at `deltas` (default 0, 1, ...) from `base_offset`."""

    records: Sequence[Record]
    base_offset: int = 0
    deltas: Sequence[int] | None = None
    last_delta: int | None = None
    codec: Codec = Codec.NONE
    log_append_time: bool = False
    control: bool = False
    max_timestamp: int = TS + 999

    @property
    def offset_deltas(self) -> list[int]:
        return list(self.deltas) if self.deltas is not None else list(range(len(self.records)))

    def payload(self) -> bytes:
        """The records, inflated."""
        return b"".join(
            encode_record(r, d) for r, d in zip(self.records, self.offset_deltas, strict=True)
        )

    def encode(self, payload: bytes | None = None) -> bytes:
        """The batch (base offset set) with `payload` (default: its records) compressed."""
        deltas = self.offset_deltas
        last_delta = self.last_delta if self.last_delta is not None else max(deltas, default=0)
        attributes = (
            self.codec
            | (TIMESTAMP_TYPE_MASK if self.log_append_time else 0)
            | (CONTROL_MASK if self.control else 0)
        )
        header = BatchHeader(
            0, self.base_offset, 0, 0, 2, 0, attributes, last_delta, TS, self.max_timestamp,
            -1, -1, -1, len(self.records),
        )  # fmt: skip
        records = compress(self.payload() if payload is None else payload, self.codec)
        return with_new_records(
            header,
            records,
            attributes=attributes,
            base_timestamp=TS,
            max_timestamp=self.max_timestamp,
            records_count=len(self.records),
        )


def read(*batches: bytes | Batch) -> tuple[bytes, list[BatchHeader]]:
    buffer = b"".join(b if isinstance(b, bytes) else b.encode() for b in batches)
    headers = iter_headers(buffer)
    assert len(headers) == len(batches)
    return buffer, headers


def facts(*batches: bytes | Batch, keys: bool = True, deliver_at: bool = True) -> RecordFacts:
    buffer, headers = read(*batches)
    return record_facts(buffer, headers, keys=keys, deliver_at=deliver_at)


Headers = tuple[tuple[str, bytes | None], ...]


def due(value: bytes | None, *others: tuple[str, bytes | None]) -> Headers:
    """A `shoal.deliver.at` header of `value`, then `others`."""
    return ((NAME, value), *others)


# ---------------------------------------------------------------- offsets and keys


def test_keys_by_offset_across_batches() -> None:
    one = Batch([Record(b"v", key=b"a"), Record(b"v"), Record(None, key=b"")], base_offset=100)
    two = Batch([Record(b"v", key=b"b" * 70), Record(b"v", key=b"a")], base_offset=103)
    got = facts(one, two, deliver_at=False)
    assert (got.first_offset, got.last_offset) == (100, 104)
    assert got.keys == [b"a", None, b"", b"b" * 70, b"a"]
    assert got.deliver_at == {} and got.malformed == []


def test_compacted_batch_keys_at_their_offsets() -> None:
    records = [
        Record(b"v", key=b"k0"),
        Record(b"v", key=b"k2", headers=due(DUE)),
        Record(b"v", key=b"k5"),
        Record(b"v", key=b"k9000", headers=due(b"x")),
    ]
    batch = Batch(records, base_offset=10, deltas=[0, 2, 5, 9000], last_delta=9001)
    got = facts(batch)
    assert (got.first_offset, got.last_offset) == (10, 9011)
    assert got.keys is not None
    assert {i + 10: k for i, k in enumerate(got.keys) if k is not None} == {
        10: b"k0",
        12: b"k2",
        15: b"k5",
        9010: b"k9000",
    }
    assert got.deliver_at == {12: (int(DUE), TS)}
    assert got.malformed == [9010]


def test_gap_between_batches_and_empty_batch() -> None:
    one = Batch([Record(b"v", key=b"a")], base_offset=5)
    empty = Batch([], base_offset=6, last_delta=1)  # a cleaned batch: no records left
    three = Batch([Record(b"v", key=b"c")], base_offset=9)
    assert facts(one, empty, three).keys == [b"a", None, None, None, b"c"]


def test_control_batch_is_skipped() -> None:
    data = Batch([Record(b"v", key=b"a", headers=due(DUE))], base_offset=0)
    marker = Batch([Record(b"\x00\x00\x00\x00", key=b"\x00\x00\x00\x01", headers=due(DUE))],
                   base_offset=1, control=True)  # fmt: skip
    got = facts(data, marker)
    assert got.keys == [b"a", None]
    assert got.deliver_at == {0: (int(DUE), TS)}


def test_only_what_is_asked_for() -> None:
    batch = Batch([Record(b"v", key=b"a", headers=due(DUE)), Record(b"v", headers=due(b"?"))])
    assert facts(batch, keys=False).keys is None
    assert facts(batch, keys=False).deliver_at == {0: (int(DUE), TS)}
    assert facts(batch, keys=False).malformed == [1]
    no_headers = facts(batch, deliver_at=False)
    assert no_headers.keys == [b"a", None]
    assert (no_headers.deliver_at, no_headers.malformed) == ({}, [])
    neither = facts(batch, keys=False, deliver_at=False)
    assert (neither.keys, neither.deliver_at, neither.malformed) == (None, {}, [])


def test_memoryview_positions_index_the_view() -> None:
    batches = [Batch([Record(b"v", key=b"a", headers=due(DUE))], base_offset=3),
               Batch([Record(b"v", key=b"b")], base_offset=4, codec=Codec.LZ4)]  # fmt: skip
    buffer, headers = read(*batches)
    view = memoryview(b"junk" + buffer)[4:]
    from_view = record_facts(view, headers, keys=True, deliver_at=True)
    assert from_view == record_facts(buffer, headers, keys=True, deliver_at=True)
    assert from_view.keys == [b"a", b"b"]
    # a read in the middle of a larger buffer: positions are the buffer's
    shifted = iter_headers(buffer, base_position=7)
    got = record_facts(b"\xff" * 7 + buffer, shifted, keys=True, deliver_at=True)
    assert got == from_view


# ---------------------------------------------------------------- timestamps


def test_create_time_is_base_plus_delta() -> None:
    records = [
        Record(b"v", headers=due(b"5"), timestamp_delta=0),
        Record(b"v", headers=due(b"6"), timestamp_delta=-3),
        Record(b"v", headers=due(b"7"), timestamp_delta=2**40),
        Record(b"v", headers=due(b"8"), timestamp_delta=-(2**40)),
    ]
    got = facts(Batch(records, base_offset=50))
    assert got.deliver_at == {
        50: (5, TS),
        51: (6, TS - 3),
        52: (7, TS + 2**40),
        53: (8, TS - 2**40),
    }


def test_log_append_time_gives_the_batch_max_timestamp() -> None:
    records = [Record(b"v", headers=due(b"5"), timestamp_delta=7), Record(b"v", headers=due(b"6"))]
    batch = Batch(records, log_append_time=True, max_timestamp=TS + 123_456)
    assert facts(batch).deliver_at == {0: (5, TS + 123_456), 1: (6, TS + 123_456)}


# ---------------------------------------------------------------- the header's value


def test_several_headers_the_last_one_wins() -> None:
    records = [
        Record(b"v", headers=due(b"1", (NAME, b"2"))),
        Record(b"v", headers=due(b"1", (NAME, b"bad"))),
        Record(b"v", headers=due(b"bad", (NAME, b"3"))),
        Record(b"v", headers=due(b"4", ("other", b"x"), (NAME, None))),
        Record(b"v", headers=due(None, ("other", b"x"), (NAME, b"5"), ("more", None))),
    ]
    got = facts(Batch(records))
    assert got.deliver_at == {0: (2, TS), 2: (3, TS), 4: (5, TS)}
    assert got.malformed == [1, 3]


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"12a",
        b"-5",
        b"+5",
        b" 5",
        b"5 ",
        b"1.5",
        b"0x10",
        b"1" * 20,
        b"0" * 20,  # 20 digits, if of a small number
        b"9223372036854775808",  # 2**63
        b"9999999999999999999",  # 19 digits above 2**63 - 1
        "\u0661".encode(),  # ARABIC-INDIC DIGIT ONE: a digit, not ASCII
        "\uff11".encode(),  # FULLWIDTH DIGIT ONE
        b"\xb2",  # superscript two in Latin-1
    ],
)
def test_malformed_values(value: bytes | None) -> None:
    got = facts(Batch([Record(b"v"), Record(b"v", headers=due(value))], base_offset=40))
    assert got.malformed == [41]
    assert got.deliver_at == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"0", 0),
        (b"7", 7),
        (b"0001", 1),
        (b"1764400000000", 1_764_400_000_000),
        (b"9223372036854775807", 2**63 - 1),
        (b"0" * 19, 0),
    ],
)
def test_well_formed_values(value: bytes, expected: int) -> None:
    got = facts(Batch([Record(b"v", headers=due(value))], base_offset=40))
    assert got.deliver_at == {40: (expected, TS)}
    assert got.malformed == []


def test_header_name_bytes_elsewhere_are_not_the_header() -> None:
    fake = b"\x20" + DELIVER_AT_HEADER + b"\x1a" + DUE  # a header's bytes, in a key or value
    records = [
        Record(fake, key=fake),
        Record(b"v", headers=(("shoal.deliver.atx", DUE), ("shoal.deliver.a", DUE))),
        Record(b"v", headers=(("x", fake), ("x" + NAME, DUE))),
        Record(b"v", headers=((NAME.upper(), DUE),)),
        Record(DELIVER_AT_HEADER, headers=due(b"9")),  # both: the header counts
    ]
    got = facts(Batch(records))
    assert got.deliver_at == {4: (9, TS)}
    assert got.malformed == []


def test_long_fields() -> None:
    """Varints of one, two and more bytes in every field read."""
    records = [
        Record(bytes(10_000), key=b"k" * 64, headers=due(DUE)),  # 3-byte record length
        Record(bytes(100), key=b"k" * 8_200, headers=((("h" * 70), bytes(9_000)), (NAME, b"3"))),
        Record(b"v" * 63, key=b"k" * 63),
        Record(None, key=None, headers=(("", None),) * 70 + due(b"4")),
    ]
    got = facts(Batch(records, base_offset=1, deltas=[0, 63, 64, 8_192]))
    assert got.keys is not None
    assert got.keys[0] == b"k" * 64
    assert got.keys[63] == b"k" * 8_200
    assert got.keys[64] == b"k" * 63
    assert got.keys[8_192] is None
    assert got.deliver_at == {1: (int(DUE), TS), 64: (3, TS), 8_193: (4, TS)}


# ---------------------------------------------------------------- codecs

MIXED = [
    Record(b"value %d " % i * 9, key=None if i % 5 == 0 else b"k%d" % (i % 7),
           headers=due(DUE if i % 3 else b"x" + DUE) if i % 2 else (("trace", b"t"),),
           timestamp_delta=i)
    for i in range(300)
]  # fmt: skip


@pytest.mark.parametrize("codec", list(Codec))
def test_every_codec_gives_the_same_facts(codec: Codec) -> None:
    plain = facts(Batch(MIXED, base_offset=1000), Batch(MIXED[:10], base_offset=1300))
    packed = facts(Batch(MIXED, base_offset=1000, codec=codec), Batch(MIXED[:10], base_offset=1300))
    assert packed == plain
    assert plain.keys is not None and plain.keys[:3] == [None, b"k1", b"k2"]
    assert len(plain.deliver_at) == 100 + 3 and len(plain.malformed) == 50 + 2
    assert plain.deliver_at[1001] == (int(DUE), TS + 1)


@pytest.mark.parametrize("codec", [c for c in Codec if c])
def test_cut_compressed_data_is_refused(codec: Codec) -> None:
    batch = Batch(MIXED[:20], codec=codec)
    good = compress(batch.payload(), codec)
    for cut in (len(good) // 2, len(good) - 4):
        raw = batch.encode()
        buffer = raw[:61] + good[:cut]
        with pytest.raises(BatchError) as caught:
            record_facts(_relength(buffer), iter_headers(_relength(buffer)), keys=True,
                         deliver_at=False)  # fmt: skip
        assert caught.value.code == ErrorCode.corrupt_message


def _relength(batch: bytes) -> bytes:
    """`batch` with its length field matching its bytes."""
    return batch[:8] + (len(batch) - 12).to_bytes(4, "big") + batch[12:]


# ---------------------------------------------------------------- records that do not parse


def _refused(buffer: bytes, headers: list[BatchHeader], **asked: bool) -> None:
    with pytest.raises(BatchError) as caught:
        record_facts(buffer, headers, **asked)  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.corrupt_message


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
def test_truncated_records_are_refused(codec: Codec) -> None:
    records = [Record(b"v" * (i * 40), key=b"k%d" % i, headers=due(b"%d" % i)) for i in range(4)]
    batch = Batch(records, base_offset=7, codec=codec)
    payload = batch.payload()
    after = Batch([Record(b"next", key=b"n")], base_offset=11)  # bytes after the batch
    for cut in range(len(payload)):
        truncated = payload[:cut]
        buffer, headers = read(batch.encode(truncated), after)
        _refused(buffer, headers, keys=True, deliver_at=False)
        _refused(buffer, headers, keys=True, deliver_at=True)
        if DELIVER_AT_HEADER in truncated:  # a batch without it is not read for deliver-at
            _refused(buffer, headers, keys=False, deliver_at=True)


V = signed_varint


def record(*fields: bytes, length: int | None = None) -> bytes:
    """A record of `fields` (after its length), its length `length` (default: right)."""
    body = b"".join(fields)
    return V(len(body) if length is None else length) + body


KEYED = (b"\x00", V(0), V(0), V(1), b"k", V(0), V(0))
"""attributes, timestamp delta, offset delta 0, key b"k", empty value, no headers"""
HEADER = V(16) + DELIVER_AT_HEADER + V(1) + b"1"
HEADED = (b"\x00", V(0), V(0), V(-1), V(-1), V(1), HEADER)
"""null key and value, one shoal.deliver.at header, b"1"."""

GARBAGE = {
    "negative record length": record(*KEYED, length=-1),
    "zero record length": record(*KEYED, length=0),
    "record past the batch": record(*KEYED, length=len(record(*KEYED)) + 3),
    "long record length past the batch": record(*KEYED, length=70_000),
    "key past the record": record(b"\x00", V(0), V(0), V(5), b"k", V(0), V(0)),
    "no value length": record(b"\x00", V(0), V(0), V(1), b"k"),
    "null key and nothing after": record(b"\x00", V(0), V(0), V(-1)),
    "offset delta past the batch": record(b"\x00", V(0), V(1), V(1), b"k", V(0), V(0)),
    "offset delta far past the batch": record(b"\x00", V(0), V(9000), V(1), b"k", V(0), V(0)),
    "negative offset delta": record(b"\x00", V(0), V(-1), V(1), b"k", V(0), V(0)),
    "trailing bytes": record(*KEYED) + b"\x00",
    "records missing": b"",
    "unending varint": b"\xff" * 12,
    "negative header count": record(*HEADED[:5], V(-1), HEADER),
    "negative header count, the name in the value": record(
        b"\x00", V(0), V(0), V(-1), V(16), DELIVER_AT_HEADER, V(-1)
    ),
    "null header name": record(*HEADED[:5], V(2), V(-1), V(1), b"1", HEADER),
    "header count past the record": record(*HEADED[:5], V(2), HEADER),
    "header value past the record": record(*HEADED[:6], HEADER[:-1]),
    "bytes after the headers": record(*HEADED, b"\x00"),
}
"""Payloads of a one-record batch (records_count 1, last offset delta 0)."""


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_garbage_is_refused(name: str) -> None:
    buffer, headers = read(Batch([Record(b"v")]).encode(GARBAGE[name]))
    if DELIVER_AT_HEADER in GARBAGE[name]:  # a flaw in the headers: read for deliver-at
        _refused(buffer, headers, keys=False, deliver_at=True)
        _refused(buffer, headers, keys=True, deliver_at=True)
    else:
        _refused(buffer, headers, keys=True, deliver_at=False)
        _refused(buffer, headers, keys=True, deliver_at=True)


def test_the_garbage_is_one_flaw_from_a_good_record() -> None:
    """GARBAGE's records are built by hand: without their flaw they parse."""
    for payload, expected in ((record(*KEYED), [b"k"]), (record(*HEADED), [None])):
        buffer, headers = read(Batch([Record(b"v")]).encode(payload))
        got = record_facts(buffer, headers, keys=True, deliver_at=True)
        assert got.keys == expected
        assert got.deliver_at == ({0: (1, TS)} if DELIVER_AT_HEADER in payload else {})


@pytest.mark.parametrize("delta", [-1, -100, -9000])
def test_negative_offset_delta_in_a_wide_batch_is_refused(delta: int) -> None:
    """Whatever its width, a negative delta is refused, not read as a positive one."""
    payload = record(b"\x00", V(0), V(delta), V(1), b"k", V(0), V(1), HEADER)
    buffer, headers = read(Batch([Record(b"v")], last_delta=20_000).encode(payload))
    _refused(buffer, headers, keys=True, deliver_at=False)
    _refused(buffer, headers, keys=False, deliver_at=True)


def test_batch_outside_the_read_is_refused() -> None:
    """Headers out of order (not one read): a batch's offsets before the first's."""
    buffer, headers = read(Batch([Record(b"v", key=b"a")], base_offset=9),
                           Batch([Record(b"v", key=b"b")], base_offset=3))  # fmt: skip
    _refused(buffer, headers, keys=True, deliver_at=False)


# ---------------------------------------------------------------- against kio

HEADER_NAMES = st.sampled_from([NAME, NAME, "shoal.deliver.a", NAME + "x", "x", "", "h" * 70])
VALUES = st.one_of(
    st.integers(0, 2**63 - 1).map(lambda n: str(n).encode()),
    st.integers(2**63, 10**19 - 1).map(lambda n: str(n).encode()),
    st.sampled_from([None, b"", b"-1", b"12a", b"1" * 20, b"0" * 20, b" 1", b"0001", DUE]),
    st.binary(max_size=20),
)
SIZES = st.sampled_from([0, 1, 10, 63, 64, 200, 9000])
RECORDS = st.builds(
    Record,
    value=st.one_of(st.none(), SIZES.map(bytes), st.binary(max_size=30)),
    key=st.one_of(st.none(), st.binary(max_size=10), SIZES.map(lambda n: b"k" * n)),
    headers=st.lists(st.tuples(HEADER_NAMES, VALUES), max_size=3).map(tuple),
    timestamp_delta=st.one_of(st.integers(-100, 100), st.integers(-(2**40), 2**40)),
)


@st.composite
def batches(draw: st.DrawFn) -> list[Batch]:
    out = []
    offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 4))):
        records = draw(st.lists(RECORDS, min_size=1, max_size=12))
        gaps = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 70, 9000]), min_size=len(records),
                             max_size=len(records)))  # fmt: skip
        deltas, delta = [], -1
        for gap in gaps:
            delta += 1 + gap
            deltas.append(delta)
        last_delta = deltas[-1] + draw(st.sampled_from([0, 0, 1]))  # a cleaned tail
        out.append(
            Batch(
                records,
                base_offset=offset,
                deltas=deltas,
                last_delta=last_delta,
                codec=draw(st.sampled_from(list(Codec))),
                log_append_time=draw(st.booleans()),
                control=draw(st.integers(0, 5)) == 0,
                max_timestamp=TS + draw(st.integers(0, 10**6)),
            )
        )
        offset += last_delta + 1 + draw(st.sampled_from([0, 0, 3]))
    return out


def _well_formed(value: bytes | None) -> bool:
    """The rule, said another way than the parser's."""
    return (
        value is not None
        and re.fullmatch(rb"[0-9]{1,19}", value) is not None
        and (int(value) < 2**63)
    )


def expected_facts(specs: list[Batch], buffer: bytes, headers: list[BatchHeader]) -> RecordFacts:
    """What kio's reader reads in the batches, as RecordFacts."""
    first, last = headers[0].base_offset, headers[-1].last_offset
    keys: list[bytes | None] = [None] * (last - first + 1)
    at: dict[int, tuple[int, int]] = {}
    malformed: list[int] = []
    for spec, header in zip(specs, headers, strict=True):
        batch = buffer[header.position : header.position + header.size]
        decoded, _ = read_batch(inflated(batch, header), 0)
        assert len(decoded.records) == len(spec.records)
        if spec.control:
            continue
        for record, given_record in zip(decoded.records, spec.records, strict=True):
            offset = int(record.offset)
            keys[offset - first] = record.key
            values = [h.value for h in record.headers if h.key == DELIVER_AT_HEADER]
            if not values:
                continue
            if not _well_formed(values[-1]):
                malformed.append(offset)
                continue
            assert values[-1] is not None
            created = TS + given_record.timestamp_delta
            at[offset] = (int(values[-1]), spec.max_timestamp if spec.log_append_time else created)
    return RecordFacts(first, last, keys, at, malformed)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=batches())
def test_same_as_kio(specs: list[Batch]) -> None:
    buffer, headers = read(*specs)
    expected = expected_facts(specs, buffer, headers)
    assert record_facts(buffer, headers, keys=True, deliver_at=True) == expected
    keys_only = record_facts(buffer, headers, keys=True, deliver_at=False)
    assert (keys_only.keys, keys_only.deliver_at, keys_only.malformed) == (expected.keys, {}, [])
    at_only = record_facts(memoryview(buffer), headers, keys=False, deliver_at=True)
    assert at_only == RecordFacts(
        expected.first_offset, expected.last_offset, None, expected.deliver_at, expected.malformed
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=batches(), data=st.data())
def test_corrupted_records_parse_or_are_refused(specs: list[Batch], data: st.DataObject) -> None:
    """Bytes of the inflated records overwritten, cut or added: the answer is facts or
    BatchError(corrupt_message), never another exception (nor a hang: pytest's timeout)."""
    target = data.draw(st.integers(0, len(specs) - 1))
    spec = specs[target]
    payload = bytearray(spec.payload())
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, max(0, len(payload) - 1)))
        edit = data.draw(st.sampled_from(["set", "cut", "add"]))
        if edit == "set" and payload:
            payload[position] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif edit == "cut":
            del payload[position:]
        else:
            payload[position:position] = data.draw(st.binary(min_size=1, max_size=3))
    encoded = [s.encode(bytes(payload)) if i == target else s.encode() for i, s in enumerate(specs)]
    buffer, headers = read(*encoded)
    for keys, deliver_at in ((True, False), (False, True), (True, True)):
        try:
            got = record_facts(buffer, headers, keys=keys, deliver_at=deliver_at)
        except BatchError as exc:
            assert exc.code == ErrorCode.corrupt_message
        else:
            assert got.first_offset == headers[0].base_offset
