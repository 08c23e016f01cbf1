"""The record path diagnostic (server/observability/record_path.py): per-request events with what
each request did to records, bounded by EVENTS_MAX, written as JSON lines."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from shoal.server.observability.record_path import RecordPath


async def _request(path: RecordPath, api: int, notes: list[tuple[str, str, int, int, int]]) -> None:
    """One request as a connection task serves it: read, handler notes, done."""
    path.request_read()
    for note in notes:
        path.note(*note)
    path.request_done(api, 7, 1_000, 2_500)


def _serve(path: RecordPath, *requests: tuple[int, list[tuple[str, str, int, int, int]]]) -> None:
    async def go() -> None:
        for api, notes in requests:
            await asyncio.create_task(_request(path, api, notes))

    asyncio.run(go())


def test_events_carry_each_requests_notes(tmp_path: Path) -> None:
    path = RecordPath(tmp_path / "events.jsonl")
    assert path.enabled
    _serve(
        path,
        (0, [("produced", "t", 0, 10, 14), ("produced", "t", 1, 3, 3)]),
        (78, [("acquired", "t", 0, 10, 12)]),
        (79, []),
    )
    path.write()
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert lines == [
        {
            "api": 0,
            "conn": 7,
            "read_ns": 1_000,
            "written_ns": 2_500,
            "produced": [["t", 0, 10, 14], ["t", 1, 3, 3]],
        },
        {
            "api": 78,
            "conn": 7,
            "read_ns": 1_000,
            "written_ns": 2_500,
            "acquired": [["t", 0, 10, 12]],
        },
        {"api": 79, "conn": 7, "read_ns": 1_000, "written_ns": 2_500},
    ]


def test_a_note_outside_a_request_is_ignored(tmp_path: Path) -> None:
    path = RecordPath(tmp_path / "events.jsonl")
    path.note("produced", "t", 0, 1, 1)  # no request read in this context
    assert path.events == []


def test_events_past_the_limit_are_counted_not_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = RecordPath(tmp_path / "events.jsonl", events_max=2)
    _serve(path, *[(0, [("produced", "t", 0, i, i)]) for i in range(5)])
    assert [e["produced"] for e in path.events] == [[["t", 0, 0, 0]], [["t", 0, 1, 1]]]
    assert path.dropped == 3
    with caplog.at_level(logging.WARNING, logger="shoal.server.observability.record_path"):
        path.write()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[-1]) == {"dropped": 3}
    assert "3 more dropped" in caplog.text


def test_off_without_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOAL_RECORD_PATH", raising=False)
    path = RecordPath.from_environment()
    assert not path.enabled
    path.write()  # nothing to write, no file named
