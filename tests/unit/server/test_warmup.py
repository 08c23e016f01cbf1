"""The warm-up loads what the first requests of the hot APIs would load on the loop,
then freezes the heap. Run in a fresh interpreter: the test process has imported much
already."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

from shoal.server.net.warmup import (
    HOT_APIS,
    WARM_START_DELAY_S,
    newest_warmed,
    warm_steps,
    warm_up,
)
from shoal.server.registry import load_all_handlers

_PROBE = textwrap.dedent(
    """
    import asyncio, gc, sys
    from shoal.server.registry import load_all_handlers
    from shoal.server.net.warmup import warm_steps, warm_up
    from shoal.protocol import codec, fast_writer
    from shoal.protocol.schema import response_schema

    handlers = load_all_handlers()
    fresh = [m for m in sys.modules if m.startswith("kio.schema.share_fetch.")]
    assert not fresh, fresh
    loaded = asyncio.run(warm_up(handlers))
    assert loaded == len(warm_steps(handlers)), loaded
    assert gc.get_freeze_count() > 0
    before = set(sys.modules)
    for key, version in ((0, 10), (0, 9), (78, 1), (78, 2), (79, 1), (76, 1), (3, 12)):
        assert (key, version) in codec._BODY_PLANS, (key, version)  # the decode plan too
        cls = codec.request_class(key, version)
        assert codec.is_flexible(key, version) == bool(cls.__flexible__)
        fast_writer.entity_writer(response_schema(key, version).root)
    # ShareFetch v1 has no field that v2 added: Schema.make checks the name, loading nothing
    response_schema(78, 1).make(
        "PartitionData", partition_index=0, error_code=0, error_message=None,
        acknowledge_error_code=0, acknowledge_error_message=None,
        current_leader=None, records=b"", acquired_records=())
    new = sorted(set(sys.modules) - before)
    assert not new, new
    print("ok", loaded)
    """
)


def test_warm_up_loads_the_hot_apis_and_freezes() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], check=False, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ")


def test_steps_are_the_newest_served_versions_of_the_hot_apis() -> None:
    handlers = load_all_handlers()
    steps = warm_steps(handlers)
    newest = [(k, newest_warmed(handlers[k])) for k in HOT_APIS if k in handlers]
    assert steps[: len(newest)] == newest
    # served past librdkafka's newest: warmed from what librdkafka sends
    assert [v for k, v in steps if k == 0] == [10, 9] and handlers[0].max_version > 10
    assert [v for k, v in steps if k == 1] == [16, 15]
    assert newest_warmed(handlers[3]) == handlers[3].max_version  # Metadata: the newest
    assert {k for k, _ in steps} == set(HOT_APIS) & set(handlers)
    assert all(handlers[k].supports(v) for k, v in steps)


def test_a_stopping_broker_stops_the_warm_up() -> None:
    calls = iter([False, False, True])
    loaded = asyncio.run(warm_up(load_all_handlers(), stopping=lambda: next(calls)))
    assert loaded == 2


def test_the_warm_up_begins_after_its_delay() -> None:
    # The broker gives its first requests the loop before warming (WARM_START_DELAY_S):
    # nothing is loaded until the delay has passed.
    asked: list[float] = []

    async def run(delay_s: float) -> tuple[float, int]:
        began = time.monotonic()
        asked.clear()
        loaded = await warm_up(
            load_all_handlers(),
            stopping=lambda: asked.append(time.monotonic()) or True,
            delay_s=delay_s,
        )
        return asked[0] - began, loaded

    waited, loaded = asyncio.run(run(0.2))
    assert waited >= 0.2 and loaded == 0
    waited, loaded = asyncio.run(run(0.0))
    assert waited < 0.2 and loaded == 0
    assert WARM_START_DELAY_S > 0
