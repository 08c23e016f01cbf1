"""Ending a server process the tests or benchmarks started: a crash (SIGKILL) or a
graceful stop (SIGTERM, then SIGKILL if it outlasts its time). One way for Shoal's
BrokerProcess, the reference Kafka and the benchmark's Redis."""

from __future__ import annotations

import signal
import subprocess

REAP_TIMEOUT_S = 30.0
"""How long a killed process may take to be reaped."""


def kill(process: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL `process` if it runs (a crash: nothing flushed) and reap it."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.wait(REAP_TIMEOUT_S)


def stop(
    process: subprocess.Popen[bytes] | None, timeout_s: float, *, strict: bool = False
) -> int | None:
    """SIGTERM `process` if it runs and wait up to `timeout_s` for it to exit, else
    SIGKILL it (and, `strict`, raise the TimeoutExpired: a graceful stop was owed).
    Returns its exit code (None if there was no process)."""
    if process is None:
        return None
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            kill(process)
            if strict:
                raise
    return process.returncode
