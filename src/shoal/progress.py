"""Progress of long work: a bar on a terminal, log lines otherwise.

`Progress(verb, noun, total)` is told `advance(n)` as items are done and `finish()`
at the end. On a TTY stream (a CLI's stderr) it redraws one line, `[#####.....]
deleted 12 of 50 topics`, whenever the whole percentage changes; otherwise it writes
`deleted 12 of 50 topics` at every tenth of the way (`steps`) and at the end: as a
line on the stream given (a CLI's stderr, piped), or as a log line of `logger` when
there is no stream (the broker's `recovered 12 of 50 partitions`).

Progress is counted by items, not by time, so it reads no clock and a run logs the
same lines every time. Work of fewer than `quiet_below` items reports
nothing.

A leaf module (stdlib only): the log's recovery, the broker and the CLI use it.

Hand-written on purpose rather than on rich or tqdm: most of what it does is not a bar
(a line per tenth on a pipe, log lines in the broker's recovery), and those libraries
draw time-based bars (elapsed time, rate, estimate), which would read the wall clock
and make a run's output differ from the next; rich would also bring its own
dependencies (markdown-it-py, pygments) into the broker for about thirty lines here.
"""

from __future__ import annotations

import logging
from typing import IO

BAR_WIDTH = 30
LOG_STEPS = 10
"""Log lines per run when the stream is not a terminal (one per tenth)."""


class Progress:
    def __init__(
        self,
        verb: str,
        noun: str,
        total: int,
        *,
        logger: logging.Logger,
        stream: IO[str] | None = None,
        steps: int = LOG_STEPS,
        quiet_below: int = 2,
    ) -> None:
        self.verb = verb
        self.noun = noun
        self.total = max(0, total)
        self.done = 0
        self._logger = logger
        self._stream = stream if stream is not None and _is_tty(stream) else None
        self._lines = stream if stream is not None and self._stream is None else None
        self._steps = max(1, steps)
        self._quiet = self.total < quiet_below
        self._shown = -1 if self._stream is not None else 0
        """The last percentage drawn (bar) or tenth written (lines; none at 0)."""

    def text(self) -> str:
        return f"{self.verb} {self.done} of {self.total} {self.noun}"

    def advance(self, count: int = 1) -> None:
        self.done = min(self.total, self.done + count)
        if self._quiet:
            return
        if self._stream is not None:
            percent = self.done * 100 // self.total
            if percent != self._shown:
                self._shown = percent
                filled = self.done * BAR_WIDTH // self.total
                bar = "#" * filled + "." * (BAR_WIDTH - filled)
                self._stream.write(f"\r[{bar}] {self.text()}")
                self._stream.flush()
            return
        step = self.done * self._steps // self.total
        if step != self._shown and self.done < self.total:
            self._shown = step
            self._line()

    def finish(self) -> None:
        """The work ended (all done, or stopped early): the last line says how far."""
        if self._quiet:
            return
        if self._stream is not None:
            self._stream.write("\n")
            self._stream.flush()
        else:
            self._line()

    def _line(self) -> None:
        if self._lines is not None:
            self._lines.write(self.text() + "\n")
            self._lines.flush()
        else:
            self._logger.info("%s", self.text())


def _is_tty(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())
