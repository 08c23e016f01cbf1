"""Kafka's applications as processes for the ecosystem tests: their jars, their compiled
test programs, a JVM that can be waited on, SIGKILLed, frozen and restarted, and the
broker they run against.

The jars are those `apps/pom.xml` names (Kafka Streams, Kafka Connect), resolved from
Maven Central into their own cache directory by the reference broker's machinery
(tests/support/kafka_reference.py: `install_pom()`), and test programs in `apps/` are
compiled against them once per hash of their source (`compile_java()`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.ecosystem.conftest import on_kafka
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, Brokers

APPS_DIR = Path(__file__).resolve().parent / "apps"
POM = APPS_DIR / "pom.xml"
CACHE_NAME = f"ecosystem-{kafka_reference.KAFKA_VERSION}"
"""The cache directory (under ~/.cache/shoal) of the applications' jars."""
SINGLE_NODE = ("group.initial.rebalance.delay.ms=0",)
"""Shoal's settings for these tests: no first-join wait (3 s by default), as a
single-node Kafka is set up (the reference broker's too)."""


def _libs() -> Path:
    """The applications' jars; without java and mvn (or offline) the test skips, except
    in CI (CI=true), where that is a failure."""
    try:
        return kafka_reference.install_pom(
            POM, kafka_reference.cache_root() / CACHE_NAME, what="Kafka Streams and Connect"
        )
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka applications: {exc}")


def classpath() -> str:
    return kafka_reference.classpath(_libs())


def program_classpath(source_name: str) -> str:
    """The classpath running the test program `apps/<source_name>`: its classes, then
    the applications' jars."""
    libs = _libs()
    classes = kafka_reference.compile_java(APPS_DIR / source_name, libs=libs)
    return os.pathsep.join((str(classes), kafka_reference.classpath(libs)))


Broker = BrokerProcess | kafka_reference.KafkaBroker


@pytest.fixture(name="broker")
def broker_fixture(
    request: pytest.FixtureRequest, brokers: Brokers, tmp_path: Path
) -> Iterator[Broker]:
    """Shoal (or, with SHOAL_ECOSYSTEM_ON_KAFKA, the reference broker) on its own data
    directory: `restart()` is a SIGKILL and a start on the same data and port. Shoal
    gets the test module's `SHOAL_SETTINGS` if it has some, else `SINGLE_NODE`."""
    if on_kafka():
        with kafka_reference.running(tmp_path / "kafka") as kafka:
            yield kafka
        return
    yield brokers.start(*getattr(request.module, "SHOAL_SETTINGS", SINGLE_NODE))


class Jvm:
    """One Java program run on `class_path`; its stdout and stderr go to `log_path` and
    are kept for `wait_for()`. `start()` again after `kill()` runs it anew."""

    def __init__(
        self,
        main_class: str,
        args: Sequence[str],
        *,
        class_path: str,
        log_path: Path,
        heap: str = "-Xmx256m",
        log_level: str = "WARN",
    ) -> None:
        self.command = kafka_reference.java_command(
            main_class, *args, heap=heap, log_level=log_level, class_path=class_path
        )
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._pump_done = threading.Event()

    def start(self) -> Jvm:
        assert not self.alive, "already running"
        with self._lock:
            self._lines.clear()
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self._pump_done = threading.Event()
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()
        return self

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        try:
            with open(self.log_path, "a", encoding="utf-8") as sink:
                sink.write(f"---- started pid {process.pid}\n")
                for raw in process.stdout:
                    line = raw.decode("utf-8", "replace")
                    sink.write(line)
                    sink.flush()
                    with self._lock:
                        self._lines.append(line)
        finally:
            process.stdout.close()
            self._pump_done.set()

    def output(self) -> str:
        """What this run has printed so far."""
        with self._lock:
            return "".join(self._lines)

    def wait_for(self, pattern: str, *, timeout_s: float) -> re.Match[str]:
        """The first match of `pattern` in this run's output; fails if the process exits
        or the bound passes first."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        while True:
            match = compiled.search(self.output())
            if match is not None:
                return match
            if not self.alive:
                raise AssertionError(f"JVM exited before {pattern!r}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} after {timeout_s} s:\n{self.tail()}")
            time.sleep(0.1)

    def tail(self, lines: int = 80) -> str:
        return "".join(self.output().splitlines(keepends=True)[-lines:])

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown hook, no commit, no flush."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGKILL)  # a frozen process dies too
            self.process.wait(30)
            self._pump_done.wait(10)

    def pause(self) -> None:
        """SIGSTOP: every thread frozen, heartbeats included, connections left open."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after `pause()`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, the application's clean shutdown; its exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        self._pump_done.wait(10)
        return int(self.process.returncode)
