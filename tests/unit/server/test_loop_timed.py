"""Request time for `request_percentage` (server/net/throttle.py): `LoopTimed` counts the
time a handler's steps run on the loop, not the time it waits, and passes results,
exceptions and cancellations through."""

from __future__ import annotations

import asyncio
import time

import pytest

from shoal.server.net.throttle import LoopTimed


def _run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def _busy_then_wait(busy_s: float, wait_s: float) -> str:
    deadline = time.perf_counter() + busy_s
    while time.perf_counter() < deadline:  # on the loop
        pass
    await asyncio.sleep(wait_s)  # off the loop: not counted
    deadline = time.perf_counter() + busy_s
    while time.perf_counter() < deadline:
        pass
    return "done"


def test_counts_the_steps_not_the_waits() -> None:
    async def main() -> tuple[str, int]:
        timed = LoopTimed(_busy_then_wait(0.02, 0.3))
        return await timed, timed.ns

    result, ns = _run(main())  # type: ignore[misc]
    assert result == "done"
    assert 0.04e9 <= ns < 0.25e9, ns  # two 20 ms steps; the 300 ms sleep left out


def test_exceptions_and_cancellation_pass_through() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("handler bug")

    async def main() -> None:
        with pytest.raises(ValueError, match="handler bug"):
            await LoopTimed(fails())
        cancelled = False

        async def parked() -> None:
            nonlocal cancelled
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled = True
                raise

        task = asyncio.ensure_future(LoopTimed(parked()))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cancelled

    _run(main())


def test_a_failed_future_reaches_the_handler_that_awaits_it() -> None:
    """The loop throws a failed future's exception into the outermost coroutine
    (Task.__wakeup); LoopTimed hands it on to the handler, which may catch it (an
    admin change refused in another task, shielded)."""

    async def refused() -> None:
        await asyncio.sleep(0)
        raise KeyError("refused")

    async def handler() -> str:
        try:
            await asyncio.shield(asyncio.ensure_future(refused()))
        except KeyError:
            return "answered the refusal"
        return "not refused"

    async def main() -> str:
        return await LoopTimed(handler())  # type: ignore[no-any-return]

    assert _run(main()) == "answered the refusal"
