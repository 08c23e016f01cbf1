"""The brokers of the side-by-side benchmark as processes: start, stop, kill, measure.

Every broker is a `Runner`: it owns one server process on a loopback port and a data
directory, and can be started again on both after `stop()` or `kill()` (a start after
`kill()` is a recovery). `start()` returns the seconds from spawning the process to
the first request the server answered: for the Kafka protocol an ApiVersions response
(the first request every client sends), for Redis a PING. A thread polls for that
answer from the moment of the spawn (a refused connection is retried every
`POLL_INTERVAL_S`; an accepted one waits for its answer), so the figure does not depend
on when the server logs that it is ready.

- `KafkaRunner`: Apache Kafka 4.2 (tests/support/kafka_reference.py) as a user runs it:
  a single-node KRaft broker and controller with only what a single node needs (the
  replication factors and min ISRs of `KafkaBroker.properties()`, and
  `group.initial.rebalance.delay.ms=0` as Kafka's own config/server.properties sets
  it), Kafka's defaults otherwise, in the JVM of Kafka's start scripts
  (`START_SCRIPT_JVM_OPTIONS`: a 1 GiB heap and kafka-run-class.sh's G1 options).
  Share groups need nothing more on 4.2 (the differential tests use the same broker).
- `ShoalRunner`: `shoal serve` of this interpreter's environment, default settings.
- Redis is bench/peers/redis.py's `RedisRunner`.

`rss_bytes()` and `cpu_seconds()` read the server process from /proc.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Protocol

from tests.support.broker import BrokerProcess
from tests.support.kafka_reference import START_SCRIPT_JVM_OPTIONS, KafkaBroker, free_port

from bench.produce_fetch import process_cpu_s
from shoal.client.bootstrap import Node
from shoal.client.operations import Disconnected
from shoal.client.sync import Connection

START_TIMEOUT_S = 300.0
"""How long a start (a recovery of a large log included) may take before it fails."""
POLL_INTERVAL_S = 0.005
"""The pause between two refused connections while waiting for a server's first answer."""
ANSWER_TIMEOUT_MS = 2000
"""How long one polling connection waits for its ApiVersions answer before a new one."""


class Runner(Protocol):
    """A broker process of the benchmark (see the module docstring)."""

    name: str
    data_dir: Path

    @property
    def address(self) -> str:
        """The "127.0.0.1:port" a client connects to."""
        ...

    @property
    def pid(self) -> int:
        """The server process's id (valid while it runs)."""
        ...

    def start(self) -> float:
        """Spawn the server; seconds from the spawn to its first answered request."""
        ...

    def stop(self) -> None:
        """SIGTERM, and wait for the process to exit."""
        ...

    def kill(self) -> None:
        """SIGKILL, and wait for the process to exit."""
        ...

    def rss_bytes(self) -> int:
        """The server process's resident memory (VmRSS)."""
        ...

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user + system)."""
        ...


def rss_bytes(pid: int) -> int:
    """VmRSS of process `pid`, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid`, from /proc/<pid>/stat."""
    return process_cpu_s(pid)


def api_versions_answered(address: str, timeout_ms: int = ANSWER_TIMEOUT_MS) -> bool:
    """Whether the broker at `address` answered an ApiVersions request within the bound
    (Shoal's blocking client does the handshake on connecting)."""
    host, _, port = address.rpartition(":")
    try:
        connection = Connection.open(Node(host, int(port)), timeout_ms=timeout_ms)
    except Disconnected:
        return False
    connection.close()
    return True


class FirstAnswer:
    """A thread that polls `answered(address)` from now until it is true (or `cancel`),
    and keeps the time.monotonic() of that first answer."""

    def __init__(self, address: str, answered: object = api_versions_answered) -> None:
        assert callable(answered)
        self._answered = answered
        self._address = address
        self._cancelled = threading.Event()
        self.at: float | None = None
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._cancelled.is_set():
            if self._answered(self._address):
                self.at = time.monotonic()
                return
            time.sleep(POLL_INTERVAL_S)

    def wait(self, timeout_s: float) -> float:
        """The time of the first answer, waiting up to `timeout_s` for it."""
        self._thread.join(timeout_s)
        if self.at is None:
            self.cancel()
            raise RuntimeError(f"{self._address} did not answer within {timeout_s} s")
        return self.at

    def cancel(self) -> None:
        self._cancelled.set()
        self._thread.join(ANSWER_TIMEOUT_MS / 1000 + 1)


class KafkaRunner:
    """Apache Kafka 4.2, single-node KRaft, as its start scripts run it."""

    name = "kafka"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        data_dir.parent.mkdir(parents=True, exist_ok=True)  # the log and config go there
        self.broker = KafkaBroker(
            data_dir,
            jvm_options=START_SCRIPT_JVM_OPTIONS,
            test_properties=False,
            start_timeout_s=START_TIMEOUT_S,
        )
        # Ports fixed before the first start, so the poller knows where to knock.
        self.broker.port = free_port()
        self.broker.controller_port = free_port()

    @property
    def address(self) -> str:
        return self.broker.bootstrap

    @property
    def pid(self) -> int:
        assert self.broker.process is not None, "never started"
        return self.broker.process.pid

    def start(self) -> float:
        poller = FirstAnswer(self.address)
        try:
            self.broker.start()
            answered = poller.wait(START_TIMEOUT_S)
        except BaseException:
            poller.cancel()
            raise
        return answered - self.broker.spawned_at

    def stop(self) -> None:
        self.broker.stop(timeout_s=120.0)

    def kill(self) -> None:
        self.broker.kill()

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)


class ShoalRunner:
    """`shoal serve` with default settings."""

    name = "shoal"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        data_dir.parent.mkdir(parents=True, exist_ok=True)  # the log goes there
        self.broker = BrokerProcess(data_dir, port=free_port(), start_timeout_s=START_TIMEOUT_S)

    @property
    def address(self) -> str:
        return self.broker.bootstrap

    @property
    def pid(self) -> int:
        return self.broker.pid

    def start(self) -> float:
        poller = FirstAnswer(self.address)
        try:
            self.broker.start()
            answered = poller.wait(START_TIMEOUT_S)
        except BaseException:
            poller.cancel()
            raise
        return answered - self.broker.spawned_at

    def stop(self) -> None:
        self.broker.stop(timeout_s=120.0)

    def kill(self) -> None:
        self.broker.kill()

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)
