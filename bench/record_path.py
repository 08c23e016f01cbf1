"""Split each record's end-to-end latency into the producer's, the broker's and the
consumer's part, from a broker run with `SHOAL_RECORD_PATH` (server/observability/record_path.py)
and the clients' stamps. Used by `bench/latency.py --record-path`.

For a record stamped (CLOCK_MONOTONIC) just before `produce()` and received when the
consumer's `poll()` returned:

- producer: stamp -> the broker has read the Produce carrying it whole (the linger,
  librdkafka's send, the loopback, and the time the frame waited for the broker's
  event loop);
- broker: that Produce read -> the ShareFetch answer carrying the record handed to
  the socket (the Produce's handling, the wake of a parked fetch or the wait for the
  next fetch, the acquisition and the answer);
- consumer: that answer -> the poll returning it (librdkafka and the application).

A record is "parked" when the ShareFetch that took it was read before its Produce (a
consumer was waiting for it); otherwise it waited for a consumer to come back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SEGMENTS = ("producer", "broker", "consumer")


def load(path: Path) -> list[dict[str, Any]]:
    """The broker's events (one JSON object per line; a last `dropped` line is skipped)."""
    events = []
    with path.open() as lines:
        for line in lines:
            event = json.loads(line)
            if "api" in event:
                events.append(event)
    return events


def spans(events: Iterable[dict[str, Any]], kind: str, topic: str) -> dict[tuple[int, int], Any]:
    """(partition, offset) -> the event whose `kind` ("produced"/"acquired") covers it;
    for "acquired", the first delivery (a redelivery is a later event)."""
    covered: dict[tuple[int, int], Any] = {}
    for event in events:
        for name, partition, first, last in event.get(kind, ()):
            if name != topic:
                continue
            for offset in range(first, last + 1):
                covered.setdefault((partition, offset), event)
    return covered


def _at(values: Sequence[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, round(q / 100 * len(values)) - 1))]


def summary(values: list[float]) -> dict[str, float]:
    values.sort()
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50_ms": _at(values, 50),
        "p90_ms": _at(values, 90),
        "p99_ms": _at(values, 99),
        "max_ms": values[-1],
    }


def split(
    events: list[dict[str, Any]],
    *,
    topic: str,
    partitions: int,
    records: Iterable[tuple[int, int, int]],
) -> dict[str, Any]:
    """Per segment and for the whole path: p50/p90/p99/max (ms) over `records`, each
    (sequence, stamp ns, received ns); the record of sequence q went to partition
    q % partitions at offset q // partitions (round-robin, nothing else in the topic).
    Also the same for parked and unparked records, and which segment was the longest
    for the records of the top 1%."""
    produced = spans(events, "produced", topic)
    acquired = spans(events, "acquired", topic)
    rows = []
    unmatched = 0
    for sequence, stamp_ns, received_ns in records:
        key = (sequence % partitions, sequence // partitions)
        produce, fetch = produced.get(key), acquired.get(key)
        if produce is None or fetch is None:
            unmatched += 1
            continue
        parts = (
            (produce["read_ns"] - stamp_ns) / 1e6,
            (fetch["written_ns"] - produce["read_ns"]) / 1e6,
            (received_ns - fetch["written_ns"]) / 1e6,
        )
        rows.append(((received_ns - stamp_ns) / 1e6, parts, fetch["read_ns"] < produce["read_ns"]))
    result: dict[str, Any] = {"records": len(rows), "unmatched": unmatched}
    result["total"] = summary([r[0] for r in rows])
    for index, name in enumerate(SEGMENTS):
        result[name] = summary([r[1][index] for r in rows])
    for parked in (True, False):
        label = "parked" if parked else "unparked"
        chosen = [r for r in rows if r[2] is parked]
        result[label] = {
            "total": summary([r[0] for r in chosen]),
            "broker": summary([r[1][1] for r in chosen]),
        }
    rows.sort(key=lambda r: r[0])
    top = rows[int(0.99 * len(rows)) :]
    longest = dict.fromkeys(SEGMENTS, 0)
    for _, parts, _ in top:
        longest[SEGMENTS[max(range(3), key=lambda i: parts[i])]] += 1
    result["top1_longest_segment"] = longest
    return result


def table(result: dict[str, Any]) -> list[str]:
    """Aligned lines of `split`'s result."""
    lines = [f"{'segment':<22} {'n':>7} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'max ms':>7}"]

    def line(label: str, s: dict[str, float]) -> None:
        if s.get("n"):
            lines.append(
                f"{label:<22} {s['n']:>7,} {s['p50_ms']:>7.2f} {s['p90_ms']:>7.2f} "
                f"{s['p99_ms']:>7.2f} {s['max_ms']:>7.2f}"
            )

    line("produce -> poll", result["total"])
    for name in SEGMENTS:
        line(f"  {name}", result[name])
    for label in ("parked", "unparked"):
        line(f"{label}: total", result[label]["total"])
        line(f"{label}: broker", result[label]["broker"])
    longest = ", ".join(f"{k} {v}" for k, v in result["top1_longest_segment"].items())
    lines.append(f"longest segment of the top 1%: {longest}")
    if result["unmatched"]:
        lines.append(f"records not matched to broker events: {result['unmatched']}")
    return lines
