"""A connection serving pipelined requests gives the loop to others every
`limits.CONNECTION_TURN_MS` (server/net/connection.py), on a broker built without a
socket (conftest) whose manual clock a request moves on."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from shoal import limits
from shoal.clock import ManualClock
from shoal.protocol import codec
from shoal.server.broker import Broker
from tests.support.transports import RecordingWriter, serve_in_process

PIPELINED = 40


class _Writer(RecordingWriter):
    """Collects what a connection writes, tagged with its name, in one shared list."""

    def __init__(self, name: str, written: list[str]) -> None:
        super().__init__()
        self._name = name
        self._tags = written

    def write(self, data: Any) -> None:
        self._tags.append(self._name)


def _frames(count: int) -> bytes:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return b"".join(
        codec.encode_request(codec.request_header_for(18, 3, i, "t"), request) for i in range(count)
    )


class _TickingClock(ManualClock):
    """Each reading is `step_ms` later than the last: requests take time."""

    def __init__(self, step_ms: int) -> None:
        super().__init__()
        self._step_ms = step_ms

    def monotonic_ms(self) -> int:
        self.advance(self._step_ms)
        return super().monotonic_ms()


def _serve_two(broker: Broker) -> list[str]:
    written: list[str] = []

    async def main() -> None:
        tasks = []
        for name, count in (("busy", PIPELINED), ("other", 1)):
            reader = asyncio.StreamReader()
            reader.feed_data(_frames(count))
            reader.feed_eof()
            writer = _Writer(name, written)
            tasks.append(
                asyncio.create_task(serve_in_process(broker, reader, writer, len(tasks) + 1))
            )
        await asyncio.gather(*tasks)

    asyncio.run(main())
    return written


def test_pipelined_requests_give_way_once_a_turn_is_used(broker: Broker) -> None:
    object.__setattr__(broker.services, "clock", _TickingClock(limits.CONNECTION_TURN_MS))
    written = _serve_two(broker)
    assert written.count("busy") == PIPELINED
    assert written.index("other") <= 2  # served after one turn of the busy connection


def test_within_a_turn_pipelined_requests_are_served_back_to_back(broker: Broker) -> None:
    written = _serve_two(broker)  # the manual clock stands still: one turn
    assert written == ["busy"] * PIPELINED + ["other"]


class _OneAtATime(_Writer):
    """A client that sends its next request once it has its answer: the next frame
    arrives in a later loop pass, as `data_received` delivers it."""

    def __init__(self, reader: asyncio.StreamReader, frames: list[bytes]) -> None:
        super().__init__("one", [])
        self._reader = reader
        self._frames = frames

    def send_next(self) -> None:
        if self._frames:
            self._reader.feed_data(self._frames.pop(0))
        else:
            self._reader.feed_eof()

    def write(self, data: Any) -> None:
        super().write(data)
        asyncio.get_running_loop().call_soon(self.send_next)


def _forced_passes(broker: Broker, monkeypatch: Any, *, one_at_a_time: bool) -> int:
    """The loop passes the connection gave (asyncio.sleep(0)) serving PIPELINED
    requests, each taking half a turn on the ticking clock (read once per request
    served, once more per request waited for)."""
    half_turn = limits.CONNECTION_TURN_MS / 2
    assert half_turn == int(half_turn)
    object.__setattr__(broker.services, "clock", _TickingClock(int(half_turn)))
    passes = 0
    sleep = asyncio.sleep

    async def counted(delay: float, *args: Any) -> Any:
        nonlocal passes
        passes += delay == 0
        return await sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", counted)
    frames = [_frames(1)] * PIPELINED

    async def main() -> None:
        reader = asyncio.StreamReader()
        if one_at_a_time:
            writer: _Writer = _OneAtATime(reader, frames)
            writer.send_next()  # type: ignore[attr-defined]
        else:
            writer = _Writer("all", [])
            reader.feed_data(b"".join(frames))
            reader.feed_eof()
        await serve_in_process(broker, reader, writer)

    asyncio.run(main())
    return passes


def test_requests_waited_for_start_a_new_turn(broker: Broker, monkeypatch: Any) -> None:
    """A connection that suspended for its next request gave the loop away already:
    no extra pass; pipelined requests still give one per turn (two requests)."""
    assert _forced_passes(broker, monkeypatch, one_at_a_time=True) == 0
    assert _forced_passes(broker, monkeypatch, one_at_a_time=False) >= PIPELINED // 2 - 1
