"""Per-broker operational measurements of the side-by-side benchmark, on any Runner.

A Runner (bench/peers/runners.py; Redis's is bench/peers/redis.py) owns one server
process; `make_runner(data_dir)` makes one on a data directory. The Kafka protocol
(Kafka, Shoal) or Redis is chosen by the runner's name ("redis" is Redis). What is
measured, and how:

- `startup(make_runner, reps)`: `reps` starts, each on a fresh data directory, each
  `start()`'s seconds from spawning the process to its first answered request
  (ApiVersions for the Kafka protocol, PING for Redis: runners.py) and the CPU
  seconds the broker had used then; with `settle_s`, its `idle_rss` after; then a
  SIGTERM (bench/startup.py runs it for Shoal alone).
- `idle_rss(runner)`: a started broker gets one topic (one partition; for Redis a
  stream, made by creating a consumer group), then `settle_s` seconds of nothing;
  its VmRSS then.
- `rss_under_load(runner, workload)`: runs `workload()` while a thread reads the
  broker's VmRSS every `SAMPLE_INTERVAL_S`; the peak, and the workload's result.
- `recovery(make_runner, log_bytes)`: a fresh broker is filled with `log_bytes` of
  records (`FILL_VALUE_BYTES` each) as fast as this client goes, then killed with
  SIGKILL the moment the last write is acknowledged, and started again on the same
  data directory. Reported: the seconds from that spawn to the first answered request
  (`answered_s`, `start()`'s own figure) and to the last acknowledged record being
  readable again (`readable_s`: from the call of `start()`, which spawns within
  milliseconds on a restart, to the first successful read, polled once `start()`
  returns; `unreadable` says why if it never is), the records acknowledged
  before the kill and present after it, and the size of the data directory.
  The fill, Kafka protocol: one topic of one partition, one confluent-kafka producer
  with acks=1 (the leader's own append is the acknowledgement on one node, as with
  acks=all), linger.ms 50 and 1 MB batches, no compression; an acknowledgement is a
  delivery report without error. Readable: an assigned Consumer's fetch returns the
  last acknowledged offset. Present after: the partition's high watermark.
  The fill, Redis: XADD on one stream, sent raw on one socket ~1 MB of commands at a
  time (redis-py builds commands too slowly for a 1 GiB fill), every reply read;
  an acknowledgement is a reply holding an entry id. Readable: XRANGE of the last id
  returns it. Present after: XLEN.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import redis
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from tests.support.clients import create_topic, watermarks

from bench.peers import redis_streams

if TYPE_CHECKING:
    from bench.peers.runners import Runner

GIB = 1 << 30
SETTLE_S = 5.0
"""How long a fresh broker with one topic idles before its memory is read."""
SAMPLE_INTERVAL_S = 0.05
"""How often the load sampler reads the broker's VmRSS."""
FILL_VALUE_BYTES = 1024
"""The value size of the recovery fill's records (the benchmark's larger size)."""
READABLE_TIMEOUT_S = 600.0
"""How long after a restart the last record may take to be readable again."""
REDIS_FILL_CHUNK = 1 << 20
"""Bytes of XADD commands sent before their replies are read (the Redis fill)."""
STREAM_FIELD = redis_streams.FIELD

MakeRunner = Callable[[Path], "Runner"]


# --- start-up and memory -------------------------------------------------------------


def startup(
    make_runner: MakeRunner,
    reps: int,
    *,
    root: Path | None = None,
    settle_s: float | None = None,
    each: Callable[[dict[str, float]], None] | None = None,
) -> dict[str, Any]:
    """`reps` starts on fresh data directories: each one's seconds to its first answer
    (`startup_s`) and the broker's CPU seconds then (`startup_cpu_s`); with `settle_s`,
    its `idle_rss` after (`idle_rss_bytes`). `each(run)` is called after every start."""
    runs = []
    with _Scratch(root) as scratch:
        for rep in range(reps):
            data_dir = scratch / f"startup-{rep}" / "data"
            runner = make_runner(data_dir)
            run = {"startup_s": runner.start()}
            try:
                run["startup_cpu_s"] = runner.cpu_seconds()
                if settle_s is not None:
                    run["idle_rss_bytes"] = idle_rss(runner, settle_s=settle_s)["rss_bytes"]
            finally:
                runner.stop()
            shutil.rmtree(data_dir.parent, ignore_errors=True)
            runs.append(run)
            if each is not None:
                each(run)
    seconds = [run["startup_s"] for run in runs]
    return {"seconds": seconds, "median_s": statistics.median(seconds), "runs": runs}


def idle_rss(runner: Runner, *, settle_s: float = SETTLE_S) -> dict[str, Any]:
    """A started broker's VmRSS after one topic is made and `settle_s` of nothing."""
    _protocol(runner).create_topic(runner.address, f"idle-{uuid.uuid4().hex[:8]}")
    time.sleep(settle_s)
    return {"rss_bytes": runner.rss_bytes(), "settle_s": settle_s}


class PeakSampler:
    """A thread reading `sample()` every `interval_s` while the `with` block runs; keeps
    the largest value (and reads once more on exit)."""

    def __init__(self, sample: Callable[[], int], *, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self._sample = sample
        self._interval_s = interval_s
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _take(self) -> None:
        self.peak = max(self.peak, self._sample())
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(self._interval_s)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._take()


def rss_under_load(runner: Runner, workload: Callable[[], Any]) -> dict[str, Any]:
    """The broker's peak VmRSS while `workload()` runs, and what it returned."""
    with PeakSampler(runner.rss_bytes) as sampler:
        result = workload()
    return {"peak_rss_bytes": sampler.peak, "samples": sampler.samples, "result": result}


# --- recovery ------------------------------------------------------------------------


def recovery(
    make_runner: MakeRunner,
    log_bytes: int = GIB,
    *,
    value_bytes: int = FILL_VALUE_BYTES,
    root: Path | None = None,
) -> dict[str, Any]:
    """Fill a fresh broker with `log_bytes`, kill -9 it, start it again (module docstring)."""
    with _Scratch(root) as scratch:
        data_dir = scratch / "recovery"
        runner = make_runner(data_dir)
        protocol = _protocol(runner)
        topic = f"recovery-{uuid.uuid4().hex[:8]}"
        try:
            runner.start()
            protocol.create_topic(runner.address, topic)
            records = -(-log_bytes // value_bytes)
            began = time.monotonic()
            fill = protocol.fill(runner.address, topic, records, value_bytes)
            fill_s = time.monotonic() - began
            runner.kill()
            on_disk = _tree_bytes(data_dir)
            # start() returns when the server answered and may return later than that
            # (Kafka's waits for its "started" line too), so the readable clock starts
            # before it: the spawn follows within milliseconds on a restart (no format)
            spawned = time.monotonic()
            answered_s = runner.start()
            unreadable = protocol.await_readable(runner.address, topic, fill.last)
            readable_s = None if unreadable else time.monotonic() - spawned
            after = protocol.count(runner.address, topic)
        finally:
            runner.kill()
    return {
        "log_bytes": log_bytes,
        "data_dir_bytes": on_disk,
        "value_bytes": value_bytes,
        "fill_s": fill_s,
        "fill_mb_per_s": fill.acked * value_bytes / 1e6 / fill_s,
        "acked": fill.acked,
        "after": after,
        "complete": after >= fill.acked,
        "answered_s": answered_s,
        "readable_s": readable_s,
        "unreadable": unreadable,
    }


def _tree_bytes(path: Path) -> int:
    return sum(
        (Path(folder) / name).stat().st_size for folder, _, names in os.walk(path) for name in names
    )


class _Scratch:
    """A directory for data directories: `root` (kept), else a temporary one (removed)."""

    def __init__(self, root: Path | None) -> None:
        self._root = root
        self._made: Path | None = None

    def __enter__(self) -> Path:
        if self._root is not None:
            self._root.mkdir(parents=True, exist_ok=True)
            return self._root
        self._made = Path(tempfile.mkdtemp(prefix="peers-ops-"))
        return self._made

    def __exit__(self, *_exc: object) -> None:
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)


# --- the two protocols ---------------------------------------------------------------


@dataclass(frozen=True)
class Fill:
    acked: int
    """Writes the broker acknowledged."""
    last: Any
    """Where the last acknowledged write is: an offset, or a stream entry id."""


class _Protocol(Protocol):
    def create_topic(self, address: str, topic: str) -> None: ...
    def fill(self, address: str, topic: str, records: int, value_bytes: int) -> Fill: ...
    def await_readable(self, address: str, topic: str, last: Any) -> str | None:
        """Wait until the write at `last` is readable: None, else why it never will be."""

    def count(self, address: str, topic: str) -> int: ...


def _protocol(runner: Runner) -> _Protocol:
    return _RedisOps() if runner.name == "redis" else _KafkaOps()


class _KafkaOps:
    def create_topic(self, address: str, topic: str) -> None:
        create_topic(address, topic, partitions=1, timeout_s=120.0)

    def fill(self, address: str, topic: str, records: int, value_bytes: int) -> Fill:
        producer = Producer(
            {
                "bootstrap.servers": address,
                "acks": "1",
                "enable.idempotence": False,
                "linger.ms": 50,
                "batch.size": 1_000_000,
                "compression.type": "none",
                "queue.buffering.max.kbytes": 512 * 1024,
            }
        )
        acked = 0
        last = -1
        errors: list[KafkaError] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            nonlocal acked, last
            if error is None:
                acked += 1
                last = max(last, message.offset())
            elif len(errors) < 10:
                errors.append(error)

        value = os.urandom(value_bytes)
        for _ in range(records):
            while True:
                try:
                    producer.produce(topic, value, partition=0, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
        remaining = producer.flush(600)
        if remaining or errors:
            raise RuntimeError(f"fill: {remaining} undelivered, errors {errors}")
        return Fill(acked, last)

    def await_readable(self, address: str, topic: str, last: Any) -> str | None:
        consumer = Consumer(
            {
                "bootstrap.servers": address,
                "group.id": "recovery-reader",
                "enable.auto.commit": False,
                # past the log's end: the record is gone, say so rather than wait
                "auto.offset.reset": "error",
                "fetch.wait.max.ms": 10,
                "reconnect.backoff.ms": 10,
                "reconnect.backoff.max.ms": 100,
                "topic.metadata.refresh.interval.ms": 100,
            }
        )
        try:
            consumer.assign([TopicPartition(topic, 0, int(last))])
            deadline = time.monotonic() + READABLE_TIMEOUT_S
            while time.monotonic() < deadline:
                message = consumer.poll(0.05)
                if message is None:
                    continue
                error = message.error()
                if error is None:
                    assert message.offset() == last, (message.offset(), last)
                    return None
                if error.code() == KafkaError._AUTO_OFFSET_RESET:
                    return f"offset {last} is past the log's end: {error}"
            return f"offset {last} not readable within {READABLE_TIMEOUT_S} s"
        finally:
            consumer.close()

    def count(self, address: str, topic: str) -> int:
        low, high = watermarks(address, topic, 1)[0]
        return int(high - low)


class _RedisOps:
    def create_topic(self, address: str, topic: str) -> None:
        redis_streams.new_group(address, topic, "$")

    def fill(self, address: str, topic: str, records: int, value_bytes: int) -> Fill:
        command = resp_command(b"XADD", topic.encode(), b"*", STREAM_FIELD, os.urandom(value_bytes))
        per_chunk = max(1, REDIS_FILL_CHUNK // len(command))
        host, _, port = address.rpartition(":")
        acked = 0
        last = b""
        with (
            socket.create_connection((host, int(port))) as conn,
            conn.makefile("rb") as replies,
        ):
            for base in range(0, records, per_chunk):
                count = min(per_chunk, records - base)
                conn.sendall(command * count)
                for _ in range(count):
                    head = replies.readline()
                    if not head.startswith(b"$"):
                        raise RuntimeError(f"XADD answered {head!r}")
                    last = replies.readline()[:-2]
                    acked += 1
        return Fill(acked, last)

    def await_readable(self, address: str, topic: str, last: Any) -> str | None:
        client = redis_streams.connect(address)
        try:
            deadline = time.monotonic() + READABLE_TIMEOUT_S
            while True:
                try:
                    found = client.xrange(topic, last, last)
                except redis.BusyLoadingError:
                    if time.monotonic() > deadline:
                        return f"entry {last!r} not readable within {READABLE_TIMEOUT_S} s"
                    time.sleep(0.01)
                    continue
                # the server answers once its whole log is loaded: absent is gone
                return None if found else f"entry {last!r} is gone"
        finally:
            client.close()

    def count(self, address: str, topic: str) -> int:
        client = redis_streams.connect(address)
        try:
            return int(client.xlen(topic))
        finally:
            client.close()


def resp_command(*parts: bytes) -> bytes:
    """One Redis command in RESP: an array of bulk strings."""
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
