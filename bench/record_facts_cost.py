"""CPU cost per record of `shoal.protocol.records.record_facts`, the record parser a
share-partition runs on every acquisition of a key-ordered group (keys) and of a group
with scheduled delivery on (the `shoal.deliver.at` header), in-process.

Run from the repository root (PYTHONPATH picks the tree to measure; compare two trees
alternately):

    PYTHONPATH=src .venv/bin/python -m bench.record_facts_cost [--batches 4] [--repeat 7]

The log read: `--batches` consecutive batches of 500 records each (100-byte values,
keys like b"k123", offsets stamped as the log stamps them), uncompressed and lz4.
Cases: keys only; deliver-at only with 0%, 10% and 100% of the records carrying a
well-formed `shoal.deliver.at` header (the others no header); keys and deliver-at
with 10% and 100%. Per case: CPU nanoseconds per record (`time.process_time`, best
of `--repeat`).
Results: a table on stdout and JSON in bench/results/record_facts_cost.json with the
date and the machine (`shoal_src`: the tree measured).
"""

from __future__ import annotations

import argparse
import os
import random
import time
import timeit
from typing import Any

from bench.produce_fetch import machine, save_result
from shoal.protocol import records
from shoal.protocol.compression import Codec
from shoal.protocol.record_batch import BatchHeader, encode_batch, iter_headers, stamp_prefix
from shoal.protocol.records import DELIVER_AT_HEADER, record_facts

RECORDS_PER_BATCH = 500
VALUE_BYTES = 100
DUE = b"1764400000000"

CASES: list[tuple[str, bool, bool, float]] = [
    # (name, keys, deliver_at, share of records carrying the header)
    ("keys", True, False, 0.0),
    ("deliver_at 0%", False, True, 0.0),
    ("deliver_at 10%", False, True, 0.1),
    ("deliver_at 100%", False, True, 1.0),
    ("keys+deliver_at 10%", True, True, 0.1),
    ("keys+deliver_at 100%", True, True, 1.0),
]


def log_read(batches: int, codec: Codec, share: float) -> tuple[bytes, list[BatchHeader]]:
    """`batches` stamped batches back to back, as a log read returns them."""
    rng = random.Random(7)
    parts = []
    offset = 1000
    for _ in range(batches):
        records = [
            (b"k%d" % rng.randrange(1000), rng.randbytes(VALUE_BYTES // 2) * 2)
            for _ in range(RECORDS_PER_BATCH)
        ]
        headers = [
            [(DELIVER_AT_HEADER, DUE)] if rng.random() < share else []
            for _ in range(RECORDS_PER_BATCH)
        ]
        batch = encode_batch(records, timestamp_ms=1_764_000_000_000, headers=headers, codec=codec)
        (header,) = iter_headers(batch)
        parts.append(stamp_prefix(header, base_offset=offset, leader_epoch=0) + batch[17:])
        offset += RECORDS_PER_BATCH
    buffer = b"".join(parts)
    return buffer, iter_headers(buffer)


def ns_per_record(
    buffer: bytes, headers: list[BatchHeader], *, keys: bool, deliver_at: bool, repeat: int
) -> float:
    records = sum(h.records_count for h in headers)
    number = max(1, 20_000 // records)

    def work() -> object:
        return record_facts(buffer, headers, keys=keys, deliver_at=deliver_at)

    work()
    best = min(timeit.repeat(work, number=number, repeat=repeat, timer=time.process_time))
    return best / number / records * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"record_facts from {records.__file__}; load {os.getloadavg()}")
    rows: dict[str, dict[str, float]] = {}
    codecs = {"none": Codec.NONE, "lz4": Codec.LZ4}
    print(f"{'case':22}" + "".join(f"{name + ' ns/rec':>14}" for name in codecs))
    for name, keys, deliver_at, share in CASES:
        row = {}
        for codec_name, codec in codecs.items():
            buffer, headers = log_read(args.batches, codec, share)
            row[codec_name] = round(
                ns_per_record(
                    buffer, headers, keys=keys, deliver_at=deliver_at, repeat=args.repeat
                ),
                1,
            )
        rows[name] = row
        print(f"{name:22}" + "".join(f"{row[c]:14.1f}" for c in codecs))
    result: dict[str, Any] = {
        "settings": {
            "batches": args.batches,
            "records_per_batch": RECORDS_PER_BATCH,
            "value_bytes": VALUE_BYTES,
            "repeat": args.repeat,
        },
        "ns_per_record": rows,
        "machine": machine(),
    }
    print(f"results: {save_result('record_facts_cost', result)}")


if __name__ == "__main__":
    main()
