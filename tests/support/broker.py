"""Run a real `shoal serve` process on a free loopback port, for end-to-end tests.

The broker is started with `--port 0`; the port it bound is read from its start-up log
line. Restarts reuse that port, so clients reconnect to the same bootstrap address.
`kill()` sends SIGKILL (a crash), `stop()` SIGTERM (graceful shutdown). `running` is
the body of a broker fixture.

By default the broker is `python -m shoal.cli.main` of this interpreter (the checkout,
through PYTHONPATH or the editable install); `command` runs another one, such as an
installed wheel's `shoal` script (tests/e2e/test_wheel_install.py), with `cwd` and
`env_removed` keeping the checkout out of its reach.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tests.support import processes

_LISTENING = re.compile(r"listening on \S+:(\d+)")
_BOUND = re.compile(r"listener (\w+) \(\w+\) bound to \S+:(\d+)")
START_TIMEOUT_S = 60.0


class BrokerProcess:
    def __init__(
        self,
        data_dir: Path,
        *,
        overrides: Sequence[str] = (),
        port: int = 0,
        log_path: Path | None = None,
        config_file: Path | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] = (),
        cwd: Path | None = None,
        env_removed: Sequence[str] = (),
    ) -> None:
        self.data_dir = data_dir
        self.env = dict(env or {})
        """Environment variables the server gets on top of this process's."""
        self.env_removed = tuple(env_removed)
        """Variables of this process's environment the server does not get."""
        self.command = list(command) or [sys.executable, "-m", "shoal.cli.main"]
        """The `shoal` program: what precedes `serve` on the command line."""
        self.cwd = cwd
        self.start_timeout_s = start_timeout_s
        self.overrides = list(overrides)
        self.config_file = config_file
        self.port = port
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}-broker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log_lines: list[str] = []
        self._ready = threading.Event()
        self._pump_done = threading.Event()
        self.spawned_at = 0.0
        """time.monotonic() just before the last start's process was spawned."""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> BrokerProcess:
        assert self.process is None or self.process.poll() is not None, "already running"
        args = [
            *self.command,
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ]
        if self.config_file is not None:
            args += ["--config", str(self.config_file)]
        for item in self.overrides:
            args += ["--override", item]
        self._ready.clear()
        self.spawned_at = time.monotonic()
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**self._inherited_env(), **self.env, "PYTHONUNBUFFERED": "1"},
            cwd=self.cwd,
        )
        self._pump_done = threading.Event()
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self._ready.wait(0.05):
            exited = self.process.poll() is not None
            if exited or time.monotonic() > deadline:
                self.kill()
                self._pump_done.wait(5)
                raise RuntimeError(
                    f"broker did not start (exit code {self.process.returncode}); "
                    f"log:\n{self.log_text()}"
                )
        return self

    def _inherited_env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k not in self.env_removed}

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        try:
            self._pump_lines(process)
        finally:
            self._pump_done.set()

    def _pump_lines(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        with open(self.log_path, "a", encoding="utf-8") as sink:
            for raw in process.stderr:
                line = raw.decode("utf-8", "replace")
                sink.write(line)
                sink.flush()
                self._log_lines.append(line)
                match = _LISTENING.search(line)
                if match and not self._ready.is_set():
                    self.port = int(match.group(1))
                    self._ready.set()

    def log_text(self) -> str:
        return "".join(self._log_lines)

    def listener_ports(self) -> dict[str, int]:
        """The bound port of each listener (`listeners`' names), from the start-up log."""
        return {m.group(1): int(m.group(2)) for m in _BOUND.finditer(self.log_text())}

    def wait_for_log(self, pattern: str, *, timeout_s: float = 10.0) -> re.Match[str] | None:
        """The first match of `pattern` in the log, waiting up to `timeout_s` for it."""
        compiled = re.compile(pattern)
        found: list[re.Match[str]] = []

        def seen() -> bool:
            match = compiled.search(self.log_text())
            if match is not None:
                found.append(match)
            return match is not None

        wait_until(seen, timeout_s=timeout_s)
        return found[0] if found else None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: the broker gets no chance to flush or close anything."""
        processes.kill(self.process)
        self._close_pipe()

    def _close_pipe(self) -> None:
        """Once the process is gone and its log read to the end, close the pipe (an
        unclosed pipe is a ResourceWarning, an error under the test settings)."""
        if self.process is not None and self.process.poll() is not None:
            self._pump_done.wait(5)
            if self.process.stderr is not None and self._pump_done.is_set():
                self.process.stderr.close()

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM and wait for a graceful exit; returns the exit code."""
        assert self.process is not None
        processes.stop(self.process, timeout_s, strict=True)
        self._close_pipe()
        return int(self.process.returncode)

    def restart(self) -> BrokerProcess:
        self.kill()
        return self.start()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Brokers:
    """Starts brokers, each on its own data directory under `root`; `kill_all` ends
    them (the e2e `brokers` fixture does so when its test ends)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[BrokerProcess] = []

    def start(self, *overrides: str, config_file: Path | None = None) -> BrokerProcess:
        data_dir = self.root / f"data{len(self.started)}"
        process = BrokerProcess(data_dir, overrides=overrides, config_file=config_file)
        self.started.append(process)
        return process.start()

    def kill_all(self) -> None:
        for process in self.started:
            process.kill()


def running(data_dir: Path, *overrides: str) -> Iterator[BrokerProcess]:
    """A started broker on `data_dir` with config `overrides`, for a fixture to
    `yield from`: SIGKILLed when the fixture ends."""
    process = BrokerProcess(data_dir, overrides=overrides).start()
    try:
        yield process
    finally:
        process.kill()


def wait_until(predicate: object, *, timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll `predicate()` until true or the timeout; returns the last result."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
