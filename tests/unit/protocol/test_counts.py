"""Array counts larger than the request: refused before kio reserves memory by them.

The frame is the wire fuzzer's find, minimised: a 30-byte WriteTxnMarkers v1 whose
innermost int32 array announces 9,422,884,781 entries made kio's native reader ask
for 75,383,078,248 bytes and abort the broker process ("memory allocation ... failed").
The decoding runs in a child process so that a regression fails this test instead of
killing the test run.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from shoal.protocol import codec
from tests.support.wire_fuzz import uvarint

HEADER_V2 = b"\x00\x00\x00\x01" + b"\x00\x01f" + b"\x00"  # correlation 1, client "f"


def _write_txn_markers_v1(partition_count: bytes) -> bytes:
    # one marker: producer 1, epoch 1, commit; one topic "t" with `partition_count`
    marker = b"\x00" * 7 + b"\x01" + b"\x00\x01" + b"\x01" + b"\x02" + b"\x02t" + partition_count
    return b"\x00\x1b\x00\x01" + HEADER_V2 + b"\x02" + marker


HUGE_COUNT_FRAME = _write_txn_markers_v1(uvarint(9_422_884_782))


def test_huge_count_is_a_protocol_error_not_an_abort() -> None:
    script = (
        "from shoal.protocol import codec\n"
        f"frame = {HUGE_COUNT_FRAME!r}\n"
        "try:\n"
        "    codec.decode_body(frame, 12, 27, 1)\n"
        "except codec.ProtocolError as exc:\n"
        "    print('refused:', exc)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "refused: malformed write_txn_markers v1 body: an array of 9422884781" in child.stdout


TAIL = b"\x00" + b"\x00" * 4 + b"\x00" + b"\x00"  # topic tags, coordinator epoch, tags


@pytest.mark.parametrize(("count", "refused"), [(1, False), (11, False), (12, True)])
def test_count_against_the_bytes_left(count: int, refused: bool) -> None:
    """One int32 (4 bytes) and the 7-byte tail follow the count: up to 11 could be
    elements; the decoder refuses 12 before reading, and kio's own reader fails 11."""
    frame = _write_txn_markers_v1(uvarint(count + 1) + b"\x00\x00\x00\x05") + TAIL
    if refused:
        with pytest.raises(codec.ProtocolError, match="an array of 12 with 11 bytes left"):
            codec.decode_body(frame, 12, 27, 1)
    elif count == 1:
        request = codec.decode_body(frame, 12, 27, 1)
        assert request.markers[0].topics[0].partition_indexes == (5,)
    else:
        with pytest.raises(codec.ProtocolError, match="malformed write_txn_markers v1 body"):
            codec.decode_body(frame, 12, 27, 1)
