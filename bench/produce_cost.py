"""CPU of the Produce handler alone, in-process: a one-partition Produce v10 (acks=all,
1 KiB records) handed to `handlers/produce.handle` of a broker wired without a socket,
so the figure is the handler's own work (checks, validation, the log append, the
append's wake-ups, the response objects) without the shell around it
(bench/request_cost.py measures the whole request over a socket).

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine, alternately):

    PYTHONPATH=src .venv/bin/python -m bench.produce_cost [--requests 500] [--repeats 30]

Per kind (`produce`: one record in the batch; `produce6`: six; `idempotent6`: six
from an idempotent producer, sequences advancing): CPU microseconds per request
(`time.process_time`, the best of `--repeats` runs of `--requests`) and the Python
function calls per request counted by `cProfile` (deterministic, so comparable across
trees whatever the machine's load). Results: printed, and JSON in
bench/results/produce_cost.json with the date and the machine (`shoal_src`: the tree
measured).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.batches import build_batch

from bench.produce_fetch import machine, save_result
from shoal.client import requests
from shoal.clock import SystemClock
from shoal.config import BrokerConfig
from shoal.protocol.codec import decode_body, decode_header, encode_request, request_header_for
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext

TOPIC = "produce-cost"
RECORD_BYTES = 1024
VERSION = 10
PRODUCER_ID = 7


def decoded_produce(batch: bytes) -> Any:
    """The request object the shell hands the handler for a Produce of `batch`."""
    call = requests.produce({(TOPIC, 0): batch}, acks=-1)
    frame = encode_request(request_header_for(0, VERSION, 1, "produce-cost"), call.build(VERSION))
    body = frame[4:]
    _, offset = decode_header(body, 0, VERSION)
    return decode_body(body, offset, 0, VERSION)


def request_source(kind: str) -> Callable[[], Any]:
    """The next request of `kind` each call (an idempotent producer's sequence moves)."""
    count = 1 if kind == "produce" else 6
    if kind != "idempotent6":
        request = decoded_produce(build_batch([bytes(RECORD_BYTES)] * count))
        return lambda: request
    sequence = 0

    def next_request() -> Any:
        nonlocal sequence
        batch = build_batch(
            [bytes(RECORD_BYTES)] * count,
            producer_id=PRODUCER_ID,
            producer_epoch=0,
            base_sequence=sequence,
        )
        sequence += count
        return decoded_produce(batch)

    return next_request


async def _serve(
    handle: Any, ctx: RequestContext, requests_: list[Any], profile: cProfile.Profile | None
) -> float:
    if profile is not None:
        profile.enable()
    start = time.process_time()
    for request in requests_:
        response = await handle(ctx, request)
        assert response.responses[0].partition_responses[0].error_code == 0, response
    elapsed = time.process_time() - start
    if profile is not None:
        profile.disable()
    return elapsed


def measure(directory: Path, kind: str, args: argparse.Namespace) -> tuple[float, float]:
    """(CPU µs per request, Python calls per request)."""
    raw = {
        "log.dirs": str(directory),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }
    broker = Broker(BrokerConfig.from_raw(raw), clock=SystemClock())
    broker.logs.create_topic(TOPIC, partitions=1, configs={})
    ctx = RequestContext(
        services=broker.services,
        connection=ConnectionInfo(1, "127.0.0.1", 5000),
        api_key=0,
        api_version=VERSION,
        correlation_id=1,
        client_id="produce-cost",
    )
    handle = broker.handlers[0].handle
    source = request_source(kind)

    def batch_of(n: int) -> list[Any]:
        return [source() for _ in range(n)]

    try:
        asyncio.run(_serve(handle, ctx, batch_of(200), None))  # warm
        best = min(
            asyncio.run(_serve(handle, ctx, batch_of(args.requests), None))
            for _ in range(args.repeats)
        )
        profile = cProfile.Profile()
        asyncio.run(_serve(handle, ctx, batch_of(1000), profile))
        calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
    finally:
        broker.logs.close()
    return best / args.requests * 1e6, calls / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="requests per repeat")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--kinds", nargs="*", default=["produce", "produce6", "idempotent6"], help="kinds to run"
    )
    args = parser.parse_args()
    kinds: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-produce-cost-") as tmp:
        for kind in args.kinds:
            cpu_us, calls = measure(Path(tmp) / kind, kind, args)
            kinds[kind] = {"cpu_us": round(cpu_us, 1), "python_calls": round(calls)}
            print(
                f"{kind:<12} {cpu_us:7.1f} us CPU per request (best of {args.repeats} x "
                f"{args.requests}), {calls:.0f} Python calls; load {os.getloadavg()[0]:.1f}"
            )
    result = {"settings": vars(args), "kinds": kinds, "machine": machine()}
    print(f"results: {save_result('produce_cost', result)}")


if __name__ == "__main__":
    main()
