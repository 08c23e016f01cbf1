"""Recovery time and memory of durable share-partition state, and the size of
`__share_group_state` before and after pruning.

Run from the repository root:

    .venv/bin/python -m bench.share_recovery            # 1M acknowledged records
    .venv/bin/python -m bench.share_recovery --quick    # 50k, to try it

What it does, on a temporary data directory with the broker's own code (LogManager,
ShareStateService: the share coordinator on `__share_group_state`, default settings:
50 partitions, a snapshot every 500 updates):

1. Build: one share-partition is initialised, then its leader's state writes are
   replayed as a share-partition would send them: records acknowledged in writes of
   `--per-write` offsets (default 100) in offset order, every `--release-every`-th
   record (default 1000) RELEASEd instead (AVAILABLE, delivery count 1) and accepted
   only `--lag` offsets later (default 50k), so the in-flight state always holds about
   lag / release-every scattered ranges and the start offset trails behind them.
   Each write goes through the runtime (append to the log, replay, answer).
2. Size of the state topic on disk, then one prune pass (each partition's log start
   moves to its oldest needed snapshot; whole segments below it are deleted), size
   again. `--segment-bytes` (default 1 MiB) sets the state topic's segment size so
   pruning has whole segments to delete at this scale (Kafka's default is 100 MiB).
3. Recovery: in a fresh process, open the data directory and load the share
   coordinator (read and replay every record from each partition's log start), then
   read the share-partition's state as its leader would on load. Reported: the load
   time, the records replayed, and the memory: Python allocations during the load
   (tracemalloc: peak, and still held afterwards: 50 shards, the key's merged
   state), and the peak RSS of the recovering process minus that of an identical
   process that stops before loading (coarse: page granularity, allocator reuse).
   Times come from runs without tracemalloc, memory from a separate traced run.

Results: an aligned table on stdout and JSON in bench/results/share_recovery.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

from bench.produce_fetch import machine, save_result
from shoal.clock import SystemClock
from shoal.config import BrokerConfig
from shoal.log.manager import LogManager
from shoal.server.metadata.topic_catalog import open_topic_catalog
from shoal.server.services.share_state import SHARE_STATE_TOPIC, ShareStateService
from shoal.share.persister import SharePartitionKey, StateBatch, StateWrite
from shoal.share.states import RecordState

GROUP = "bench-group"
TOPIC_ID = uuid.UUID("00000000-0000-4000-8000-000000000001")
KEY = SharePartitionKey(GROUP, TOPIC_ID, 0)
ACKNOWLEDGED, AVAILABLE = int(RecordState.ACKNOWLEDGED), int(RecordState.AVAILABLE)


def _config(data_dir: Path, segment_bytes: int) -> BrokerConfig:
    return BrokerConfig.from_raw(
        {
            "log.dirs": str(data_dir),
            "share.coordinator.state.topic.segment.bytes": segment_bytes,
        }
    )


def _state_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.glob(f"{SHARE_STATE_TOPIC}-*/*.log"))


def build(
    data_dir: Path,
    *,
    records: int,
    per_write: int,
    release_every: int,
    lag: int,
    segment_bytes: int,
) -> dict[str, Any]:
    config = _config(data_dir, segment_bytes)
    clock = SystemClock()
    logs = LogManager.open(
        data_dir=data_dir,
        broker_config=config,
        clock=clock,
        catalog=open_topic_catalog(config, clock),
    )
    service = ShareStateService.open(logs, config, clock)
    persister = service.coordinator
    assert persister.initialize(key=KEY, state_epoch=1, start_offset=0) is None
    assert persister.read(key=KEY, leader_epoch=0).error is None
    released: list[int] = []  # released offsets not yet accepted, ascending
    writes = 0
    started = time.perf_counter()
    for first in range(0, records, per_write):
        last = min(first + per_write, records) - 1
        batches: list[StateBatch] = []
        run_start = first
        for offset in range(first, last + 1):
            if offset % release_every == release_every - 1:
                if run_start < offset:
                    batches.append(StateBatch(run_start, offset - 1, ACKNOWLEDGED, 1))
                batches.append(StateBatch(offset, offset, AVAILABLE, 1))
                released.append(offset)
                run_start = offset + 1
        if run_start <= last:
            batches.append(StateBatch(run_start, last, ACKNOWLEDGED, 1))
        # Accept the releases that are `lag` behind, redelivered once.
        while released and released[0] <= last - lag:
            offset = released.pop(0)
            batches.append(StateBatch(offset, offset, ACKNOWLEDGED, 2))
        start = released[0] if released else last + 1
        batches.sort(key=lambda b: b.first_offset)
        write = StateWrite(
            key=KEY,
            state_epoch=1,
            leader_epoch=0,
            start_offset=start,
            delivery_complete_count=0,
            state_batches=tuple(b for b in batches if b.last_offset >= start),
        )
        assert persister.write(write=write) is None
        writes += 1
    build_s = time.perf_counter() - started
    state = persister.read(key=KEY, leader_epoch=0).state
    assert state is not None
    logs.close()
    return {
        "records": records,
        "writes": writes,
        "build_s": build_s,
        "writes_per_s": writes / build_s,
        "start_offset": state.start_offset,
        "state_batches": len(state.state_batches),
    }


def prune(data_dir: Path, segment_bytes: int) -> dict[str, Any]:
    """Open the broker's share state as at a restart and run one prune pass."""
    config = _config(data_dir, segment_bytes)
    clock = SystemClock()
    logs = LogManager.open(
        data_dir=data_dir,
        broker_config=config,
        clock=clock,
        catalog=open_topic_catalog(config, clock),
    )
    service = ShareStateService.open(logs, config, clock)
    before = _state_bytes(data_dir)
    started = time.perf_counter()
    service.prune()
    prune_s = time.perf_counter() - started
    logs.close()
    return {
        "state_bytes_before_prune": before,
        "state_bytes_after_prune": _state_bytes(data_dir),
        "prune_s": prune_s,
    }


def recover(data_dir: Path, segment_bytes: int, *, load: bool, trace: bool) -> dict[str, Any]:
    """Run in a child process: open the data directory and (if `load`) the share
    coordinator, then read the share-partition's state."""
    config = _config(data_dir, segment_bytes)
    clock = SystemClock()
    started = time.perf_counter()
    logs = LogManager.open(
        data_dir=data_dir,
        broker_config=config,
        clock=clock,
        catalog=open_topic_catalog(config, clock),
    )
    opened_s = time.perf_counter() - started
    result: dict[str, Any] = {"open_logs_s": opened_s}
    if load:
        if trace:
            tracemalloc.start()
        started = time.perf_counter()
        service = ShareStateService.open(logs, config, clock)
        read = service.coordinator.read(key=KEY, leader_epoch=0)
        result["load_s"] = time.perf_counter() - started
        if trace:
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            result["traced_retained_bytes"] = current
            result["traced_peak_bytes"] = peak
        assert read.state is not None
        result["start_offset"] = read.state.start_offset
        result["state_batches"] = len(read.state.state_batches)
        result["records_replayed"] = sum(
            p.log_end_offset - p.log_start_offset for p in service.partitions
        )
    logs.close()
    result["max_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result


def _child(
    data_dir: Path, segment_bytes: int, *, load: bool, trace: bool = False
) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.share_recovery",
            "--child",
            str(data_dir),
            "--segment-bytes",
            str(segment_bytes),
        ]
        + (["--load"] if load else [])
        + (["--trace"] if trace else []),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--per-write", type=int, default=100)
    parser.add_argument("--release-every", type=int, default=1000)
    parser.add_argument("--lag", type=int, default=50_000)
    parser.add_argument("--segment-bytes", type=int, default=1 << 20)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", type=Path)
    parser.add_argument("--load", action="store_true")
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    if args.child is not None:
        result = recover(args.child, args.segment_bytes, load=args.load, trace=args.trace)
        print(json.dumps(result))
        return 0
    if args.quick:
        args.records, args.lag = 50_000, 5_000
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        built = build(
            data_dir,
            records=args.records,
            per_write=args.per_write,
            release_every=args.release_every,
            lag=args.lag,
            segment_bytes=args.segment_bytes,
        )
        baseline = _child(data_dir, args.segment_bytes, load=False)
        unpruned = _child(data_dir, args.segment_bytes, load=True)
        pruned = prune(data_dir, args.segment_bytes)
        loaded = _child(data_dir, args.segment_bytes, load=True)
        traced = _child(data_dir, args.segment_bytes, load=True, trace=True)
    assert unpruned["start_offset"] == loaded["start_offset"] == built["start_offset"]
    assert unpruned["state_batches"] == built["state_batches"]
    assert loaded["state_batches"] == built["state_batches"]
    memory_kib = loaded["max_rss_kib"] - baseline["max_rss_kib"]
    rows = [
        ("acknowledged records", f"{built['records']:,}"),
        ("state writes", f"{built['writes']:,} ({built['writes_per_s']:,.0f}/s)"),
        ("state batches at the end", f"{built['state_batches']:,}"),
        ("state topic before prune", f"{pruned['state_bytes_before_prune'] / 2**20:.2f} MiB"),
        ("state topic after prune", f"{pruned['state_bytes_after_prune'] / 2**20:.2f} MiB"),
        ("records replayed, unpruned", f"{unpruned['records_replayed']:,}"),
        ("recovery, unpruned", f"{unpruned['load_s'] * 1000:.0f} ms"),
        ("records replayed, pruned", f"{loaded['records_replayed']:,}"),
        ("recovery, pruned (load + read)", f"{loaded['load_s'] * 1000:.0f} ms"),
        ("recovery memory, peak", f"{traced['traced_peak_bytes'] / 2**20:.2f} MiB (traced)"),
        ("recovery memory, kept", f"{traced['traced_retained_bytes'] / 2**20:.2f} MiB (traced)"),
        ("recovery RSS growth", f"{memory_kib / 1024:.1f} MiB"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    out = save_result(
        "share_recovery",
        {
            "machine": machine(),
            "args": {k: v for k, v in vars(args).items() if k != "child"},
            "build": built,
            "prune": pruned,
            "recovery_unpruned": unpruned,
            "recovery": loaded,
            "recovery_traced": traced,
            "baseline": baseline,
            "recovery_memory_kib": memory_kib,
        },
    )
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
