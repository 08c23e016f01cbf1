"""Where each record's milliseconds go, request by request: a diagnostic, on only when
the environment variable `SHOAL_RECORD_PATH` names a file (e.g.
`SHOAL_RECORD_PATH=/tmp/path.jsonl`).

While on, every request served is kept as one event: its API key, its connection,
when its frame was read whole and when its response was handed to the socket (both
`shoal.clock.measure_ns`, which is CLOCK_MONOTONIC on Linux: the same clock as a
client's monotonic clock on this machine), and what it did to records:

- a Produce notes each partition it appended to: `[topic, partition, base, last]`;
- a ShareFetch notes each span it acquired: `[topic, partition, first, last]`.

At stop the events are written to the file, one JSON object per line. A client that
stamps its payloads (bench/latency.py `--record-path`) can then split each record's
latency into the producer's part (stamp -> its Produce read by the broker), the
broker's (Produce read -> the ShareFetch answer carrying the record in the socket)
and the consumer's (that answer -> the application's poll returning it), and tell
whether a ShareFetch was already parked when the record came.

At most `EVENTS_MAX` events are kept (the rest are counted and the count is logged
and written as a last line), so memory stays bounded. Measurement only: with the
variable unset every call is a no-op (`RECORD_PATH.enabled` is False); when set, the
file is written at the broker's stop, not on the event loop's hot path.
"""

from __future__ import annotations

import json
import logging
import os
from contextvars import ContextVar
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "SHOAL_RECORD_PATH"
EVENTS_MAX = 2_000_000
"""Events kept; later ones are only counted (`dropped`)."""

Note = tuple[str, str, int, int, int]
"""("produced" | "acquired", topic, partition, first offset, last offset)."""

_notes: ContextVar[list[Note] | None] = ContextVar("record_path_notes", default=None)


class RecordPath:
    """The per-request event log (module docstring)."""

    def __init__(self, path: Path | None, *, events_max: int = EVENTS_MAX) -> None:
        self.path = path
        self.enabled = path is not None  # an attribute: read on every request
        self.events_max = events_max
        self.events: list[dict[str, object]] = []
        self.dropped = 0

    @classmethod
    def from_environment(cls) -> RecordPath:
        raw = os.environ.get(ENV, "").strip()
        return cls(Path(raw) if raw else None)

    def request_read(self) -> None:
        """A request's frame was read: its notes start empty (call only when enabled)."""
        _notes.set([])

    def note(self, kind: str, topic: str, partition: int, first: int, last: int) -> None:
        """What the request in hand did to the records `first`..`last` of a partition."""
        notes = _notes.get()
        if notes is not None:
            notes.append((kind, topic, partition, first, last))

    def request_done(self, api_key: int, connection: int, read_ns: int, written_ns: int) -> None:
        """The response to the request read at `read_ns` is in the socket."""
        notes = _notes.get()
        _notes.set(None)
        if len(self.events) >= self.events_max:
            self.dropped += 1
            return
        event: dict[str, object] = {
            "api": api_key,
            "conn": connection,
            "read_ns": read_ns,
            "written_ns": written_ns,
        }
        for kind, topic, partition, first, last in notes or ():
            spans = event.setdefault(kind, [])
            assert isinstance(spans, list)
            spans.append([topic, partition, first, last])
        self.events.append(event)

    def write(self) -> None:
        """Write the events kept to the file (at the broker's stop)."""
        if self.path is None:
            return
        with self.path.open("w") as out:
            for event in self.events:
                out.write(json.dumps(event, separators=(",", ":")) + "\n")
            if self.dropped:
                out.write(json.dumps({"dropped": self.dropped}) + "\n")
        if self.dropped:
            log.warning(
                "record path: %d events kept, %d more dropped (EVENTS_MAX %d)",
                len(self.events),
                self.dropped,
                self.events_max,
            )
        log.info("record path: %d events written to %s", len(self.events), self.path)


RECORD_PATH = RecordPath.from_environment()
