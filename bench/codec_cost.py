"""The codec's part of a share cycle, in-process: decoding the three requests of
bench/share_fetch_cost.py's cycle (Produce v10 of one 1 KiB record, ShareFetch v2,
ShareAcknowledge v2 of one batch) and encoding their responses.

Run from the repository root (PYTHONPATH picks the tree to measure; compare two trees
alternately):

    PYTHONPATH=src .venv/bin/python -m bench.codec_cost [--number 20000]

Per request kind: CPU microseconds per decode (header + body, `codec.decode_header`
and `codec.decode_body`) and per encode (`codec.encode_response`), best of 5 repeats,
and the Python calls of each (cProfile: deterministic, comparable whatever the load).
Results: printed, and JSON in bench/results/codec_cost.json with the date and the machine
(`shoal_src`: the tree measured).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import os
import pstats
import time
import timeit
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode
from tests.support.batches import build_batch

from bench.produce_fetch import machine, save_result
from bench.request_cost import frame_of
from shoal.client import requests
from shoal.client.share_requests import (
    AckBatch,
    TopicIdPartition,
    share_acknowledge,
    share_fetch,
)
from shoal.protocol import codec
from shoal.protocol.schema import response_schema

TOPIC_ID = uuid.UUID("6c1f9d0c-7d1e-4b69-9d53-2b3f7a5e0c11")
MEMBER = "member-0123456789abcdef"


def request_frames() -> dict[str, bytes]:
    """Frames without the size prefix, as `serve_connection` reads them."""
    tp = TopicIdPartition(TOPIC_ID, 0)
    return {
        "produce": frame_of(requests.produce({("t", 0): build_batch([bytes(1024)])}), 10)[4:],
        "share_fetch": frame_of(
            share_fetch(
                group_id="g", member_id=MEMBER, session_epoch=3, max_wait_ms=5000, max_records=500
            ),
            2,
        )[4:],
        "share_acknowledge": frame_of(
            share_acknowledge(
                group_id="g",
                member_id=MEMBER,
                session_epoch=4,
                acks={tp: [AckBatch(5, 5, (1,))]},
            ),
            2,
        )[4:],
    }


def responses() -> dict[str, tuple[int, int, Any]]:
    """(api key, version, response) as the handlers answer one record's cycle."""
    none = ErrorCode.none
    zero = datetime.timedelta(0)
    lock = datetime.timedelta(seconds=30)
    fetch = response_schema(78, 2)
    leader = fetch.make("LeaderIdAndEpoch", leader_id=1, leader_epoch=0)
    fetched = fetch.make(
        "PartitionData",
        partition_index=0,
        error_code=none,
        error_message=None,
        acknowledge_error_code=none,
        acknowledge_error_message=None,
        current_leader=leader,
        records=build_batch([bytes(1024)]),
        acquired_records=(
            fetch.make("AcquiredRecords", first_offset=5, last_offset=5, delivery_count=1),
        ),
    )
    ack = response_schema(79, 2)
    acked = ack.make(
        "PartitionData",
        partition_index=0,
        error_code=none,
        error_message=None,
        current_leader=ack.make("LeaderIdAndEpoch", leader_id=1, leader_epoch=0),
    )
    produce = response_schema(0, 10)
    produced = produce.make(
        "PartitionProduceResponse",
        index=0,
        error_code=none,
        base_offset=5,
        log_append_time=None,
        log_start_offset=0,
        record_errors=(),
        error_message=None,
    )
    return {
        "produce": (
            0,
            10,
            produce.response(
                responses=(
                    produce.make("TopicProduceResponse", name="t", partition_responses=(produced,)),
                ),
                throttle_time=zero,
            ),
        ),
        "share_fetch": (
            78,
            2,
            fetch.response(
                throttle_time=zero,
                error_code=none,
                error_message=None,
                acquisition_lock_timeout=lock,
                responses=(
                    fetch.make(
                        "ShareFetchableTopicResponse", topic_id=TOPIC_ID, partitions=(fetched,)
                    ),
                ),
                node_endpoints=(),
            ),
        ),
        "share_acknowledge": (
            79,
            2,
            ack.response(
                throttle_time=zero,
                error_code=none,
                error_message=None,
                acquisition_lock_timeout=lock,
                responses=(
                    ack.make(
                        "ShareAcknowledgeTopicResponse", topic_id=TOPIC_ID, partitions=(acked,)
                    ),
                ),
                node_endpoints=(),
            ),
        ),
    }


def _decode(frame: bytes) -> Any:
    key, version = codec.peek_key_version(frame)
    _, offset = codec.decode_header(frame, key, version)
    return codec.decode_body(frame, offset, key, version)


def _us(work: Callable[[], Any], number: int) -> float:
    timer = time.process_time  # CPU time: the machine may be shared
    return min(timeit.repeat(work, number=number, repeat=5, timer=timer)) / number * 1e6


def _calls(work: Callable[[], Any]) -> float:
    work()  # warm: caches filled
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(100):
        work()
    profile.disable()
    return sum(row[1] for row in pstats.Stats(profile).stats.values()) / 100  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20_000)
    args = parser.parse_args()
    print(f"codec from {codec.__file__}; load {os.getloadavg()}")
    frames, answers = request_frames(), responses()
    kinds: dict[str, dict[str, float]] = {}
    for name, frame in frames.items():
        key, version, response = answers[name]

        def decode(f: bytes = frame) -> Any:
            return _decode(f)

        def encode(k: int = key, v: int = version, r: Any = response) -> Any:
            return codec.encode_response(k, v, 7, r)

        row = {
            "decode_us": round(_us(decode, args.number), 2),
            "decode_calls": _calls(decode),
            "encode_us": round(_us(encode, args.number), 2),
            "encode_calls": _calls(encode),
        }
        kinds[name] = row
        print(
            f"{name:18} decode {row['decode_us']:6.2f} us {row['decode_calls']:5.1f} calls"
            f"   encode {row['encode_us']:6.2f} us {row['encode_calls']:5.1f} calls"
        )
    result = {"settings": {"number": args.number}, "kinds": kinds, "machine": machine()}
    print(f"results: {save_result('codec_cost', result)}")


if __name__ == "__main__":
    main()
