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
- `ShoalRunner`: `shoal serve` of this interpreter's environment (tests/support/broker.py),
  default settings plus the `overrides` given (bench/side_by_side.py gives one, and
  says why); with `src`, the Shoal of another tree (its src directory first on the
  server's PYTHONPATH), for a before/after pair in one run.
- Redis is bench/peers/redis.py's `RedisRunner`.

`rss_bytes()` and `cpu_seconds()` read the server process from /proc, with any worker
processes it runs (their VmRSS summed: pages they share count once per process).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from tests.support.broker import BrokerProcess
from tests.support.kafka_reference import START_SCRIPT_JVM_OPTIONS, KafkaBroker, free_port

from bench.produce_fetch import CLOCK_TICKS, process_cpu_s
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


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants (from /proc/<pid>/task/<tid>/children), so a
    server that runs worker processes is measured whole."""
    tree, index = [pid], 0
    while index < len(tree):
        for children in Path(f"/proc/{tree[index]}/task").glob("*/children"):
            with contextlib.suppress(OSError):  # the thread or process just ended
                tree += [int(child) for child in children.read_text().split()]
        index += 1
    return tree


def rss_bytes(pid: int) -> int:
    """VmRSS of process `pid` and its descendants (summed), from /proc/<pid>/status."""
    total = 0
    for member in process_tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            if member == pid:
                raise
            continue  # a worker that just ended
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid` and its live descendants, plus the CPU of the
    children it has reaped (cutime + cstime), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    reaped = (int(fields[13]) + int(fields[14])) / CLOCK_TICKS
    total = reaped
    for member in process_tree(pid):
        with contextlib.suppress(OSError):  # a worker that just ended
            total += process_cpu_s(member)
    return total


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


class Measured:
    """A runner's `rss_bytes()` and `cpu_seconds()`: of its server process `pid` and
    that process's workers (every runner's, RedisRunner's too)."""

    @property
    def pid(self) -> int:
        raise NotImplementedError

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)


class _Spawned(Measured):
    """What KafkaRunner and ShoalRunner share: `self.broker` (a KafkaBroker or a
    BrokerProcess) spawns the server and keeps `spawned_at`; start-up is timed by a
    `FirstAnswer` polling from before the spawn."""

    broker: KafkaBroker | BrokerProcess

    @property
    def address(self) -> str:
        return self.broker.bootstrap

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


class KafkaRunner(_Spawned):
    """Apache Kafka 4.2, single-node KRaft, as its start scripts run it."""

    name = "kafka"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        data_dir.parent.mkdir(parents=True, exist_ok=True)  # the log and config go there
        self.broker = self.kafka = KafkaBroker(
            data_dir,
            jvm_options=START_SCRIPT_JVM_OPTIONS,
            test_properties=False,
            start_timeout_s=START_TIMEOUT_S,
        )
        # Ports fixed before the first start, so the poller knows where to knock.
        self.kafka.port = free_port()
        self.kafka.controller_port = free_port()

    @property
    def pid(self) -> int:
        assert self.kafka.process is not None, "never started"
        return self.kafka.process.pid


class ShoalRunner(_Spawned):
    """`shoal serve` with default settings plus `overrides`; of this interpreter's
    environment, or with `src` (another tree's src directory) first on its PYTHONPATH,
    as broker `name` (e.g. "shoal-old": a before/after pair in one run)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        overrides: Sequence[str] = (),
        src: Path | None = None,
        name: str = "shoal",
    ) -> None:
        self.name = name
        self.data_dir = data_dir
        self.src = src
        data_dir.parent.mkdir(parents=True, exist_ok=True)  # the log goes there
        env = {}
        if src is not None:
            rest = os.environ.get("PYTHONPATH", "")
            env["PYTHONPATH"] = os.pathsep.join([str(src.resolve()), *filter(None, [rest])])
        self.broker = self.shoal = BrokerProcess(
            data_dir,
            overrides=overrides,
            port=free_port(),
            start_timeout_s=START_TIMEOUT_S,
            env=env,
        )

    @property
    def pid(self) -> int:
        return self.shoal.pid
