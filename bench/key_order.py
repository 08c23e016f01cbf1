"""Key-ordered and scheduled share delivery (Shoal extensions): what ordering costs a
drain, how the in-flight window behaves behind a hot key, how late scheduled records
arrive.

Run from the repository root (on a quiet machine: other load skews every rate):

    .venv/bin/python -m bench.key_order                 # 200k x 100 B, 3 reps, ~5 min
    .venv/bin/python -m bench.key_order --quick         # tiny sizes, 1 rep, ~1.5 min
    .venv/bin/python -m bench.key_order --skip window scheduled --reps 5
    .venv/bin/python -m bench.key_order --batch-records 500   # smaller log batches

The semantics measured are those of the share-group configs
`shoal.share.delivery.order=key` and `shoal.share.delivery.delay.max.ms` (set with
IncrementalAlterConfigs on the GROUP resource before the group's first member). Each
drained topic has one partition and `records` values of `value_bytes` random bytes,
written untimed by one confluent-kafka Producer (acks=all, idempotent, librdkafka's
defaults otherwise, so log batches of up to 10,000 records / 1 MB; `--batch-records`
caps them), each with an 8-byte big-endian key drawn (seeded) uniformly from 10,000
keys ("uniform, 10,000 keys"), from 10 keys, or with `hot_share` (50%) of the records
on one hot key and the rest uniform over 10,000 keys ("hot key"); the "N/batch"
topics are written in log batches of at most `small_batch_records` (200) records,
well under the window of 2000 (a share-partition acquires whole batches, so a window
of batches of 10,000 holds one batch and nothing can wait in it). A drain is a new
share group read by four ShareConsumer processes (spawned; bench/peers/procs.py
`run_jobs`, clocks start after the barrier) in explicit mode, each ACCEPTing every
record as it is seen (the next poll carries the acknowledgements), as
bench/side_by_side.py's share drain does, until the group has had every record; each
then commits once and closes. records/s = records / (the first subscribe() to the
last record received by any consumer), the group join included.

1. "drain": on a `shoal serve` with default settings (bench/peers/runners.py
   ShoalRunner), each topic (10,000 keys, 10 keys, hot key; 10,000 keys in small
   batches) drained with order=none and with order=key, `reps` interleaved reps
   (which order goes first alternates). The table gives the medians, key/none (the
   goal: >= 0.8 on 10,000 keys) and the broker's CPU per record (/proc, less
   sensitive to the machine's load than a rate).

   Checked on every drain (a drain that fails a check is listed, never hidden): every
   record arrived (procs.Seen), none twice nor redelivered, no acknowledgement failed
   (the acknowledgement-commit callback, the final commit_sync), and the group's start
   offset (DescribeShareGroupOffsets) reached the log's end: every record ACKNOWLEDGED.
   Per-key order (`order_violations`): each key's first deliveries, in offset order,
   must have been received in that order: by one consumer at increasing positions of
   what it received, by two at increasing times (CLOCK_MONOTONIC when poll() returned).
   A consumer acknowledges a record only after poll() returned it and the broker hands
   out the key's next record only after that acknowledgement, so under order=key a
   later record cannot reach another consumer first. Under order=none the count is
   printed too: it shows the check can fail.

2. "window": on a second `shoal serve` with its metrics listener on (which also turns
   on per-request metrics, so part 1 runs without it), one drain per order of the
   10,000-key and the hot-key topics in small batches, while a thread here reads
   /metrics every `sample_interval_s` and keeps the group's samples (the
   share-partition's in-flight records by state, its start and end offsets, the
   records held back by their key and the keys holding them). Per drain, over the
   samples between its first and last record: in-flight median and max, ACQUIRED,
   AVAILABLE and held-back medians, the share of samples with the window full (in-flight >= 90% of
   share.partition.max.record.locks, 2000 by default) and the longest time the start
   offset (the oldest unfinished record) and the end offset (acquisition of new
   records) stood still. The scrapes cost the broker CPU: these drains' rates are not
   part 1's.

3. "scheduled": on the second broker, a new topic and share group with
   shoal.share.delivery.delay.max.ms = `delay_max_ms` (60 s). Four ShareConsumers join
   first (warm-up records without the header until each has one, as
   bench/peers/kafka_protocol.end_to_end does); then one producer process sends
   `sched_rate` records/s on an absolute schedule for `sched_seconds`, each with header
   shoal.deliver.at = its wall send time (epoch ms) + a delay drawn uniformly from
   0..`delay_ms` ms, the due time repeated in the value. Lateness = the consumer's wall
   clock when poll() returned the record - its due time (first delivery). Reported:
   the share within 100 ms of due, p50/p99/max/min lateness and the records early by
   more than `EARLY_TOLERANCE_MS`; the same for the records whose delay was at least
   `PARKED_MS` (they waited at the broker: the scheduler's precision alone); the
   records waiting at the broker (sampled; limits.SHARE_SCHEDULED_RECORDS_MAX).

Results: the tables on stdout and bench/results/key_order.json (every drain's figures,
checks and window summary, the machine and its load average before and after).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import random
import re
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from tests.support.clients import create_topic
from tests.support.metrics import METRICS_OVERRIDE, metrics_url
from tests.support.share_admin import describe_offsets
from tests.support.share_consumers import alter_group_configs

from bench.peers.procs import (
    CLOSE_TIMEOUT_S,
    RESULT_TIMEOUT_S,
    START_TIMEOUT_S,
    Seen,
    cpu_s,
    drained,
    run_jobs,
    unique_name,
)
from bench.peers.runners import ShoalRunner
from bench.produce_fetch import machine, save_result
from bench.share_consume import percentile
from shoal.limits import SHARE_SCHEDULED_RECORDS_MAX

KEY = struct.Struct(">q")
"""A record key: the key's number, 8 bytes big-endian."""
HOT_KEY = 1 << 40
"""The hot key's number (outside every uniform range)."""
STAMP = struct.Struct(">qq")
"""The head of a scheduled record's value: due time (epoch ms), sequence (-1: warm-up)."""
DELIVER_AT = "shoal.deliver.at"
CONSUMERS = 4
MAX_RECORD_LOCKS = 2000
"""share.partition.max.record.locks, Shoal's (and Kafka's) default: the window's size."""
FULL_WINDOW = 0.9
"""A sample whose in-flight count is at least this share of MAX_RECORD_LOCKS: full."""
GOAL_RATIO = 0.8
"""key/none drain rate on uniform 10k keys."""
WITHIN_MS = 100.0
EARLY_TOLERANCE_MS = 1.0
"""A record received more than this before its due time is early. The broker turns a
due time (epoch ms) into a not-before time on its monotonic clock, both read in whole
milliseconds (src/shoal/share/schedule.py), so a record may go out up to 1 ms before
its due time on the wall clock (seen: 0.1 ms)."""
PARKED_MS = 250
"""Records with a delay at least this long waited at the broker (the path there is
shorter): their lateness is the scheduler's alone."""
IDLE_S = 60.0
"""A consumer that receives nothing for this long gives up (the drain then fails)."""
WARMUP_INTERVAL_S = 0.02
WARMUP_TIMEOUT_S = 60.0
SETTLE_TIMEOUT_S = 30.0
"""How long after a drain the start offset may take to reach the log's end."""
SEED = 932
PARTS = ("drain", "window", "scheduled")
IN_FLIGHT = "kafka_server_sharepartitionmetrics_inflightmessagecount"
START = "shoal_share_partition_start_offset"
END = "shoal_share_partition_end_offset"
BY_STATE = "shoal_share_partition_records"
HELD = {
    "key_blocked": "shoal_share_partition_key_blocked_records",
    "blocked_keys": "shoal_share_partition_blocked_keys",
    "scheduled": "shoal_share_partition_scheduled_records",
}
"""The share-partition's DeliveryHolds as /metrics gives them: records held back by
their key, keys holding records back, records waiting for their shoal.deliver.at."""


@dataclass(frozen=True)
class Sizes:
    records: int
    value_bytes: int
    key_counts: tuple[int, ...]
    hot_share: float
    reps: int
    sched_rate: int
    sched_seconds: float
    delay_ms: int  # header delays drawn from 0..delay_ms (or all delay_ms: fixed_delay)
    delay_max_ms: int  # the group's shoal.share.delivery.delay.max.ms
    sample_interval_s: float
    batch_records: int | None = None  # the producer's batch.num.messages (None: librdkafka's)
    small_batch_records: int = 200  # the small-batch topics: batches well under the window
    fixed_delay: bool = False  # every record delayed delay_ms ("retry in N s")


FULL = Sizes(
    records=200_000,
    value_bytes=100,
    key_counts=(10_000, 10),
    hot_share=0.5,
    reps=3,
    sched_rate=10_000,
    sched_seconds=20.0,
    delay_ms=2000,
    delay_max_ms=60_000,
    sample_interval_s=0.05,
)
QUICK = replace(
    FULL,
    records=5_000,
    reps=1,
    sched_rate=1_000,
    sched_seconds=3.0,
    sample_interval_s=0.02,
    batch_records=1000,  # 5 log batches: a few acquisitions, not one
    small_batch_records=100,
)


# --- pure helpers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One topic: its key distribution and its log batches."""

    name: str
    keys: int  # uniform over this many keys
    hot_share: float = 0.0  # this share of the records on HOT_KEY instead
    batch_records: int | None = None  # log batches of at most this many (None: Sizes')

    def label(self) -> str:
        keys = f"{self.keys:,} keys"
        text = f"hot key {self.hot_share:.0%} + {keys}" if self.hot_share else f"uniform, {keys}"
        return text if self.batch_records is None else f"{text}, {self.batch_records}/batch"


def drain_workloads(sizes: Sizes) -> list[Workload]:
    """The timed drains' topics: uniform over each key count and the hot key, in the
    batches of `sizes.batch_records`; then uniform over the first key count in small
    batches (`small_batch_records`)."""
    first, small = sizes.key_counts[0], sizes.small_batch_records
    return [
        *(Workload(f"uniform-{k}", k) for k in sizes.key_counts),
        Workload("hot", first, sizes.hot_share),
        Workload(f"uniform-{first}-b{small}", first, batch_records=small),
    ]


def window_workloads(sizes: Sizes) -> list[Workload]:
    """The sampled drains' topics, in small batches (`small_batch_records`: a window
    of 2000 records holds several, so it can fill with held-back records): uniform
    over the first key count, and the hot key."""
    first, small = sizes.key_counts[0], sizes.small_batch_records
    return [
        Workload(f"uniform-{first}-b{small}", first, batch_records=small),
        Workload(f"hot-b{small}", first, sizes.hot_share, batch_records=small),
    ]


def key_sequence(n: int, keys: int, *, hot_share: float = 0.0, seed: int = SEED) -> array[int]:
    """`n` key numbers: each HOT_KEY with probability `hot_share`, else uniform over
    range(keys); the same for the same arguments."""
    draw = random.Random(seed)
    out: array[int] = array("q")
    for _ in range(n):
        out.append(HOT_KEY if draw.random() < hot_share else draw.randrange(keys))
    return out


Delivery = tuple[int, int, int, int, int]
"""(offset, key number (-1: no key), consumer, position in what it received, receipt
time in monotonic ns)."""


def first_deliveries(outs: Sequence[dict[str, Any]]) -> list[Delivery]:
    """Each record's first delivery (earliest receipt) from the consumers' results
    (arrays "keys": offsets, "record_keys", "at_ns"), in offset order."""
    first: dict[int, Delivery] = {}
    for consumer, out in enumerate(outs):
        offsets, keys, times = array("q"), array("q"), array("q")
        offsets.frombytes(out["keys"])
        keys.frombytes(out["record_keys"])
        times.frombytes(out["at_ns"])
        for position, (offset, key, at) in enumerate(zip(offsets, keys, times, strict=True)):
            seen = first.get(offset)
            if seen is None or at < seen[4]:
                first[offset] = (offset, key, consumer, position, at)
    return [first[offset] for offset in sorted(first)]


def order_violations(deliveries: Iterable[Delivery]) -> dict[str, Any]:
    """Per key, consecutive first deliveries in offset order must have been received
    in that order: by one consumer at increasing positions, by two at increasing times.
    Records without a key are not checked. Counts the pairs out of order."""
    last: dict[int, Delivery] = {}
    pairs = violations = 0
    keys_violated: set[int] = set()
    example: list[Delivery] = []
    for delivery in sorted(deliveries):
        key = delivery[1]
        if key < 0:
            continue
        before = last.get(key)
        last[key] = delivery
        if before is None:
            continue
        pairs += 1
        same_consumer = before[2] == delivery[2]
        in_order = before[3] < delivery[3] if same_consumer else before[4] < delivery[4]
        if not in_order:
            violations += 1
            keys_violated.add(key)
            if not example:
                example = [before, delivery]
    return {
        "keys": len(last),
        "pairs": pairs,
        "violations": violations,
        "keys_violated": len(keys_violated),
        "example": example,  # (offset, key, consumer, position, at_ns) x 2
    }


_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def group_samples(text: str, group: str) -> dict[str, float]:
    """The samples of a /metrics exposition labelled with share group `group`, by
    name plus their other labels but topic and partition, e.g.
    "shoal_share_partition_records{state=acquired}"."""
    marker = f'group="{group}"'
    out: dict[str, float] = {}
    for line in text.splitlines():
        if marker not in line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        rest = sorted(
            f"{k}={v}"
            for k, v in _LABEL.findall(labels)
            if k not in ("group", "topic", "partition")
        )
        out[name + ("{" + ",".join(rest) + "}" if rest else "")] = float(value)
    return out


def _longest_flat_s(points: Sequence[tuple[float, float]], end: float) -> float:
    """The longest time a value stood still below `end` (samples (t, value))."""
    longest = 0.0
    since: tuple[float, float] | None = None
    for t, v in points:
        if since is None or v != since[1]:
            since = (t, v)
        elif v < end:
            longest = max(longest, t - since[0])
    return longest


def window_summary(
    samples: Sequence[tuple[float, dict[str, float]]],
    *,
    records: int,
    max_locks: int = MAX_RECORD_LOCKS,
) -> dict[str, Any]:
    """What the window did during a drain, from the samples (t seconds, group_samples)
    taken while the share-partition was loaded: in-flight median and max, ACQUIRED and
    AVAILABLE medians, the share of samples with the window full, the longest stand-
    stills of the start and end offsets before the log's end (`records`), the held
    records' (HELD) medians and maxima, and every other sample's median and max."""
    loaded = [(t, s) for t, s in samples if IN_FLIGHT in s]
    if not loaded:
        return {"samples": 0}

    def series(name: str) -> list[float]:
        return [s[name] for _, s in loaded if name in s]

    in_flight = series(IN_FLIGHT)
    out: dict[str, Any] = {
        "samples": len(loaded),
        "in_flight_median": statistics.median(in_flight),
        "in_flight_max": max(in_flight),
        "full_share": sum(v >= FULL_WINDOW * max_locks for v in in_flight) / len(in_flight),
        "start_flat_max_s": _longest_flat_s(
            [(t, s[START]) for t, s in loaded if START in s], records
        ),
        "end_flat_max_s": _longest_flat_s([(t, s[END]) for t, s in loaded if END in s], records),
    }
    for state in ("acquired", "available"):
        values = series(f"{BY_STATE}{{state={state}}}")
        out[f"{state}_median"] = statistics.median(values) if values else None
    for field, name in HELD.items():
        values = series(name)
        out[f"{field}_median"] = statistics.median(values) if values else None
        out[f"{field}_max"] = max(values) if values else None
    named = {IN_FLIGHT, START, END, *HELD.values()}
    others = sorted({name for _, s in loaded for name in s} - named)
    out["other"] = {
        name: {"median": statistics.median(values), "max": max(values)}
        for name in others
        if not name.startswith(BY_STATE) and (values := series(name))
    }
    return out


SERIES = (
    IN_FLIGHT,
    f"{BY_STATE}{{state=acquired}}",
    f"{BY_STATE}{{state=available}}",
    f"{BY_STATE}{{state=acknowledged}}",
    HELD["key_blocked"],
    HELD["scheduled"],
    HELD["blocked_keys"],
    START,
    END,
)
SERIES_COLUMNS = (
    "t_s",
    "in_flight",
    "acquired",
    "available",
    "acknowledged",
    "key_blocked",
    "scheduled",
    "blocked_keys",
    "start_offset",
    "end_offset",
)


def window_series(
    samples: Sequence[tuple[float, dict[str, float]]], *, since: float
) -> list[list[float | None]]:
    """The samples as rows of SERIES_COLUMNS (seconds from `since`; None: not sampled),
    for the JSON: how the window moved during one drain."""
    return [[round(t - since, 3), *(found.get(name) for name in SERIES)] for t, found in samples]


def lateness_summary(
    lateness_ns: Sequence[int],
    *,
    within_ms: float = WITHIN_MS,
    early_tolerance_ms: float = EARLY_TOLERANCE_MS,
) -> dict[str, Any]:
    """Receipt - due time of each record (ns): the share within `within_ms`, early
    records (more than `early_tolerance_ms` before due), p50/p99/max and min (ms,
    nearest rank)."""
    ordered = sorted(v / 1e6 for v in lateness_ns)
    if not ordered:
        return {"records": 0}
    return {
        "records": len(ordered),
        "within_share": sum(-early_tolerance_ms <= v <= within_ms for v in ordered) / len(ordered),
        "early": sum(v < -early_tolerance_ms for v in ordered),
        "p50_ms": percentile(ordered, 50),
        "p99_ms": percentile(ordered, 99),
        "max_ms": ordered[-1],
        "min_ms": ordered[0],
    }


def median_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(present) if present else None


def summarise(drains: Sequence[dict[str, Any]], *, goal_keys: int = 10_000) -> list[dict[str, Any]]:
    """One row per workload (in first-run order): each order's median records/s over
    its reps (failed drains left out), key/none, the goal (on uniform `goal_keys` keys,
    whatever the batches) and its verdict, and per order the most order violations of
    a rep, the drains that failed a check and the broker's CPU per record (median)."""
    rows = []
    for name in dict.fromkeys(d["workload"] for d in drains):
        mine = [d for d in drains if d["workload"] == name]
        row: dict[str, Any] = {"workload": name, "label": mine[0]["label"]}
        for order in ("none", "key"):
            runs = [d for d in mine if d["order"] == order]
            row[order] = median_of(d.get("records_per_s") for d in runs if not d.get("error"))
            row[f"{order}_violations"] = max(
                (d["order_check"]["violations"] for d in runs if "order_check" in d),
                default=None,
            )
            row[f"{order}_failed"] = sum(1 for d in runs if d.get("error") or d.get("problems"))
            row[f"{order}_broker_us"] = median_of(d.get("broker_us_per_record") for d in runs)
        key, none = row["key"], row["none"]
        row["key/none"] = key / none if key is not None and none else None
        goal = name.split("-")[:2] == ["uniform", str(goal_keys)]
        row["goal"] = f"key/none >= {GOAL_RATIO}" if goal else ""
        row["met"] = (
            None if not row["goal"] or row["key/none"] is None else row["key/none"] >= GOAL_RATIO
        )
        rows.append(row)
    return rows


def _cell(value: float | None, fmt: str) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else fmt.format(value)
    )


def _aligned(lines: list[list[str]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for n, line in enumerate(lines):
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def drain_table(rows: Sequence[dict[str, Any]]) -> str:
    """Records/s of each workload's drains, key/none, the goal, the order violations."""
    lines = [
        [
            "workload",
            "order=none",
            "order=key",
            "key/none",
            "goal",
            "met?",
            "out of order",
            "broker CPU/rec",
        ]
    ]
    for row in rows:
        lines.append(
            [
                row["label"],
                _cell(row["none"], "{:,.0f}/s"),
                _cell(row["key"], "{:,.0f}/s"),
                _cell(row["key/none"], "{:.2f}x"),
                row["goal"] or "-",
                {True: "yes", False: "NO", None: "-" if not row["goal"] else "?"}[row["met"]],
                f"{_cell(row['none_violations'], '{:,}')} / {_cell(row['key_violations'], '{:,}')}",
                f"{_cell(row.get('none_broker_us'), '{:.1f}')} / "
                f"{_cell(row.get('key_broker_us'), '{:.1f}')} us",
            ]
        )
    return "\n".join(_aligned(lines))


def window_rows(drains: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload and order, over its reps: medians of each drain's window summary
    (in-flight, ACQUIRED, AVAILABLE, full share), the largest in-flight and stand-
    stills, and the broker's CPU per record (us)."""
    rows = []
    keys = dict.fromkeys((d["workload"], d["order"]) for d in drains)
    for workload, order in keys:
        runs = [d for d in drains if (d["workload"], d["order"]) == (workload, order)]
        windows = [d["window"] for d in runs if (d.get("window") or {}).get("samples")]

        def med(name: str, windows: list[dict[str, Any]] = windows) -> float | None:
            return median_of(w.get(name) for w in windows)

        def top(name: str, windows: list[dict[str, Any]] = windows) -> float | None:
            present = [w[name] for w in windows if w.get(name) is not None]
            return max(present) if present else None

        rows.append(
            {
                "workload": workload,
                "label": runs[0]["label"],
                "order": order,
                "records_per_s": median_of(d.get("records_per_s") for d in runs),
                "in_flight_median": med("in_flight_median"),
                "in_flight_max": top("in_flight_max"),
                "acquired_median": med("acquired_median"),
                "available_median": med("available_median"),
                "key_blocked_median": med("key_blocked_median"),
                "key_blocked_max": top("key_blocked_max"),
                "blocked_keys_median": med("blocked_keys_median"),
                "full_share": med("full_share"),
                "start_flat_max_s": top("start_flat_max_s"),
                "end_flat_max_s": top("end_flat_max_s"),
                "broker_us": median_of(d.get("broker_us_per_record") for d in runs),
            }
        )
    return rows


def window_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        [
            "workload, order",
            "records/s",
            "in-flight p50",
            "in-flight max",
            "acquired p50",
            "available p50",
            "held back p50",
            "held back max",
            "keys p50",
            "full",
            "start still",
            "end still",
            "broker CPU/rec",
        ]
    ]
    for row in rows:
        lines.append(
            [
                f"{row['label']}, {row['order']}",
                _cell(row["records_per_s"], "{:,.0f}/s"),
                _cell(row["in_flight_median"], "{:,.0f}"),
                _cell(row["in_flight_max"], "{:,.0f}"),
                _cell(row["acquired_median"], "{:,.0f}"),
                _cell(row["available_median"], "{:,.0f}"),
                _cell(row["key_blocked_median"], "{:,.0f}"),
                _cell(row["key_blocked_max"], "{:,.0f}"),
                _cell(row["blocked_keys_median"], "{:,.0f}"),
                _cell(row["full_share"], "{:.0%}"),
                _cell(row["start_flat_max_s"], "{:.2f} s"),
                _cell(row["end_flat_max_s"], "{:.2f} s"),
                _cell(row["broker_us"], "{:.1f} us"),
            ]
        )
    return "\n".join(_aligned(lines))


def scheduled_table(result: dict[str, Any]) -> str:
    lines = [["records", "delays", "within 100 ms", "p50", "p99", "max", "min", "early"]]
    for name, label in (("all", "all"), ("parked", f">= {PARKED_MS} ms")):
        late = result.get(name) or {}
        if not late.get("records"):
            continue
        lines.append(
            [
                f"{late['records']:,}",
                label,
                f"{late['within_share']:.1%}",
                f"{late['p50_ms']:.1f} ms",
                f"{late['p99_ms']:.1f} ms",
                f"{late['max_ms']:.1f} ms",
                f"{late['min_ms']:.1f} ms",
                f"{late['early']:,}",
            ]
        )
    return "\n".join(_aligned(lines))


# --- the client processes ----------------------------------------------------------------


def _reader(
    address: str,
    topic: str,
    group: str,
    n: int,
    total: Any,  # mp.Value("q"): measured records the group has received
    warm: Any,  # mp.Array("b"): which consumers have had a record
    index: int,
    scheduled: bool,
    barrier: Any,
) -> dict[str, Any]:
    """A ShareConsumer in explicit mode ACCEPTing every record as it is seen, until the
    group has `n` measured records. Keeps, per record received, its offset (`keys`,
    as procs.Seen reads them), key number and the monotonic time poll() returned it;
    with `scheduled`, each measured record's sequence and lateness (wall clock - due
    time from the value, ns) instead of key and time; warm-up records (sequence -1)
    are acknowledged and not counted."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    ack_failures: list[str] = []

    def committed(offsets: Any, error: Any) -> None:
        if error is not None:
            ack_failures.append(f"{error} ({sum(len(v) for v in offsets.values())} records)")

    consumer.set_acknowledgement_commit_callback(committed)
    offsets, record_keys, at_ns = array("q"), array("q"), array("q")
    seqs, lateness = array("q"), array("q")
    size = redelivered = 0
    first = last = 0
    accept = AcknowledgeType.ACCEPT
    from_bytes = int.from_bytes
    barrier.wait(START_TIMEOUT_S)
    cpu = cpu_s()
    subscribed = time.monotonic_ns()
    consumer.subscribe([topic])
    idle_since = time.monotonic()
    try:
        while total.value < n:
            batch = consumer.poll(0.1)
            if not batch:
                if time.monotonic() - idle_since > IDLE_S:
                    break
                continue
            now = time.monotonic_ns()
            wall = time.time_ns()
            idle_since = time.monotonic()
            warm[index] = 1
            counted = 0
            for message in batch:
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                consumer.acknowledge(message, accept)
                value = message.value() or b""
                if scheduled:
                    due_ms, seq = STAMP.unpack_from(value)
                    if seq < 0:
                        continue
                    seqs.append(seq)
                    lateness.append(wall - due_ms * 1_000_000)
                else:
                    key = message.key()
                    record_keys.append(from_bytes(key, "big") if key else -1)
                    at_ns.append(now)
                offsets.append(message.offset() or 0)
                size += len(value)
                if message.delivery_count() != 1:
                    redelivered += 1
                counted += 1
            if counted:
                last = now
                first = first or now
                with total.get_lock():
                    total.value += counted
        cpu = cpu_s() - cpu
        for tp, outcome in consumer.commit_sync(CLOSE_TIMEOUT_S).items():
            if outcome is not None:
                ack_failures.append(f"commit_sync {tp}: {outcome}")
    finally:
        consumer.close()
    return {
        "subscribed": subscribed,
        "first": first,
        "last": last,
        "count": len(offsets),
        "bytes": size,
        "redelivered": redelivered,
        "ack_failures": ack_failures,
        "keys": offsets.tobytes(),
        "record_keys": record_keys.tobytes(),
        "at_ns": at_ns.tobytes(),
        "seqs": seqs.tobytes(),
        "lateness": lateness.tobytes(),
        "cpu_s": cpu,
    }


def _paced_producer(
    address: str,
    topic: str,
    rate: int,
    delays: bytes,  # array("q") of each measured record's delay (ms)
    size: int,
    go: Any,  # mp.Event: every consumer has a warm-up record
    barrier: Any,
) -> dict[str, Any]:
    """Warm-up records (no header) every WARMUP_INTERVAL_S until `go`; then one record
    per delay at `rate` records/s on an absolute schedule (overdue ones back to back),
    each with shoal.deliver.at = its wall send time (ms) + its delay, the same due
    time and its sequence in the value (STAMP)."""
    from bench.peers.kafka_protocol import idempotent_producer

    failures: list[str] = []
    producer = idempotent_producer(address, topic, failures, START_TIMEOUT_S)
    wanted: array[int] = array("q")
    wanted.frombytes(delays)
    padding = os.urandom(max(0, size - STAMP.size))
    barrier.wait(START_TIMEOUT_S)
    warmups = 0
    while not go.wait(WARMUP_INTERVAL_S):
        producer.produce(topic, STAMP.pack(0, -1) + padding)
        producer.poll(0)
        warmups += 1
    cpu = cpu_s()
    interval_ns = 1_000_000_000 / rate
    behind_max = 0
    start = time.monotonic_ns()
    for seq, delay in enumerate(wanted):
        due = start + int(seq * interval_ns)
        while (now := time.monotonic_ns()) < due:
            producer.poll(0)
            time.sleep(min(due - now, 2_000_000) / 1e9)
        behind_max = max(behind_max, now - due)
        at_ms = time.time_ns() // 1_000_000 + delay
        value = STAMP.pack(at_ms, seq) + padding
        headers: list[tuple[str, str | bytes | None]] = [(DELIVER_AT, str(at_ms).encode())]
        while True:
            try:
                producer.produce(topic, value, headers=headers)
                break
            except BufferError:  # the local queue is full: wait for deliveries, retry
                producer.poll(0.005)
    sent = time.monotonic_ns()
    remaining = producer.flush(RESULT_TIMEOUT_S)
    if remaining or failures:
        raise RuntimeError(f"{remaining} undelivered, {len(failures)} failed: {failures[:3]}")
    return {
        "start": start,
        "sent": sent,
        "warmups": warmups,
        "behind_max_ms": behind_max / 1e6,
        "cpu_s": cpu_s() - cpu,
    }


# --- the workloads -----------------------------------------------------------------------


class WindowSampler:
    """A thread reading the broker's /metrics every `interval_s` (from `start()` to
    `stop()`), keeping (monotonic s, group_samples of `group`). A failed read is
    counted and the first one kept; the drain goes on."""

    def __init__(self, url: str, group: str, interval_s: float) -> None:
        self.url = f"{url}/metrics"
        self.group = group
        self.interval_s = interval_s
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.failures = 0
        self.first_failure = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def take(self) -> dict[str, float]:
        with urllib.request.urlopen(self.url, timeout=30) as response:
            text = response.read().decode("utf-8")
        return group_samples(text, self.group)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.take()))
            except OSError as exc:
                self.failures += 1
                self.first_failure = self.first_failure or f"{self.url}: {exc}"
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(60)


def produce_keyed(
    address: str,
    topic: str,
    keys: Sequence[int],
    value_bytes: int,
    batch_records: int | None = None,
) -> None:
    """A one-partition topic of one record per key number (KEY), in that order: random
    values of `value_bytes` (a pool of 256); acks=all and idempotent (the order kept),
    librdkafka's defaults otherwise (linger.ms 5, 1 MB batches of at most 10,000
    records) as bench/peers/kafka_protocol.produce, or log batches of at most
    `batch_records`. Untimed."""
    from bench.peers.kafka_protocol import idempotent_producer

    create_topic(address, topic, partitions=1, timeout_s=120.0)
    failures: list[str] = []
    batching = {} if batch_records is None else {"batch.num.messages": batch_records}
    producer = idempotent_producer(address, topic, failures, 120.0, **batching)
    pool = [os.urandom(value_bytes) for _ in range(256)]
    pack = KEY.pack
    for i, key in enumerate(keys):
        while True:
            try:
                producer.produce(topic, pool[i & 255], key=pack(key), partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(300)
    if remaining or failures:
        raise RuntimeError(
            f"{topic}: {remaining} undelivered, {len(failures)} failed: {failures[:3]}"
        )


def _settled(address: str, group: str, topic: str, records: int) -> tuple[int, int] | None:
    """The share group's start offset and lag on `topic` (DescribeShareGroupOffsets,
    its persisted state) once the start offset reached `records` (every record
    ACKNOWLEDGED), else the last read within SETTLE_TIMEOUT_S (None: no state)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    found = None
    while time.monotonic() < deadline:
        start = describe_offsets(address, group).get(topic, {}).get(0)
        found = None if start is None else (start[0], start[2])
        if found is not None and found[0] >= records:
            break
        time.sleep(0.1)
    return found


def drain(
    runner: ShoalRunner,
    url: str | None,
    topic: str,
    workload: Workload,
    order: str,
    sizes: Sizes,
    records: int,
) -> dict[str, Any]:
    """One drain of `topic` (`records` records) by a new share group with
    shoal.share.delivery.order=`order` (the module docstring's parts 1 and 2); with
    `url` (a metrics listener's), the window sampled while it runs."""
    address = runner.address
    group = unique_name(f"key-order-{workload.name}-{order}")
    alter_group_configs(
        address,
        group,
        {"share.auto.offset.reset": "earliest", "shoal.share.delivery.order": order},
    )
    context = mp.get_context("spawn")
    total = context.Value("q", 0)
    warm = context.Array("b", CONSUMERS)
    sampler = None if url is None else WindowSampler(url, group, sizes.sample_interval_s)
    broker_cpu = runner.cpu_seconds()
    try:
        outs = run_jobs(
            [
                (_reader, (address, topic, group, records, total, warm, i, False))
                for i in range(CONSUMERS)
            ],
            after_barrier=None if sampler is None else sampler.start,
        )
    finally:
        if sampler is not None:
            sampler.stop()
    broker_cpu = runner.cpu_seconds() - broker_cpu
    began = min(o["subscribed"] for o in outs)
    result = drained(outs, records, Seen(outs), began)
    result["last_ns"] = max(o["last"] for o in outs)
    span = (min(o["first"] for o in outs if o["count"]) / 1e9, result["last_ns"] / 1e9)
    window = None
    if sampler is not None:
        during = [(t, found) for t, found in sampler.samples if span[0] <= t <= span[1]]
        window = {
            **window_summary(during, records=records),
            "series": window_series(during, since=span[0]),
        }
    settled = _settled(address, group, topic, records)
    checks = order_violations(first_deliveries(outs))
    ack_failures = [f for o in outs for f in o["ack_failures"]]
    redelivered = sum(o["redelivered"] for o in outs)
    problems = []
    if result["duplicates"] or redelivered:
        problems.append(f"{result['duplicates']} duplicates, {redelivered} redelivered")
    if ack_failures:
        problems.append(f"acknowledgements failed: {ack_failures[:3]}")
    if settled is None or settled[0] < records:
        problems.append(f"start offset, lag {settled}: not all {records} ACKNOWLEDGED")
    if order == "key" and checks["violations"]:
        problems.append(f"{checks['violations']} key-order violations, e.g. {checks['example']}")
    return {
        **result,
        "group": group,
        "redelivered": redelivered,
        "broker_cpu_s": broker_cpu,
        "broker_us_per_record": 1e6 * broker_cpu / records,
        "start_offset_lag_after": settled,
        "ack_failures": len(ack_failures),
        "order_check": checks,
        "window": window,
        "sampler_failures": None if sampler is None else sampler.failures,
        "sampler_first_failure": None if sampler is None else sampler.first_failure,
        "problems": problems,
    }


def scheduled(runner: ShoalRunner, url: str, sizes: Sizes) -> dict[str, Any]:
    """Part 3 of the module docstring: lateness of records with shoal.deliver.at."""
    address = runner.address
    topic = unique_name("key-order-scheduled")
    group = unique_name("key-order-scheduled")
    create_topic(address, topic, partitions=1, timeout_s=120.0)
    alter_group_configs(
        address,
        group,
        {
            "share.auto.offset.reset": "earliest",
            "shoal.share.delivery.delay.max.ms": sizes.delay_max_ms,
        },
    )
    n = max(1, int(sizes.sched_rate * sizes.sched_seconds))
    draw = random.Random(SEED)
    if sizes.fixed_delay:
        delays: array[int] = array("q", [sizes.delay_ms]) * n
    else:
        delays = array("q", (draw.randint(0, sizes.delay_ms) for _ in range(n)))
    context = mp.get_context("spawn")
    total = context.Value("q", 0)
    warm = context.Array("b", CONSUMERS)
    go = context.Event()
    sampler = WindowSampler(url, group, sizes.sample_interval_s)
    warmed: list[bool] = []

    def release() -> None:
        deadline = time.monotonic() + WARMUP_TIMEOUT_S
        while not all(warm[:]) and time.monotonic() < deadline:
            time.sleep(0.01)
        warmed.append(all(warm[:]))
        sampler.start()
        go.set()

    broker_cpu = runner.cpu_seconds()
    try:
        outs = run_jobs(
            [
                (
                    _paced_producer,
                    (address, topic, sizes.sched_rate, delays.tobytes(), sizes.value_bytes, go),
                ),
                *(
                    (_reader, (address, topic, group, n, total, warm, i, True))
                    for i in range(CONSUMERS)
                ),
            ],
            after_barrier=release,
        )
    finally:
        sampler.stop()
    broker_cpu = runner.cpu_seconds() - broker_cpu
    producer, readers = outs[0], outs[1:]
    earliest: dict[int, int] = {}
    for out in readers:
        seqs, lateness = array("q"), array("q")
        seqs.frombytes(out["seqs"])
        lateness.frombytes(out["lateness"])
        for seq, late in zip(seqs, lateness, strict=True):
            if seq not in earliest or late < earliest[seq]:
                earliest[seq] = late
    received = sum(len(out["seqs"]) // 8 for out in readers)
    missing = n - len(earliest)
    ack_failures = [f for o in readers for f in o["ack_failures"]]
    everything = lateness_summary(list(earliest.values()))
    parked = lateness_summary([v for s, v in earliest.items() if delays[s] >= PARKED_MS])
    problems = []
    if missing:
        problems.append(f"{missing} of {n} records never arrived")
    if received - len(earliest):
        problems.append(f"{received - len(earliest)} duplicates")
    if ack_failures:
        problems.append(f"acknowledgements failed: {ack_failures[:3]}")
    if everything.get("early"):
        problems.append(f"{everything['early']} records early by more than {EARLY_TOLERANCE_MS} ms")
    send_s = (producer["sent"] - producer["start"]) / 1e9
    return {
        "records": n,
        "rate": sizes.sched_rate,
        "achieved_rate": n / send_s if send_s > 0 else None,
        "behind_max_ms": producer["behind_max_ms"],
        "delay_ms": sizes.delay_ms,
        "fixed_delay": sizes.fixed_delay,
        "delay_max_ms": sizes.delay_max_ms,
        "warmed": bool(warmed and warmed[0]),
        "warmup_records": producer["warmups"],
        "received": len(earliest),
        "duplicates": received - len(earliest),
        "redelivered": sum(o["redelivered"] for o in readers),
        "all": everything,
        "parked": parked,
        "broker_cpu_s": broker_cpu,
        # the log's end: the warm-up records and then the measured ones
        "window": {
            **window_summary(sampler.samples, records=producer["warmups"] + n),
            "series": window_series(sampler.samples, since=producer["start"] / 1e9),
        },
        "problems": problems,
    }


# --- the run -----------------------------------------------------------------------------


def _attempt(what: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`fn()`, or {"error": ...} if it failed (reported; the run goes on)."""
    began = time.monotonic()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - kept in the JSON and the report
        print(f"  {what} failed: {exc}\n{traceback.format_exc(limit=-3)}", file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {exc}"}
    print(
        f"  {what}: {time.monotonic() - began:.1f} s"
        + (f" ({result['records_per_s']:,.0f}/s)" if "records_per_s" in result else "")
        + (f"  PROBLEMS: {result['problems']}" if result.get("problems") else ""),
        file=sys.stderr,
        flush=True,
    )
    return result


WARMUP_RECORDS = 500


class Broker:
    """A started `shoal serve` (ShoalRunner, default settings plus `overrides`) on a data
    directory under `root`, warmed up untimed (a small topic drained once with each
    order: the broker's lazy paths loaded, as on a broker that has served groups);
    with `metrics`, its listener's URL. Stopped and removed on exit."""

    def __init__(self, root: Path, sizes: Sizes, *, metrics: bool) -> None:
        self.sizes = sizes
        overrides = (METRICS_OVERRIDE,) if metrics else ()
        self.runner = ShoalRunner(root / "data", overrides=overrides)
        self.metrics = metrics
        self.url: str | None = None

    def __enter__(self) -> Broker:
        self.runner.start()
        try:
            if self.metrics:
                self.url = metrics_url(self.runner.shoal)
            topic = self.topic(Workload("warmup", 10), WARMUP_RECORDS)
            for order in ("none", "key"):
                drain(
                    self.runner,
                    None,
                    topic,
                    Workload("warmup", 10),
                    order,
                    self.sizes,
                    WARMUP_RECORDS,
                )
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.runner.stop()
        shutil.rmtree(self.runner.data_dir, ignore_errors=True)

    def topic(self, workload: Workload, records: int) -> str:
        """A new topic of `records` records keyed as `workload` says."""
        topic = unique_name(f"key-order-{workload.name}")
        keys = key_sequence(records, workload.keys, hot_share=workload.hot_share)
        produce_keyed(
            self.runner.address,
            topic,
            keys,
            self.sizes.value_bytes,
            workload.batch_records or self.sizes.batch_records,
        )
        return topic

    def drains(
        self, chosen: Sequence[Workload], reps: int, *, sampled: bool
    ) -> list[dict[str, Any]]:
        """`reps` interleaved reps of a drain of each workload's topic with each order
        (which order goes first alternates between reps); sampled: with the window
        sampler (this broker's metrics listener)."""
        topics = {w.name: self.topic(w, self.sizes.records) for w in chosen}
        url = self.url if sampled else None
        out = []
        for rep in range(1, reps + 1):
            orders = ("none", "key") if rep % 2 else ("key", "none")
            for workload in chosen:
                for order in orders:
                    what = f"{'window' if sampled else 'drain'} rep {rep}: "
                    result = _attempt(
                        f"{what}{workload.label()}, order={order}",
                        partial(
                            drain,
                            self.runner,
                            url,
                            topics[workload.name],
                            workload,
                            order,
                            self.sizes,
                            self.sizes.records,
                        ),
                    )
                    out.append(
                        {
                            "workload": workload.name,
                            "label": workload.label(),
                            "order": order,
                            "rep": rep,
                            **result,
                        }
                    )
        return out


def run(sizes: Sizes, skip: Sequence[str] = (), *, quick: bool = False) -> dict[str, Any]:
    """The parts not in `skip` (module docstring): the timed drains on a broker with
    default settings; the sampled drains and the scheduled records on a second one with
    its metrics listener on (which turns on per-request metrics too: not in the rates
    of part 1)."""
    parts = [p for p in PARTS if p not in skip]
    load_before = os.getloadavg()
    began = time.monotonic()
    drains: list[dict[str, Any]] = []
    windows: list[dict[str, Any]] = []
    sched: dict[str, Any] | None = None
    sched_fixed: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="key-order-") as tmp:
        if "drain" in parts:
            with Broker(Path(tmp) / "plain", sizes, metrics=False) as broker:
                drains = broker.drains(drain_workloads(sizes), sizes.reps, sampled=False)
        if "window" in parts or "scheduled" in parts:
            with Broker(Path(tmp) / "metrics", sizes, metrics=True) as broker:
                if "window" in parts:
                    windows = broker.drains(window_workloads(sizes), 1, sampled=True)
                if "scheduled" in parts:
                    assert broker.url is not None
                    sched = _attempt(
                        "scheduled delivery", partial(scheduled, broker.runner, broker.url, sizes)
                    )
                    fixed = replace(sizes, fixed_delay=True)
                    sched_fixed = _attempt(
                        "scheduled delivery, fixed delay",
                        partial(scheduled, broker.runner, broker.url, fixed),
                    )
    host = machine()
    return {
        "machine": {
            **host,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "settings": {
            **asdict(sizes),
            "quick": quick,
            "consumers": CONSUMERS,
            "parts": parts,
            "max_record_locks": MAX_RECORD_LOCKS,
            "hot_key": HOT_KEY,
            "seed": SEED,
            "window_broker_overrides": [METRICS_OVERRIDE],
            "window_series_columns": list(SERIES_COLUMNS),
        },
        "seconds": time.monotonic() - began,
        "rows": summarise(drains),
        "window_rows": window_rows(windows),
        "drains": drains,
        "windows": windows,
        "scheduled": sched,
        "scheduled_fixed": sched_fixed,
    }


def report(result: dict[str, Any]) -> str:
    settings = result["settings"]
    info = result["machine"]
    lines = []
    batches = settings["batch_records"] or "librdkafka's default (10,000 / 1 MB)"
    if result["rows"]:
        lines += [
            f"drain: {settings['records']:,} records x {settings['value_bytes']} B, one partition, "
            f"log batches of at most {batches} records, {settings['consumers']} ShareConsumers "
            f"ACCEPTing each record (records/s, median of {settings['reps']} interleaved reps; "
            "out of order: most pairs in one rep, none / key; broker CPU per record, medians)",
            drain_table(result["rows"]),
        ]
    if result["window_rows"]:
        lines += [
            "",
            f"window: a second broker with its metrics listener, one sampled drain each, every "
            f"{settings['sample_interval_s']} s; share.partition.max.record.locks "
            f"{settings['max_record_locks']}; p50 over the drain's samples; full = samples >= "
            f"{FULL_WINDOW:.0%} of it; held back = AVAILABLE records held by their key, keys = "
            "keys holding them; still = longest time the start / end offset stood still",
            window_table(result["window_rows"]),
        ]
    for key in ("scheduled", "scheduled_fixed"):
        lines += _scheduled_report(result.get(key))
    problems = [
        f"  {d['label']}, order={d['order']}, rep {d['rep']}: {d.get('error') or d['problems']}"
        for d in [*result["drains"], *result["windows"]]
        if d.get("error") or d.get("problems")
    ]
    for key in ("scheduled", "scheduled_fixed"):
        sched = result.get(key)
        if sched is not None and sched.get("problems"):
            problems.append(f"  {key}: {sched['problems']}")
    if problems:
        lines += ["", "checks failed:", *problems]
    before = " ".join(f"{v:.1f}" for v in info["load_average_before"])
    after = " ".join(f"{v:.1f}" for v in info["load_average_after"])
    lines += [
        "",
        f"{result['seconds']:.0f} s in all; {info['cores']} cores ({info['cpu']}), "
        f"load average {before} before, {after} after; Shoal {info['git_commit']}, "
        f"confluent-kafka {info['confluent_kafka']} (librdkafka {info['librdkafka']})",
    ]
    return "\n".join(lines)


def _scheduled_report(sched: dict[str, Any] | None) -> list[str]:
    """The lines of one scheduled part (delays uniform, or all equal)."""
    if sched is None:
        return []
    if "error" in sched:
        return ["", f"scheduled delivery: failed: {sched['error']}"]
    delays = (
        f"every delay {sched['delay_ms']} ms"
        if sched.get("fixed_delay")
        else f"delays 0..{sched['delay_ms']} ms"
    )
    window = sched["window"]
    return [
        "",
        f"scheduled delivery: {sched['records']:,} records at {sched['rate']:,}/s "
        f"(achieved {sched['achieved_rate']:,.0f}/s, producer at most "
        f"{sched['behind_max_ms']:.0f} ms behind), {delays}, "
        f"delay.max.ms {sched['delay_max_ms']}; lateness = receipt - due",
        scheduled_table(sched),
        "records waiting for their time (sampled): median "
        f"{_cell(window.get('scheduled_median'), '{:,.0f}')}, max "
        f"{_cell(window.get('scheduled_max'), '{:,.0f}')} "
        f"(limit {SHARE_SCHEDULED_RECORDS_MAX:,}); the window (in-flight, "
        f"acknowledged records behind a waiting one included) "
        f"{_cell(window.get('full_share'), '{:.0%}')} of the samples "
        f">= {FULL_WINDOW:.0%} of {MAX_RECORD_LOCKS}, in-flight median "
        f"{_cell(window.get('in_flight_median'), '{:,.0f}')}; the end offset "
        f"stood still up to {_cell(window.get('end_flat_max_s'), '{:.2f}')} s",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.key_order",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 rep, to try it")
    parser.add_argument("--reps", type=int, default=None, help="interleaved reps (default 3)")
    parser.add_argument("--records", type=int, default=None, help="records per drained topic")
    parser.add_argument("--skip", nargs="+", choices=PARTS, default=[], help="parts to leave out")
    parser.add_argument("--sched-rate", type=int, default=None, help="scheduled records/s")
    parser.add_argument("--sched-seconds", type=float, default=None)
    parser.add_argument(
        "--delay-ms",
        type=int,
        default=None,
        help="scheduled delays drawn from 0..this (0: due when sent, the path's own latency)",
    )
    parser.add_argument(
        "--sample-interval", type=float, default=None, help="seconds between window samples"
    )
    parser.add_argument(
        "--batch-records",
        type=int,
        default=None,
        help="the producer's batch.num.messages: log batches of at most this many records",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    for name in ("reps", "records", "sched_rate", "sched_seconds", "delay_ms", "batch_records"):
        if getattr(args, name) is not None:
            sizes = replace(sizes, **{name: getattr(args, name)})
    if args.sample_interval is not None:
        sizes = replace(sizes, sample_interval_s=args.sample_interval)
    result = run(sizes, args.skip, quick=args.quick)
    out = save_result("key_order", result)
    print(report(result))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
