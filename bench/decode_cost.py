"""Cost of decoding hot-path requests (header + body): a one-partition Produce with a
16 KiB record batch, and a ShareFetch acknowledging 3 batches on 4 partitions.

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine):

    PYTHONPATH=src .venv/bin/python -m bench.decode_cost

Reports CPU microseconds per decode (best of 7 repeats of 20,000 decodes) and the load
average, for frames without and with one unknown tagged field in the body.

On a shared machine two runs differ more than the change being measured, so
`--baseline-counts OTHER/src/shoal/protocol/counts.py` also times, in this process and
interleaved, the count-checking walk of that other tree against this tree's `scan`
(the walk is the only per-request work the unknown-tag support adds to the body; the
header is read by kio directly unless its tag byte is non-zero).

Results: printed, and JSON in bench/results/decode_cost.json with the date and the
machine (`shoal_src`: the tree measured).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
import timeit
import uuid
from datetime import timedelta
from typing import Any

from kio.schema.produce.v11 import request as produce11
from kio.schema.share_fetch.v1 import request as share_fetch1
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from bench.produce_fetch import machine, save_result
from shoal.protocol import codec, counts

TOPIC_ID = uuid.UUID("6c1f9d0c-7d1e-4b69-9d53-2b3f7a5e0c11")


def _frame(request: Any) -> bytes:
    key, version = int(request.__api_key__), int(request.__version__)
    return codec.encode_request(codec.request_header_for(key, version, 7, "bench"), request)[4:]


def produce_frame() -> bytes:
    partition = produce11.PartitionProduceData(index=i32(0), records=b"\x00" * 16384)
    return _frame(
        produce11.ProduceRequest(
            transactional_id=None,
            acks=i16(-1),
            timeout=i32Timedelta.parse(timedelta(seconds=30)),
            topic_data=(produce11.TopicProduceData(name="topic", partition_data=(partition,)),),
        )
    )


def share_fetch_frame() -> bytes:
    batches = tuple(
        share_fetch1.AcknowledgementBatch(
            first_offset=i64(n * 10), last_offset=i64(n * 10 + 9), acknowledge_types=(i8(1),)
        )
        for n in range(3)
    )
    partitions = tuple(
        share_fetch1.FetchPartition(partition_index=i32(p), acknowledgement_batches=batches)
        for p in range(4)
    )
    return _frame(
        share_fetch1.ShareFetchRequest(
            group_id="group",
            member_id="member-0123456789",
            share_session_epoch=i32(3),
            max_wait=i32Timedelta.parse(timedelta(milliseconds=500)),
            min_bytes=i32(1),
            max_bytes=i32(1 << 20),
            max_records=i32(500),
            batch_size=i32(500),
            topics=(share_fetch1.FetchTopic(topic_id=TOPIC_ID, partitions=partitions),),
            forgotten_topics_data=(),
        )
    )


def _decode(frame: bytes) -> None:
    key, version = codec.peek_key_version(frame)
    _, offset = codec.decode_header(frame, key, version)
    codec.decode_body(frame, offset, key, version)


def per_decode_us(frame: bytes, number: int) -> float:
    timer = time.process_time  # CPU time: the machine may be shared
    best = min(timeit.repeat(lambda: _decode(frame), number=number, repeat=7, timer=timer))
    return best / number * 1e6


def compare_walks(baseline_path: str, number: int) -> dict[str, dict[str, float]]:
    spec = importlib.util.spec_from_file_location("baseline_counts", baseline_path)
    assert spec is not None and spec.loader is not None
    baseline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(baseline)
    timer = time.process_time
    walks: dict[str, dict[str, float]] = {}
    for name, frame in (("produce", produce_frame()), ("share_fetch", share_fetch_frame())):
        key, version = codec.peek_key_version(frame)
        _, offset = codec.decode_header(frame, key, version)
        cls = codec.request_class(key, version)
        old: list[float] = []
        new: list[float] = []
        for _ in range(7):  # interleaved, so that load changes hit both alike
            old.append(
                min(
                    timeit.repeat(
                        lambda c=cls, f=frame, o=offset: baseline.check_counts(c, f, o),
                        number=number,
                        repeat=1,
                        timer=timer,
                    )
                )
            )
            new.append(
                min(
                    timeit.repeat(
                        lambda c=cls, f=frame, o=offset: counts.scan(c, f, o),
                        number=number,
                        repeat=1,
                        timer=timer,
                    )
                )
            )
        old_us, new_us = min(old) / number * 1e6, min(new) / number * 1e6
        print(f"{name:12} walk: baseline {old_us:5.2f} us, this tree {new_us:5.2f} us")
        walks[name] = {"baseline_us": round(old_us, 2), "this_tree_us": round(new_us, 2)}
    return walks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--baseline-counts", metavar="PATH")
    args = parser.parse_args()
    print(f"codec from {codec.__file__}; load {os.getloadavg()}")
    result: dict[str, Any] = {"settings": vars(args), "decode_us": {}}
    for name, frame in (("produce", produce_frame()), ("share_fetch", share_fetch_frame())):
        plain = per_decode_us(frame, args.number)
        print(f"{name:12} {plain:6.2f} us")
        row: dict[str, Any] = {"plain": round(plain, 2)}
        tagged = frame[:-1] + b"\x01\x63\x02\x00\x00"  # one unknown tag (99) in the body
        try:
            row["unknown_tag"] = round(per_decode_us(tagged, args.number), 2)
            print(f"{name:12} {row['unknown_tag']:6.2f} us with an unknown tag")
        except codec.ProtocolError as exc:
            row["unknown_tag"] = f"refused: {exc}"
            print(f"{name:12} unknown tag refused: {exc}")
        result["decode_us"][name] = row
    if args.baseline_counts:
        result["walk"] = compare_walks(args.baseline_counts, args.number)
    result["machine"] = machine()
    print(f"results: {save_result('decode_cost', result)}")


if __name__ == "__main__":
    main()
