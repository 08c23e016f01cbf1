"""Runs the wire fuzzer against a real broker process, with a well-behaved client alongside.

`run(broker, seed=..., frames=...)`:
- asks the broker which APIs and versions it serves (ApiVersions), and fuzzes those;
- opens many connections at once; each sends a few fuzzed frames back to back, half
  closes, and reads whatever the broker answers until it closes (or a bound passes);
- meanwhile a confluent-kafka Producer and Consumer produce and consume a health topic;
  every produced record must be consumed;
- afterwards: the process must be alive, its log free of tracebacks and of "handler of
  X failed" lines, and its RSS growth bounded.

The result (`FuzzResult`) carries the figures the benchmark writes and the test checks.
"""

from __future__ import annotations

import asyncio
import re
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition

from tests.support.broker import BrokerProcess
from tests.support.clients import consumer, create_topic, flush_all, producer
from tests.support.wire import api_versions_request, call1
from tests.support.wire_fuzz import ApiRange, Frame, FrameFuzzer

HEALTH_TOPIC = "fuzz-health"
FUZZ_TOPICS = ("fuzz-t0", "fuzz-t1")
NAMES = (*FUZZ_TOPICS, "fuzz-group", "fuzz-txn", "", "fuzz-member", "fuzz-share")
"""Strings the fuzzer draws from: names that exist, so requests reach the cores (never
the health topic: the fuzzer may delete or reconfigure what it names)."""
READ_BOUND_S = 5.0
"""How long a fuzzing connection waits for the broker to answer and close."""
FRAMES_PER_CONNECTION_MAX = 16
"""A connection sends well-formed frames, then (last, as it may be fatal) one that is
mutated or raw; the broker must answer every one it can parse."""
RAW_SHARE = 0.1
MUTATED_SHARE = 0.8
HEALTH_RECORDS_PER_S = 200
PROBLEMS = re.compile(
    r"Traceback|handler of \S+ v\d+ failed|Task exception|Exception in callback"
    r"|Unknown tagged field"  # Kafka skips unknown tags; so must Shoal (codec.py)
)


@dataclass
class FuzzResult:
    seed: int
    frames: int = 0
    """Frames sent on connections the broker accepted."""
    raw_frames: int = 0
    connections: int = 0
    responses: int = 0
    read_timeouts: int = 0
    elapsed_s: float = 0.0
    health_sent: int = 0
    health_received: int = 0
    rss_start_kb: int = 0
    rss_warm_kb: int = 0
    rss_end_kb: int = 0
    problems: list[str] = field(default_factory=list)
    closes: Counter[str] = field(default_factory=Counter)

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.elapsed_s if self.elapsed_s else 0.0


def served_apis(bootstrap: str) -> list[ApiRange]:
    response = call1(bootstrap, api_versions_request())
    return [
        ApiRange(int(k.api_key), int(k.min_version), int(k.max_version)) for k in response.api_keys
    ]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


class Health:
    """A confluent-kafka producer and consumer on the health topic, in a thread."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = producer(bootstrap, linger_ms=5)
        self.consumer = consumer(bootstrap)
        self.consumer.assign([TopicPartition(HEALTH_TOPIC, 0, 0)])
        self.sent: set[bytes] = set()
        self.received: set[bytes] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        sequence = 0
        next_s = time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() >= next_s:  # paced: HEALTH_RECORDS_PER_S
                value = b"health-%d" % sequence
                sequence += 1
                self.producer.produce(HEALTH_TOPIC, value=value, on_delivery=self._delivered)
                next_s += 1 / HEALTH_RECORDS_PER_S
            self.producer.poll(0)
            self._consume(0.01)

    def _delivered(self, error: object, message: object) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.sent.add(message.value())  # type: ignore[attr-defined]

    def _consume(self, timeout_s: float) -> None:
        message = self.consumer.poll(timeout_s)
        if message is None:
            return
        if message.error() is not None:
            self.errors.append(str(message.error()))
        else:
            self.received.add(message.value())

    def finish(self, *, timeout_s: float = 60.0) -> None:
        """Stop producing, flush, and consume until every delivered record is seen."""
        self._stop.set()
        self._thread.join(timeout_s)
        flush_all(self.producer, timeout_s=timeout_s)
        deadline = time.monotonic() + timeout_s
        while not self.sent <= self.received and time.monotonic() < deadline:
            self._consume(0.2)
        self.consumer.close()


async def _one_connection(host: str, port: int, frames: list[Frame], result: FuzzResult) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return
    result.connections += 1
    result.frames += len(frames)
    try:
        writer.write(b"".join(f.data for f in frames))
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass
    try:
        async with asyncio.timeout(READ_BOUND_S):
            while True:
                size = await reader.readexactly(4)
                (length,) = struct.unpack(">i", size)
                await reader.readexactly(length)
                result.responses += 1
    except (asyncio.IncompleteReadError, ConnectionError, OSError):
        pass
    except TimeoutError:
        result.read_timeouts += 1
    finally:
        writer.close()


async def _fuzz(
    bootstrap: str, fuzzer: FrameFuzzer, result: FuzzResult, frames: int, concurrency: int
) -> None:
    host, _, port_text = bootstrap.rpartition(":")
    port = int(port_text)
    pending: set[asyncio.Task[None]] = set()
    made = 0
    while made < frames:
        rng = fuzzer.rng
        count = min(rng.randrange(1, FRAMES_PER_CONNECTION_MAX + 1), frames - made)
        batch = [fuzzer.frame(mutate=False) for _ in range(count - 1)]
        if rng.random() < RAW_SHARE:
            batch.append(fuzzer.raw_frame())
            result.raw_frames += 1
        else:
            batch.append(fuzzer.frame(mutate=rng.random() < MUTATED_SHARE))
        made += len(batch)
        pending.add(asyncio.create_task(_one_connection(host, port, batch, result)))
        if len(pending) >= concurrency:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    if pending:
        await asyncio.wait(pending)


def prepare(broker: BrokerProcess) -> None:
    for topic in (HEALTH_TOPIC, *FUZZ_TOPICS):
        create_topic(broker.bootstrap, topic)


def run(
    broker: BrokerProcess, *, seed: int, frames: int, concurrency: int = 32, warm_frames: int = 0
) -> FuzzResult:
    """Fuzz `broker` with `frames` frames (after `warm_frames` not counted toward the
    RSS growth), keeping a health client going; see the module docstring."""
    result = FuzzResult(seed=seed)
    fuzzer = FrameFuzzer(seed, served_apis(broker.bootstrap), NAMES)
    health = Health(broker.bootstrap)
    health.start()
    result.rss_start_kb = rss_kb(broker.pid)
    if warm_frames:
        asyncio.run(
            _fuzz(broker.bootstrap, fuzzer, FuzzResult(seed=seed), warm_frames, concurrency)
        )
    result.rss_warm_kb = rss_kb(broker.pid)
    started = time.monotonic()
    asyncio.run(_fuzz(broker.bootstrap, fuzzer, result, frames, concurrency))
    result.elapsed_s = time.monotonic() - started
    result.rss_end_kb = rss_kb(broker.pid) if broker.alive else 0
    health.finish()
    result.health_sent = len(health.sent)
    result.health_received = len(health.sent & health.received)
    text = broker.log_text()
    result.problems = [line for line in text.splitlines() if PROBLEMS.search(line)]
    if not broker.alive:
        last = [line for line in text.splitlines() if not line.startswith(" ")][-3:]
        result.problems.append(f"the broker process died; its log ends: {last}")
    for match in re.finditer(r"closing connection \d+ from \S+: (.{0,60})", text):
        result.closes[re.sub(r"\d+", "N", match.group(1))] += 1
    return result
