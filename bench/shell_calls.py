"""Python function calls per request through the server shell, deterministic: the
`bench/request_cost.py` requests served in-process under cProfile.

Run from the repository root (PYTHONPATH picks the tree to measure):

    PYTHONPATH=src .venv/bin/python -m bench.shell_calls [--requests 2000] [--top 25]

A broker is built without a socket on a manual clock (as the server's unit tests build
it), with the one-partition topic of request_cost; one connection is served by
`serve_connection` over an in-memory reader and writer, closed loop: the next frame is
fed when the previous response is written. Per kind it prints the function calls per
request (cProfile's count, warm: after as many unprofiled requests) and, with `--top`,
the functions with the most calls per request. The count does not depend on the
machine's load, so it compares two trees exactly; CPU time is request_cost's job.
Results: printed, and JSON in bench/results/shell_calls.json with the date and the
machine (`shoal_src`: the tree measured).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.transports import RecordingWriter, serve_in_process

from bench.produce_fetch import machine, save_result
from bench.request_cost import TOPIC, frames
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.server.broker import Broker


class _ClosedLoop(RecordingWriter):
    """The writer: each response written feeds the next request, until `count`."""

    def __init__(self, reader: asyncio.StreamReader, frame: bytes, count: int) -> None:
        super().__init__()
        self._reader = reader
        self._frame = frame
        self._left = count

    def start(self) -> None:
        self._next()

    def _next(self) -> None:
        if self._left == 0:
            self._reader.feed_eof()
            return
        self._left -= 1
        self._reader.feed_data(self._frame)

    def write(self, data: Any) -> None:
        self._next()


def serve(broker: Broker, frame: bytes, count: int, profile: cProfile.Profile | None) -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()
        writer = _ClosedLoop(reader, frame, count)
        writer.start()
        if profile is not None:
            profile.enable()
        await serve_in_process(broker, reader, writer)
        if profile is not None:
            profile.disable()

    asyncio.run(main())


def _timed(broker: Broker, frame: bytes, count: int) -> float:
    """The process CPU per request of one unprofiled run, in µs."""
    started = time.process_time()
    serve(broker, frame, count, None)
    return 1e6 * (time.process_time() - started) / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (best of)")
    parser.add_argument("--top", type=int, default=0, help="list the N most called functions")
    parser.add_argument("--kinds", nargs="*", default=[], help="only these kinds")
    args = parser.parse_args(argv)
    kinds: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-shell-calls-") as tmp:
        raw = {
            "log.dirs": str(Path(tmp)),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "offsets.topic.num.partitions": "1",
            "share.coordinator.state.topic.num.partitions": "1",
        }
        broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
        try:
            broker.logs.create_topic(TOPIC, partitions=1, configs={})
            for kind, frame in frames().items():
                if args.kinds and kind not in args.kinds:
                    continue
                serve(broker, frame, args.requests, None)  # warm: caches, imports
                cpu_us = min(_timed(broker, frame, args.requests) for _ in range(args.repeats))
                profile = cProfile.Profile()
                serve(broker, frame, args.requests, profile)
                stats = pstats.Stats(profile)
                calls = stats.total_calls  # type: ignore[attr-defined]
                kinds[kind] = {
                    "calls_per_request": round(calls / args.requests, 1),
                    "cpu_us_per_request": round(cpu_us, 1),
                }
                print(
                    f"{kind:<14}{calls / args.requests:>9.1f} calls/request"
                    f"{cpu_us:>9.1f} µs/request"
                )
                if args.top:
                    rows = sorted(
                        stats.stats.items(),  # type: ignore[attr-defined]
                        key=lambda item: -item[1][1],
                    )[: args.top]
                    for (path, line, name), (_cc, nc, _tt, _ct, _callers) in rows:
                        where = f"{Path(path).name}:{line}"
                        print(f"    {nc / args.requests:>7.2f}  {name}  ({where})")
        finally:
            broker.logs.close()
    result = {"settings": vars(args), "kinds": kinds, "machine": machine()}
    print(f"results: {save_result('shell_calls', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
