"""The share runner's own limits (client/share_runner.py), against a broker that accepts
connections and never answers."""

from __future__ import annotations

import asyncio
import socket
import time

from shoal.client import AsyncClient
from shoal.client.share_member import ShareMember
from shoal.client.share_runner import ShareRunner
from shoal.clock import SystemClock


def test_close_timeout_limit_gives_up_on_a_silent_broker() -> None:
    """`close(timeout_ms=...)`, hit: the leave cannot be sent (the coordinator lookup
    gets no answer), so close returns None in time and closes the connections."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        bootstrap = f"127.0.0.1:{silent.getsockname()[1]}"
        member = ShareMember(group_id="g", member_id="m", topics=["t"], clock=SystemClock())

        async def scenario() -> None:
            async with AsyncClient(bootstrap, request_timeout_ms=10_000) as client:
                runner = ShareRunner(member, client)
                runner.start()
                await asyncio.sleep(0.1)  # the join is waiting for the coordinator
                start = time.monotonic()
                assert await runner.close(timeout_ms=200) is None
                assert time.monotonic() - start < 2
                assert await runner.close(timeout_ms=200) is None  # idempotent

        asyncio.run(scenario())
