"""Quix Streams on Shoal: a stateful, exactly-once application through crashes.

The application (tests/ecosystem/quix/app.py, run with its own venv's python:
tests/support/quix_venv.py) keeps a running count and sum per key in `State` and a
1-second tumbling-window sum per key, both backed by changelog topics that Quix creates
with `cleanup.policy=compact`, under `processing_guarantee="exactly-once"`.

The input goes in three parts while the application runs slowly (a few milliseconds per
record), and things crash mid-stream: the broker is killed with SIGKILL and restarted on
its data directory, then the application is killed with SIGKILL and its local state
directory deleted (so it must rebuild its state from the changelog topics), and at the
end it is stopped, its state deleted again and restarted for one probe record per key.
A read_committed consumer of each output must then see, per key, exactly the sequence a
pure model of the input gives: every running value once, in order, and every closed
window's sum once; the probes show that the state rebuilt from the changelog is the
model's final state.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support import kafka_reference, quix_venv
from tests.support.broker import Brokers, wait_until
from tests.support.clients import create_topic, flush_all, producer

APP = Path(__file__).resolve().parent / "quix" / "app.py"
INPUT, RUNNING, WINDOWS = "quix-in", "quix-running", "quix-windows"
WINDOW_MS = 1000
KEYS = [f"k{n}" for n in range(6)]
PARTITIONS = 3
# Ten minutes ago, to the second (window starts are multiples of 1000): recent enough
# for a broker's time-based retention (7 days) and its bound on future timestamps.
T0_MS = (int(time.time()) - 600) * 1000
STEP_MS = 50  # record i's time is T0 + 50 i + 7: never on a window boundary
PART = 240  # records per part of the input
DELAY_MS = 5.0  # the application's pause per record, so crashes land mid-stream
BATCH_BYTES = 1024  # every producer's batch.size, under the broker's segment.bytes


@pytest.fixture(scope="module")
def quix_python() -> Path:
    try:
        return quix_venv.python()
    except quix_venv.QuixUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Quix Streams venv: {exc}")


class QuixApp:
    """app.py as a subprocess; its log (Quix's INFO lines) appended to `log_path`."""

    def __init__(self, python: Path, bootstrap: str, state_dir: Path, log_path: Path) -> None:
        self.python = python
        self.bootstrap = bootstrap
        self.state_dir = state_dir
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"--- start {self.starts}\n".encode())
            self.process = subprocess.Popen(
                [
                    str(self.python),
                    str(APP),
                    self.bootstrap,
                    str(self.state_dir),
                    "--delay-ms",
                    str(DELAY_MS),
                    "--batch-bytes",
                    str(BATCH_BYTES),
                ],
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.alive:
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> int:
        """SIGTERM: Quix commits its last checkpoint and exits."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)
        return int(self.process.returncode)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


class CommittedReader:
    """A read_committed consumer assigned to every partition of `topic` from offset 0,
    keeping what it has read per key (values decoded from JSON) across polls."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.count = 0
        self.consumer: Consumer | None = None

    def _assign(self) -> bool:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        found = admin.list_topics(self.topic, timeout=10).topics.get(self.topic)
        if found is None or found.error is not None or not found.partitions:
            return False
        self.consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"reader-{self.topic}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 500,
            }
        )
        self.consumer.assign([TopicPartition(self.topic, p, 0) for p in found.partitions])
        return True

    def poll(self, seconds: float = 0.3) -> int:
        if self.consumer is None and not self._assign():
            time.sleep(seconds)
            return self.count
        assert self.consumer is not None
        for message in self.consumer.consume(num_messages=10_000, timeout=seconds):
            error = message.error()
            if error is not None:
                if error.retriable():
                    continue
                raise KafkaException(error)
            key = message.key()
            value = message.value()
            assert key is not None and value is not None
            self.by_key[key.decode()].append(json.loads(value))
            self.count += 1
        return self.count

    def wait_for(self, count: int, *, timeout_s: float) -> bool:
        return wait_until(lambda: self.poll() >= count, timeout_s=timeout_s, interval_s=0)

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()


def record(i: int, v: int | None = None) -> tuple[str, dict[str, int], int]:
    """Input record i: its key, its value and its timestamp."""
    return (
        KEYS[i % len(KEYS)],
        {"i": i, "v": (i * 7) % 13 + 1 if v is None else v},
        (T0_MS + STEP_MS * i + 7),
    )


def produce(bootstrap: str, records: list[tuple[str, dict[str, int], int]]) -> None:
    failed: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failed.append(str(error))

    p = producer(
        bootstrap, enable_idempotence=True, partitioner="murmur2_random", batch_size=BATCH_BYTES
    )
    for key, value, ts in records:
        p.produce(
            INPUT,
            key=key.encode(),
            value=json.dumps(value).encode(),
            timestamp=ts,
            on_delivery=delivered,
        )
    flush_all(p)
    assert not failed, failed[:3]


def model(
    records: list[tuple[str, dict[str, int], int]],
) -> tuple[dict[str, list[dict[str, int]]], dict[str, list[dict[str, int]]]]:
    """What app.py must output for `records` (each key's in input order): the running
    values, and each key's windows closed by a later window of that key."""
    running: dict[str, list[dict[str, int]]] = defaultdict(list)
    windows: dict[str, list[dict[str, int]]] = defaultdict(list)
    open_window: dict[str, tuple[int, int]] = {}
    for key, value, ts in records:
        previous = running[key][-1] if running[key] else {"count": 0, "sum": 0}
        running[key].append(
            {"i": value["i"], "count": previous["count"] + 1, "sum": previous["sum"] + value["v"]}
        )
        start = ts - ts % WINDOW_MS
        current = open_window.get(key)
        if current is not None and current[0] != start:
            windows[key].append(
                {"start": current[0], "end": current[0] + WINDOW_MS, "value": current[1]}
            )
            current = None
        open_window[key] = (start, (current[1] if current else 0) + value["v"])
    return dict(running), dict(windows)


@pytest.fixture
def readers(brokers: Brokers) -> Iterator[list[CommittedReader]]:
    made: list[CommittedReader] = []
    yield made
    for reader in made:
        reader.close()


class Broker(Protocol):
    """What the test does to a broker: Shoal's BrokerProcess or the reference Kafka."""

    @property
    def bootstrap(self) -> str: ...
    def kill(self) -> None: ...
    def start(self) -> object: ...


SHOAL_OVERRIDES = (
    "group.initial.rebalance.delay.ms=0",
    # Small segments and an eager cleaner: the changelog topics (compacted, written in
    # transactions, some aborted by the crashes) roll many segments, and the cleaner
    # compacts them while the application restores from them. (A batch larger than a
    # segment is refused, RECORD_BATCH_TOO_LARGE, so every producer keeps batches
    # under 1 KiB: app.py's `--batch-bytes`, `produce` here.)
    "log.segment.bytes=2048",
    "log.cleaner.backoff.ms=200",
    "log.cleaner.min.cleanable.ratio=0.01",
)


@pytest.fixture(params=["shoal", pytest.param("kafka", marks=pytest.mark.slow)])
def broker(request: pytest.FixtureRequest, brokers: Brokers, tmp_path: Path) -> Iterator[Broker]:
    """A Shoal broker; or (slow) the reference Kafka 4.2, to show the same application
    and the same checks are what Kafka gives too."""
    if request.param == "shoal":
        yield brokers.start(*SHOAL_OVERRIDES)
        return
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka reference broker: {exc}")
    with kafka_reference.running(tmp_path / "kafka") as kafka:
        yield kafka


def test_exactly_once_state_through_broker_and_app_crashes(
    broker: Broker,
    quix_python: Path,
    tmp_path: Path,
    readers: list[CommittedReader],
) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, INPUT, partitions=PARTITIONS)
    state_dir = tmp_path / "quix-state"
    app = QuixApp(quix_python, bootstrap, state_dir, tmp_path / "quix-app.log")
    running = CommittedReader(bootstrap, RUNNING)
    windows = CommittedReader(bootstrap, WINDOWS)
    readers += [running, windows]
    sent = [record(i) for i in range(3 * PART)]

    try:
        # Part 1; the broker is killed once the application is a quarter through it.
        produce(bootstrap, sent[:PART])
        app.start()
        assert running.wait_for(PART // 4, timeout_s=120), app.log()[-4000:]
        broker.kill()
        seen_at_broker_crash = running.poll(0)
        broker.start()

        # Part 2 goes in after the restart; the application is killed part-way through
        # it and its local state deleted: it must rebuild from the changelog topics.
        produce(bootstrap, sent[PART : 2 * PART])
        assert running.wait_for(PART + PART // 4, timeout_s=120), app.log()[-4000:]
        app.kill()
        seen_at_app_crash = running.poll(0)
        shutil.rmtree(state_dir)
        app.start()

        # Part 3, then a clean stop (its last checkpoint committed).
        produce(bootstrap, sent[2 * PART :])
        assert running.wait_for(3 * PART, timeout_s=180), app.log()[-4000:]
        assert app.stop() == 0, app.log()[-4000:]

        # Probes (v=0, one per key, later in time) through a state rebuilt from scratch.
        shutil.rmtree(state_dir)
        app.start()
        probes = [record(3 * PART + n, v=0) for n in range(len(KEYS))]
        produce(bootstrap, probes)
        want_running, want_windows = model(sent + probes)
        total = sum(len(values) for values in want_running.values())
        closed = sum(len(values) for values in want_windows.values())
        assert running.wait_for(total, timeout_s=120), app.log()[-4000:]
        assert windows.wait_for(closed, timeout_s=60), app.log()[-4000:]
        time.sleep(2.0)  # long enough for a duplicate to show up, were there one
        running.poll()
        windows.poll()
        assert app.stop() == 0, app.log()[-4000:]
    finally:
        app.kill()

    assert 0 < seen_at_broker_crash < PART, "the broker crash was not mid-stream"
    assert PART <= seen_at_app_crash < 2 * PART, "the application crash was not mid-stream"
    for key in KEYS:
        assert running.by_key[key] == want_running[key], f"running values of {key}"
        assert windows.by_key[key] == want_windows[key], f"windows of {key}"
        final = want_running[key][-2]  # before its probe
        probe = running.by_key[key][-1]
        assert probe["count"] == final["count"] + 1 and probe["sum"] == final["sum"], (
            f"state of {key} rebuilt from the changelog: {probe}, want {final} + a probe"
        )
