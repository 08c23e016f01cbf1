"""A blocking facade over `ShareRunner` (share_runner.py): the share-group member for
callers without an event loop (Spark's driver process).

`ShareMemberThread` runs an event loop on a daemon thread of its own, with an
`AsyncClient` and a `ShareRunner` on it, so heartbeats and RENEWs keep going while
the caller is busy elsewhere (Spark running a batch). Every method blocks until the
loop has done its part; the member is only ever touched on the loop's thread (`read`
runs a function there). `run` lends the thread's client to other calls (group
configs, offsets), so one set of connections serves the member's whole life.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Mapping
from typing import Any, Final, TypeVar

from shoal.client.aio import AsyncClient
from shoal.client.bootstrap import Node
from shoal.client.errors import ClientError, RequestTimeout
from shoal.client.ranges import Span, TopicIdPartition
from shoal.client.settings import ClientSettings
from shoal.client.share_effects import Acknowledged, Acquired
from shoal.client.share_member import ShareMember
from shoal.client.share_runner import CLOSE_TIMEOUT_MS_DEFAULT, ShareRunner
from shoal.clock import Clock
from shoal.protocol.share import AcknowledgeType, AcquireMode

log = logging.getLogger(__name__)
T = TypeVar("T")

THREAD_JOIN_TIMEOUT_S: Final = 10.0
"""How long `close()` waits for the loop thread to end."""


class ShareMemberThread:
    """See the module docstring. Methods may be called from any thread but the loop's."""

    def __init__(
        self,
        member: ShareMember,
        bootstrap: str | list[Node],
        *,
        settings: ClientSettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.member = member
        self._bootstrap = bootstrap
        self._settings = settings or ClientSettings()
        self._clock = clock
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"shoal-share-{member.group_id}", daemon=True
        )
        self._client: AsyncClient | None = None
        self._runner: ShareRunner | None = None
        self._closed = False

    # ---- life cycle

    def start(self, prepare: Callable[[AsyncClient], Awaitable[None]] | None = None) -> None:
        """Start the loop thread and the client, `await prepare(client)` if given (what
        must happen before the member joins: group configs, topic ids), then start the
        runner (the member joins). What `prepare` raises is raised here, and the
        member does not join."""
        assert not self._thread.is_alive() and not self._closed, "started twice"
        self._thread.start()
        timeout_ms = self._settings.api_timeout_ms + self._settings.request_timeout_ms
        self._submit(self._start(prepare), timeout_ms=timeout_ms)

    async def _start(self, prepare: Callable[[AsyncClient], Awaitable[None]] | None) -> None:
        self._client = AsyncClient(self._bootstrap, settings=self._settings, clock=self._clock)
        if prepare is not None:
            await prepare(self._client)
        self._runner = ShareRunner(self.member, self._client, clock=self._clock)
        self._runner.start()

    def close(self, *, timeout_ms: int = CLOSE_TIMEOUT_MS_DEFAULT) -> None:
        """Close the member (sessions closed, group left), the connections and the
        thread. Idempotent; never raises (the brokers release what was still held
        when the connections close)."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            try:
                self._submit(self._close(timeout_ms), timeout_ms=2 * timeout_ms)
            except Exception:  # best effort: the connections are gone either way
                log.warning(
                    "share member %s of group %s: unclean close",
                    self.member.member_id,
                    self.member.group_id,
                    exc_info=True,
                )
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=THREAD_JOIN_TIMEOUT_S)
        if not self._loop.is_running():
            self._loop.close()

    async def _close(self, timeout_ms: int) -> None:
        try:
            if self._runner is not None:
                await self._runner.close(timeout_ms=timeout_ms)
        finally:
            if self._client is not None:
                await self._client.close()

    # ---- the member's intents

    def acquire(
        self,
        *,
        records_max: int,
        wait_ms: int,
        skip: Collection[TopicIdPartition] = (),
        acquire_mode: AcquireMode | None = None,
    ) -> Acquired:
        runner = self._started()
        return self._submit(
            runner.acquire(
                records_max=records_max, wait_ms=wait_ms, skip=skip, acquire_mode=acquire_mode
            ),
            timeout_ms=wait_ms + self._settings.request_timeout_ms,
        )

    def acknowledge(
        self, spans: Mapping[TopicIdPartition, Iterable[Span]], ack_type: AcknowledgeType
    ) -> Acknowledged:
        runner = self._started()
        return self._submit(
            runner.acknowledge(spans, ack_type), timeout_ms=self._settings.request_timeout_ms
        )

    def wait_for(self, condition: Callable[[ShareMember], bool], *, timeout_ms: int) -> bool:
        """Block until `condition(member)` holds (evaluated on the loop's thread); False
        if it does not within `timeout_ms`."""
        runner = self._started()
        return self._submit(
            runner.wait_for(lambda: condition(self.member), timeout_ms=timeout_ms),
            timeout_ms=timeout_ms + self._settings.request_timeout_ms,
        )

    def read(self, read: Callable[[ShareMember], T]) -> T:
        """`read(member)`, run on the loop's thread (e.g. `ShareMember.take_lost`)."""

        async def on_loop() -> T:
            return read(self.member)

        return self._submit(on_loop(), timeout_ms=self._settings.request_timeout_ms)

    def run(self, call: Callable[[AsyncClient], Awaitable[T]], *, timeout_ms: int) -> T:
        """`await call(client)` on the loop, with the thread's client."""
        if self._closed or self._client is None:
            raise ClientError(f"the client of share group {self.member.group_id!r} is closed")

        async def on_loop() -> T:
            assert self._client is not None
            return await call(self._client)

        return self._submit(on_loop(), timeout_ms=timeout_ms)

    # ---- internals

    def _started(self) -> ShareRunner:
        if self._closed or self._runner is None:
            raise ClientError(
                f"share member {self.member.member_id} of group {self.member.group_id!r} is "
                + ("closed" if self._closed else "not started")
            )
        return self._runner

    def _submit(self, coro: Coroutine[Any, Any, T], *, timeout_ms: int) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=timeout_ms / 1000)
        except TimeoutError:
            future.cancel()
            raise RequestTimeout(
                f"share member {self.member.member_id} of group {self.member.group_id!r}: "
                f"no outcome within {timeout_ms} ms"
            ) from None
