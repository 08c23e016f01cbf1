"""The asyncio driver of the sans-I/O share-group member (share_member.py).

`ShareRunner(member, client)` executes what `ShareMember.poll()` asks, on the loop it
is started in, with an `AsyncClient` for lookups:

- `Send` to a node id or to `COORDINATOR`: on a connection of the runner's own, one
  per (lane, broker), kept open for the member's life (librdkafka's mock drops every
  share session on a broker when any connection to it closes; a Kafka broker answers
  a connection's requests in order, so a heartbeat must not queue behind a parked
  ShareFetch: the coordinator's heartbeats have their own lane). The version of each
  call comes from that broker's ApiVersions; a call it cannot serve is refused before
  sending (`KafkaError` UNSUPPORTED_VERSION or `FeatureUnsupported`) and reported to
  the member as such. Node ids are resolved from the client's metadata, the
  coordinator by the client's lookup;
- `FindLeaders`: Metadata of the member's topics, through the client;
- `FindCoordinator`: the client forgets the cached coordinator (the next heartbeat
  looks it up again);
- timers: the loop wakes at `next_deadline_ms()`, on a reply, or on a new intent.

The intents are coroutines that return the member's outcome: `acquire`,
`acknowledge`, `close`. Once a heartbeat error was fatal (`member.membership.fatal`),
`acquire` and `acknowledge` raise it. A lost share session is not fatal, as in
Kafka's share consumer: the broker released the records held there (the member
reports them once by `take_lost()`, and logs the loss) and the next fetch to that
broker opens a new session.
Everything runs on the loop's thread: the member is never touched concurrently.
(share_thread.py runs a runner on a thread of its own for blocking callers.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from typing import Any, Final, Literal

from shoal.client.aio import AsyncClient, Connection
from shoal.client.bootstrap import Node
from shoal.client.errors import BrokerUnreachable, ClientError
from shoal.client.operations import Disconnected
from shoal.client.ranges import Span, TopicIdPartition
from shoal.client.share_effects import (
    COORDINATOR,
    Acknowledged,
    Acquired,
    Closed,
    FindCoordinator,
    FindLeaders,
    Outcome,
    Send,
    Target,
)
from shoal.client.share_member import ShareMember
from shoal.clock import Clock, SystemClock
from shoal.protocol.share import AcknowledgeType, AcquireMode

log = logging.getLogger(__name__)

Lane = Literal["coordinator", "session"]
SentObserver = Callable[[Target, Any], None]
"""Called with (target, kio request) for every request sent (tests, tracing)."""
CLOSE_TIMEOUT_MS_DEFAULT: Final = 30_000
"""How long `close()` waits for the sessions to close and the leave heartbeat."""


class ShareRunner:
    """See the module docstring."""

    def __init__(
        self,
        member: ShareMember,
        client: AsyncClient,
        *,
        clock: Clock | None = None,
        on_sent: SentObserver | None = None,
    ) -> None:
        self.member = member
        self.client = client
        self._clock = clock or SystemClock()
        self._on_sent = on_sent
        self._connections: dict[tuple[Lane, tuple[str, int]], Connection] = {}
        self._opening: dict[tuple[Lane, tuple[str, int]], asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting: dict[int, asyncio.Future[Outcome]] = {}
        self._wake: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None

    # ---- life cycle

    def start(self) -> None:
        """Start driving the member on the running loop (it joins the group)."""
        assert self._loop_task is None, "started twice"
        self._wake = asyncio.Event()
        self._loop_task = asyncio.create_task(self._drive(), name=f"share-{self.member.group_id}")

    async def __aenter__(self) -> ShareRunner:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def wait_for(self, condition: Callable[[], bool], *, timeout_ms: int) -> bool:
        """Keep driving until `condition()` holds (checked after every step); False if
        it does not within `timeout_ms`."""
        end_ms = self._clock.monotonic_ms() + timeout_ms
        while not condition():
            self._check_running()
            left_ms = end_ms - self._clock.monotonic_ms()
            if left_ms <= 0:
                return False
            await asyncio.sleep(min(left_ms, 20) / 1000)
        return True

    # ---- intents

    async def acquire(
        self,
        *,
        records_max: int,
        wait_ms: int,
        skip: Collection[TopicIdPartition] = (),
        acquire_mode: AcquireMode | None = None,
    ) -> Acquired:
        self._check_usable()
        outcome = await self._outcome(
            self.member.acquire(
                records_max=records_max, wait_ms=wait_ms, skip=skip, acquire_mode=acquire_mode
            )
        )
        assert isinstance(outcome, Acquired), outcome
        return outcome

    async def acknowledge(
        self, spans: Mapping[TopicIdPartition, Iterable[Span]], ack_type: AcknowledgeType
    ) -> Acknowledged:
        self._check_usable()
        outcome = await self._outcome(self.member.acknowledge(spans, ack_type))
        assert isinstance(outcome, Acknowledged), outcome
        return outcome

    async def close(self, *, timeout_ms: int = CLOSE_TIMEOUT_MS_DEFAULT) -> Closed | None:
        """Close the member (sessions closed, group left), then stop and close the
        runner's connections. Idempotent; None when the close did not complete in time
        (the brokers release what was held when the connections close)."""
        outcome: Outcome | None = None
        if self._loop_task is not None and not self._loop_task.done():
            ticket = self.member.close()
            try:
                outcome = await asyncio.wait_for(self._outcome(ticket), timeout_ms / 1000)
            except (TimeoutError, ClientError) as exc:
                log.warning(
                    "share member %s of group %s: close incomplete: %s",
                    self.member.member_id,
                    self.member.group_id,
                    exc or type(exc).__name__,
                )
        await self._stop()
        assert outcome is None or isinstance(outcome, Closed), outcome
        return outcome

    async def _stop(self) -> None:
        for task in [self._loop_task, *self._tasks]:
            if task is not None:
                task.cancel()
        for task in [self._loop_task, *self._tasks]:
            if task is not None:
                # cancelled now, or already ended and logged (_drive, _task_done)
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._tasks.clear()
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            await connection.close()

    # ---- the loop

    async def _outcome(self, ticket: int) -> Outcome:
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = future
        self._poke()
        try:
            return await future
        finally:
            self._waiting.pop(ticket, None)

    def _poke(self) -> None:
        self._check_running()
        assert self._wake is not None
        self._wake.set()

    async def _drive(self) -> None:
        try:
            await self._steps()
        except Exception as exc:  # a bug: the intents waiting must not hang
            log.exception("share runner of group %s stopped", self.member.group_id)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(
                        ClientError(
                            f"the share runner of group {self.member.group_id!r} stopped: {exc!r}"
                        )
                    )
            raise

    async def _steps(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            for effect in self.member.poll():
                if isinstance(effect, Send):
                    self._spawn(self._send(effect))
                elif isinstance(effect, FindLeaders):
                    self._spawn(self._find_leaders(effect.partitions))
                else:
                    assert isinstance(effect, FindCoordinator), effect
                    log.info(
                        "share group %s: finding the coordinator again (%s)",
                        self.member.group_id,
                        effect.reason,
                    )
                    self.client.cache.forget_coordinator(self.member.group_id)
            self._deliver_outcomes()
            deadline_ms = self.member.next_deadline_ms()
            timeout_s = None
            if deadline_ms is not None:
                timeout_s = max(0, deadline_ms - self._clock.monotonic_ms()) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout_s)

    def _deliver_outcomes(self) -> None:
        for ticket, future in list(self._waiting.items()):
            if future.done():
                continue
            outcome = self.member.take_result(ticket)
            if outcome is not None:
                future.set_result(outcome)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "share member %s: a driver task failed",
                self.member.member_id,
                exc_info=task.exception(),
            )

    def _check_running(self) -> None:
        task = self._loop_task
        if task is None:
            raise ClientError("the share runner is not started")
        if task.done():
            error = None if task.cancelled() else task.exception()
            raise ClientError(f"the share runner of group {self.member.group_id!r} stopped") from (
                error
            )

    def _check_usable(self) -> None:
        self._check_running()
        fatal = self.member.membership.fatal
        if fatal is not None:
            raise fatal

    # ---- effects

    async def _send(self, send: Send) -> None:
        try:
            connection = await self._connection(send.target)
            timeout_s = (self.client.settings.request_timeout_ms + send.call.wait_ms) / 1000
            request = connection.core.build(send.call)
            if self._on_sent is not None:
                self._on_sent(send.target, request)
            try:
                response = await connection.request(
                    request, timeout_s=timeout_s, expect_response=send.call.expect_response
                )
            except (TimeoutError, ConnectionError) as exc:
                await self._drop(connection)
                reason = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
                raise BrokerUnreachable(
                    f"{send.what} at {connection.core.address}: {reason}"
                ) from exc
        except ClientError as exc:
            log.info("share member %s: %s failed: %s", self.member.member_id, send.what, exc)
            self.member.on_failure(send.request_id, exc)
        else:
            self.member.on_response(send.request_id, response)
        self._poke()

    async def _connection(self, target: Target) -> Connection:
        lane: Lane = "coordinator" if target == COORDINATOR else "session"
        node = await self._node(target)
        key = (lane, node.key)
        async with self._opening.setdefault(key, asyncio.Lock()):
            connection = self._connections.get(key)
            if connection is not None and connection.closed_by_peer:
                await self._drop(connection)
                connection = None
            if connection is None:
                timeout_ms = self.client.settings.request_timeout_ms
                connection = await self.client.open_connection(node, timeout_ms)
                self._connections[key] = connection
            return connection

    async def _node(self, target: Target) -> Node:
        if target == COORDINATOR:
            return await self.client.coordinator(self.member.group_id)
        assert isinstance(target, int), target
        node = self.client.cache.broker(target)
        if node is None:
            await self.client.brokers()
            node = self.client.cache.broker(target)
        if node is None:
            raise Disconnected(
                Node("?", 0, target), f"node {target} is not in the metadata", phase="connect"
            )
        return node

    async def _drop(self, connection: Connection) -> None:
        for key, known in list(self._connections.items()):
            if known is connection:
                del self._connections[key]
        await connection.close()

    async def _find_leaders(self, partitions: frozenset[TopicIdPartition]) -> None:
        leaders = dict.fromkeys(partitions, -1)
        try:
            view = await self.client.metadata(list(self.member.membership.topics))
        except ClientError as exc:
            log.warning(
                "share member %s: metadata for the leaders of %d partitions failed: %s",
                self.member.member_id,
                len(partitions),
                exc,
            )
        else:
            for topic in view.topics.values():
                if topic.topic_id is None:
                    continue
                for part in topic.partitions.values():
                    tp = TopicIdPartition(topic.topic_id, part.partition)
                    if tp in leaders:
                        leaders[tp] = part.leader
        self.member.set_leaders(leaders)
        self._poke()
