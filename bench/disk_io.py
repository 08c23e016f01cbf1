"""How long the log's blocking disk operations take on this machine: the figures behind
docs/design/disk-io.md (how long the event loop would stall if each ran on it).

Run from the repository root:

    .venv/bin/python -m bench.disk_io            # segments of 16, 128 and 1024 MiB
    .venv/bin/python -m bench.disk_io --quick    # 1, 16 and 64 MiB, to try it

Everything goes through the broker's own log code (PartitionLog, fileio) on a
temporary directory next to the repository (same file system as a data directory
under it; `--dir` picks another). Per segment size S:

1. fsync of S dirty: S MiB appended in 1 MiB batches with the default flush policy
   (page cache only), then `PartitionLog.flush()` (one fsync of the active segment).
2. roll, dirty: a log with segment.bytes = S filled to S, then the append that rolls
   it: indexes written and fsynced, the sealed segment fsynced (S dirty), producer
   snapshot, new segment, directory fsync. What an append pays when it rolls.
3. roll after flush: the same roll once the segment's data was fsynced: the fixed part.
4. retention delete: `enforce_retention` (by retention.bytes) removing the sealed S
   segment of 3.: the log start checkpoint written atomically, then the files
   unlinked; and with `defer_delete=True` on the sealed segment of 2.: checkpoint and
   renames only, then (timed apart) `remove_paths`, which the server runs off the loop.

Then small-write latencies over `--appends` appends of 1 KiB batches: an append with
the default policy, an append with flush.messages=1 (an fsync each), and
`write_atomic` of a 4 KiB file (producer snapshots, checkpoints).

Results: an aligned table on stdout and JSON in bench/results/disk_io.json.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.batches import Record, build_batch

from bench.produce_fetch import machine, save_result
from shoal.clock import SystemClock
from shoal.log.fileio import remove_paths, write_atomic
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import validate_produced

MIB = 1 << 20
BATCH_VALUE_BYTES = MIB - 1024
"""One record per batch; a batch (with its overhead) stays under 1 MiB."""
SMALL_VALUE_BYTES = 1000


def _batch(value_bytes: int, seed: int) -> tuple[bytes, Any]:
    records = build_batch(
        [Record(key=b"k%d" % seed, value=bytes([seed % 256]) * value_bytes)],
        base_timestamp=int(time.time() * 1000),
    )
    return records, validate_produced(records, max_batch_bytes=1 << 30)


def _open(directory: Path, **config: Any) -> PartitionLog:
    return PartitionLog.open(directory=directory, config=config, clock=SystemClock())


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def _fill(log: PartitionLog, size_bytes: int) -> None:
    records, headers = _batch(BATCH_VALUE_BYTES, 0)
    while log.size_bytes + len(records) <= size_bytes:
        log.append(records, headers, leader_epoch=0)


def measure_size(root: Path, size_mib: int) -> dict[str, Any]:
    size = size_mib * MIB
    records, headers = _batch(BATCH_VALUE_BYTES, 1)

    def roll_append(log: PartitionLog) -> float:
        before = len(log.segment_base_offsets())
        ms = _timed(lambda: log.append(records, headers, leader_epoch=0))
        assert len(log.segment_base_offsets()) == before + 1, "the append did not roll"
        return ms

    dirty = _open(root / f"dirty-{size_mib}-0", **{"segment.bytes": size})
    try:
        _fill(dirty, size)
        roll_dirty_ms = roll_append(dirty)
        deferred_ms, removal_ms = _retention(dirty, size, defer_delete=True)
    finally:
        dirty.close()

    flushed = _open(root / f"flushed-{size_mib}-0", **{"segment.bytes": size})
    try:
        _fill(flushed, size)
        fsync_ms = _timed(flushed.flush)
        roll_clean_ms = roll_append(flushed)
        delete_ms, _ = _retention(flushed, size, defer_delete=False)
    finally:
        flushed.close()
    for directory in root.iterdir():
        shutil.rmtree(directory)
    return {
        "segment_mib": size_mib,
        "fsync_dirty_ms": round(fsync_ms, 1),
        "roll_dirty_ms": round(roll_dirty_ms, 1),
        "roll_after_flush_ms": round(roll_clean_ms, 1),
        "retention_delete_ms": round(delete_ms, 1),
        "retention_deferred_ms": round(deferred_ms, 1),
        "deferred_removal_ms": round(removal_ms, 1),
    }


def _retention(log: PartitionLog, size: int, *, defer_delete: bool) -> tuple[float, float]:
    """Retention (by retention.bytes) deleting the log's sealed segment: the time of
    `enforce_retention`, and of `remove_paths` on what it left (0 unless deferred)."""
    log.update_config({"segment.bytes": size, "retention.bytes": 0})
    now_ms = int(time.time() * 1000)
    ms = _timed(lambda: log.enforce_retention(now_wall_ms=now_ms, defer_delete=defer_delete))
    assert len(log.segment_base_offsets()) == 1, "retention left the sealed segment"
    paths = log.take_deleted_paths()
    return ms, _timed(lambda: remove_paths(paths))


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
        "max_ms": round(ordered[-1], 3),
    }


def _append_latencies(log: PartitionLog, appends: int) -> list[float]:
    samples = []
    for i in range(appends):
        records, headers = _batch(SMALL_VALUE_BYTES, i)
        start = time.perf_counter()
        log.append(records, headers, leader_epoch=0)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def measure_small(root: Path, appends: int) -> dict[str, dict[str, float]]:
    result: dict[str, dict[str, float]] = {}
    for name, config in (
        ("append, page cache", {}),
        ("append, flush.messages=1", {"flush.messages": 1}),
    ):
        log = _open(root / f"small-{len(result)}", **config)
        try:
            result[name] = _percentiles(_append_latencies(log, appends))
        finally:
            log.close()
    target = root / "small.file"
    data = b"x" * 4096
    result["write_atomic 4 KiB"] = _percentiles(
        [_timed(lambda: write_atomic(target, data)) for _ in range(appends)]
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to try it")
    parser.add_argument("--sizes-mib", default=None, help="comma-separated segment sizes")
    parser.add_argument("--appends", type=int, default=300, help="small appends per case")
    parser.add_argument("--dir", type=Path, default=Path("."), help="where to write")
    args = parser.parse_args()
    sizes = args.sizes_mib or ("1,16,64" if args.quick else "16,128,1024")
    appends = min(args.appends, 100) if args.quick else args.appends
    root = Path(tempfile.mkdtemp(prefix="shoal-disk-io-", dir=args.dir))
    try:
        rows = [measure_size(root, int(s)) for s in sizes.split(",")]
        small = measure_small(root, appends)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{'segment':>8} {'fsync dirty':>12} {'roll dirty':>11} {'roll flushed':>13} "
        f"{'retention':>10} {'deferred':>9} {'removal':>8}   (ms)"
    )
    for row in rows:
        print(
            f"{row['segment_mib']:>5} MiB {row['fsync_dirty_ms']:>12} {row['roll_dirty_ms']:>11} "
            f"{row['roll_after_flush_ms']:>13} {row['retention_delete_ms']:>10} "
            f"{row['retention_deferred_ms']:>9} {row['deferred_removal_ms']:>8}"
        )
    print(f"\n{'small write':<26} {'median':>8} {'p99':>8} {'max':>8}   (ms)")
    for name, figures in small.items():
        print(f"{name:<26} {figures['median_ms']:>8} {figures['p99_ms']:>8} {figures['max_ms']:>8}")
    out = save_result(
        "disk_io",
        {"machine": machine(), "segments": rows, "small_writes": small, "appends": appends},
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
