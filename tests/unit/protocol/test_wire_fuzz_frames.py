"""The wire fuzzer's frames (tests/support/wire_fuzz.py): unmutated ones are valid Kafka
requests that Shoal's codec decodes whole, and a seed replays the same frames."""

from __future__ import annotations

from shoal.protocol import codec
from shoal.server.registry import api_ranges, load_all_handlers
from tests.support.wire_fuzz import ApiRange, FrameFuzzer, uvarint

NAMES = ("fuzz-t0", "")


def _apis() -> list[ApiRange]:
    return [
        ApiRange(r.api_key, r.min_version, r.max_version) for r in api_ranges(load_all_handlers())
    ]


def test_unmutated_frames_decode_for_every_served_version() -> None:
    fuzzer = FrameFuzzer(5, _apis(), NAMES)
    seen = set()
    for _ in range(3000):
        data = fuzzer.frame(mutate=False).data
        frame = data[4:]
        assert int.from_bytes(data[:4], "big") == len(frame)
        api_key, version = codec.peek_key_version(frame)
        header, offset = codec.decode_header(frame, api_key, version)
        codec.decode_body(frame, offset, api_key, version)
        assert header.client_id == "fuzz"
        seen.add((api_key, version))
    assert len(seen) > 0.9 * len(fuzzer.targets)


def test_a_seed_replays_the_same_frames() -> None:
    first, second = FrameFuzzer(9, _apis(), NAMES), FrameFuzzer(9, _apis(), NAMES)
    for _ in range(200):
        assert first.frame() == second.frame()
        assert first.raw_frame() == second.raw_frame()


def test_uvarint() -> None:
    assert uvarint(0) == b"\x00"
    assert uvarint(300) == b"\xac\x02"
    assert uvarint(1, overlong=2) == b"\x81\x80\x00"
