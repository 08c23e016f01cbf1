"""shoal.progress: a bar on a terminal, lines on a pipe, log lines without a stream."""

from __future__ import annotations

import io
import logging

import pytest

from shoal.progress import Progress

log = logging.getLogger("test.progress")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_stream_gets_a_line_per_tenth_and_the_end() -> None:
    out = io.StringIO()
    progress = Progress("deleted", "topics", 100, logger=log, stream=out)
    for _ in range(100):
        progress.advance()
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines == [f"deleted {n} of 100 topics" for n in (*range(10, 100, 10), 100)]


def test_terminal_gets_one_redrawn_bar() -> None:
    out = _Tty()
    progress = Progress("reset", "partitions", 4, logger=log, stream=out)
    for _ in range(4):
        progress.advance()
    progress.finish()
    text = out.getvalue()
    assert text.count("\r") == 4 and text.endswith("reset 4 of 4 partitions\n")
    assert "[" + "#" * 30 + "]" in text


def test_without_a_stream_it_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="test.progress")
    progress = Progress("recovered", "partitions", 3, logger=log)
    for _ in range(3):
        progress.advance()
    progress.finish()
    assert [r.getMessage() for r in caplog.records] == [
        "recovered 1 of 3 partitions",
        "recovered 2 of 3 partitions",
        "recovered 3 of 3 partitions",
    ]


def test_small_work_reports_nothing() -> None:
    out = io.StringIO()
    progress = Progress("deleted", "topics", 20, logger=log, stream=out, quiet_below=21)
    progress.advance(20)
    progress.finish()
    assert out.getvalue() == ""


def test_stopping_early_says_how_far() -> None:
    out = io.StringIO()
    progress = Progress("reset", "partitions", 100, logger=log, stream=out)
    progress.advance(55)
    progress.finish()
    assert out.getvalue().splitlines()[-1] == "reset 55 of 100 partitions"
