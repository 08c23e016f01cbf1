"""The client processes of the side-by-side workloads, and what their results share.

bench/peers/kafka_protocol.py (confluent-kafka) and bench/peers/redis_streams.py
(redis-py) run every client in a process of its own, started with multiprocessing's
spawn method (never a fork of a process with client threads), and combine what the
processes return. This module owns the parts that are the same for both:

- `run_jobs(jobs)`: each job's function in a spawned process, with a barrier shared
  by them and the parent as its last argument; a process makes its client before the
  barrier and starts its clock after it, so no process start, import or connection is
  timed. A process's exception is raised in the parent with its traceback.
- `cpu_s()`: this process's CPU seconds (user + system), read around a timed part.
- `rates(n, size, seconds)`: the keys every workload reports (`records`, `seconds`,
  `records_per_s`, `mb_per_s` of value bytes).
- `Seen(outs)`: what the consumer processes received: distinct records, duplicates,
  and each stamped record's first latency; `latency_summary` of those latencies;
  `drained(outs, ...)`: the result of consumers that read records already written.
- `unique_name(prefix)`: a topic, stream or group name no earlier workload used.

Each process reads time.monotonic_ns() (CLOCK_MONOTONIC: one clock for every process
on the machine), so the parent can subtract one process's timestamps from another's.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import resource
import threading
import traceback
import uuid
from array import array
from collections.abc import Callable
from typing import Any

from bench.share_consume import percentile

START_TIMEOUT_S = 180.0
"""How long the processes may take to start, import and make their clients."""
RESULT_TIMEOUT_S = 1800.0
"""How long the parent waits for the next process's result."""
CLOSE_TIMEOUT_S = 60.0
"""How long a process may take to end after its result (clients closing)."""

Job = tuple[Callable[..., dict[str, Any]], tuple[Any, ...]]
"""A process's function and its arguments (the barrier is appended to them)."""


def unique_name(prefix: str) -> str:
    """A topic, stream or group name no earlier workload used."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def cpu_s() -> float:
    """This process's CPU seconds so far (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_jobs(
    jobs: list[Job], *, after_barrier: Callable[[], None] | None = None
) -> list[dict[str, Any]]:
    """Run each job's function in a spawned process (the shared barrier its last
    argument); `after_barrier` runs here once every process is ready. Returns their
    results in the jobs' order; a process's exception is raised here with its trace."""
    context = mp.get_context("spawn")
    barrier = context.Barrier(len(jobs) + 1)
    results: Any = context.Queue()
    processes = [
        context.Process(target=_job, args=(i, fn, (*args, barrier), results), daemon=True)
        for i, (fn, args) in enumerate(jobs)
    ]
    for process in processes:
        process.start()
    try:
        try:
            barrier.wait(START_TIMEOUT_S)
        except threading.BrokenBarrierError:
            try:
                index, _, error = results.get(timeout=30)
            except queue.Empty:
                codes = [process.exitcode for process in processes]
                raise RuntimeError(f"workload processes failed to start: {codes}") from None
            raise RuntimeError(f"workload process {index} failed:\n{error}") from None
        if after_barrier is not None:
            after_barrier()
        outs: dict[int, dict[str, Any]] = {}
        while len(outs) < len(jobs):
            try:
                index, out, error = results.get(timeout=RESULT_TIMEOUT_S)
            except queue.Empty:
                raise RuntimeError("a workload process gave no result in time") from None
            if out is None:
                raise RuntimeError(f"workload process {index} failed:\n{error}")
            outs[index] = out
    finally:
        for process in processes:
            process.join(CLOSE_TIMEOUT_S)
            if process.is_alive():
                process.kill()
                process.join(10)
    return [outs[i] for i in range(len(jobs))]


def _job(
    index: int, fn: Callable[..., dict[str, Any]], args: tuple[Any, ...], results: Any
) -> None:
    try:
        results.put((index, fn(*args), ""))
    except Exception:  # noqa: BLE001 - the parent raises it with this traceback
        results.put((index, None, traceback.format_exc()))
        args[-1].abort()  # the barrier, in case the others still wait on it


def rates(n: int, size: float, seconds: float) -> dict[str, Any]:
    """`n` records of `size` value bytes in `seconds`: records/s and MB/s."""
    return {
        "records": n,
        "seconds": seconds,
        "records_per_s": n / seconds if seconds > 0 else float("nan"),
        "mb_per_s": n * size / 1e6 / seconds if seconds > 0 else float("nan"),
    }


def latency_summary(latency_by_seq: dict[int, int]) -> dict[str, float]:
    """p50, p99, p99.9 and the maximum of send-to-receive latencies (ns), in ms
    (nearest rank)."""
    ordered = sorted(v / 1e6 for v in latency_by_seq.values())
    return {
        "p50_ms": percentile(ordered, 50),
        "p99_ms": percentile(ordered, 99),
        "p999_ms": percentile(ordered, 99.9),
        "max_ms": ordered[-1] if ordered else float("nan"),
    }


def drained(outs: list[dict[str, Any]], n: int, seen: Seen, began: int) -> dict[str, Any]:
    """The result of consumer processes that read `n` records already written, from
    `began` (monotonic ns) to the last record any of them received (`last`): the rates,
    what `seen` counted, `first_s` (to the first record), each one's `count`, and the
    CPU seconds (`cpu_s`) of them all. Each result has `count`, `bytes`, `first`,
    `last` and `cpu_s`."""
    counts = seen.counts(n)  # fails first if records are missing
    got = [o for o in outs if o["count"]]
    size = sum(o["bytes"] for o in outs) / max(1, sum(o["count"] for o in outs))
    return {
        **rates(n, size, (max(o["last"] for o in got) - began) / 1e9),
        **counts,
        "first_s": (min(o["first"] for o in got) - began) / 1e9,
        "per_consumer": [o["count"] for o in outs],
        "consumers": len(outs),
        "client_cpu_s": sum(o["cpu_s"] for o in outs),
    }


class Seen:
    """What the consumer processes received. Each result's `key` holds an array("q")
    of the records' identities (Kafka: partition and offset; Redis: sequence numbers);
    `seqs` and `latencies`, where present and not empty, the stamped records' sequence
    numbers and latencies (ns), of which each sequence's first is kept."""

    def __init__(self, outs: list[dict[str, Any]], *, key: str = "keys") -> None:
        keys: array[int] = array("q")
        self.latency_by_seq: dict[int, int] = {}
        for out in outs:
            keys.frombytes(out[key])
            seqs: array[int] = array("q")
            latencies: array[int] = array("q")
            seqs.frombytes(out.get("seqs", b""))
            latencies.frombytes(out.get("latencies", b""))
            if latencies:
                for seq, latency in zip(seqs, latencies, strict=True):
                    self.latency_by_seq.setdefault(seq, latency)
        self.unique = len(set(keys))
        self.duplicates = len(keys) - self.unique

    def counts(self, n: int) -> dict[str, int]:
        """`received` (distinct) and `duplicates`; fails if fewer than `n` arrived."""
        missing = n - self.unique
        if missing > 0:
            raise RuntimeError(f"{missing} of {n} records never arrived")
        return {"received": self.unique, "duplicates": self.duplicates}
