"""Run a real `shoal serve` process on a free loopback port, for end-to-end tests.

The broker is started with `--port 0`; the port it bound is read from its start-up log
line. Restarts reuse that port, so clients reconnect to the same bootstrap address.
`kill()` sends SIGKILL (a crash), `stop()` SIGTERM (graceful shutdown).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

_LISTENING = re.compile(r"listening on \S+:(\d+)")
START_TIMEOUT_S = 60.0


class BrokerProcess:
    def __init__(
        self,
        data_dir: Path,
        *,
        overrides: Sequence[str] = (),
        port: int = 0,
        log_path: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.overrides = list(overrides)
        self.port = port
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}-broker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log_lines: list[str] = []
        self._ready = threading.Event()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> BrokerProcess:
        assert self.process is None or self.process.poll() is not None, "already running"
        args = [
            sys.executable,
            "-m",
            "shoal.cli.main",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ]
        for item in self.overrides:
            args += ["--override", item]
        self._ready.clear()
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()
        if not self._ready.wait(START_TIMEOUT_S):
            self.kill()
            raise RuntimeError(f"broker did not start; log:\n{self.log_text()}")
        return self

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
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

    def kill(self) -> None:
        """SIGKILL: the broker gets no chance to flush or close anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM and wait for a graceful exit; returns the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
                raise
        return int(self.process.returncode)

    def restart(self) -> BrokerProcess:
        self.kill()
        return self.start()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


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
