"""The `shoal-share` source's share-group member: the driver's one consumer of the group.

`ShareMember` is a synchronous facade over an asyncio client that runs on a daemon
thread with its own event loop, so the Spark source runner (a plain blocking Python
process) can call it. It speaks kio over two `KafkaConnection`s:

- the **group** connection: IncrementalAlterConfigs (the `share.*` group settings, once,
  before joining), Metadata, ListOffsets and ShareGroupHeartbeat. A background task
  heartbeats at the interval the broker returns, adopts every assignment and rejoins
  (epoch 0, same member id) when fenced;
- the **share session** connection: ShareFetch v2 (acquire) and ShareAcknowledge v2
  (ACCEPT, RELEASE and, with IsRenewAck, RENEW). Session requests are serialised by a
  lock, so epochs go out in order. A background task RENEWs every record acquired and
  not yet acknowledged every `lock_renew_interval_ms` (default: half the lock duration
  the broker reports).

The member remembers what it holds (`_held`, in the loop thread only) so RENEW covers
exactly the unacknowledged records; records whose RENEW failed are reported once by
`take_lost()`. A lost share-session connection is fatal: the broker has released every
record the member held, so the next call raises `ShareMemberError` and the query
restarts from its checkpoint (at least once). `close()` is idempotent: the final
ShareAcknowledge (epoch -1) closes the session, which releases whatever is still
held, then the member leaves the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import threading
import uuid
from collections.abc import Collection, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from shoal.client import KafkaConnection
from shoal.protocol.errors import ErrorCode
from shoal.spark.share_ledger import merge, split_by
from shoal.spark.share_offsets import Span, Spans, TopicPartition, normalized
from shoal.spark.share_requests import (
    error_name,
    group_configs_request,
    heartbeat_request,
    list_offsets_request,
    metadata_request,
    share_acknowledge_request,
    share_fetch_request,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

ACCEPT, RELEASE, RENEW = 1, 2, 4
REJOIN_BACKOFF_MS = 500
"""Pause before a heartbeat is retried after an error or a dropped connection."""
ASSIGNMENT_WAIT_MS_MAX = 30_000
"""`start()` waits this long for the first non-empty assignment before it fails."""
RENEW_TICK_MS = 100
"""How often the RENEW task checks whether a renewal is due."""
ASSIGNMENT_POLL_MS = 200
"""Heartbeat interval while the member has no partitions yet."""
INT32_MAX = 2**31 - 1


class ShareMemberError(RuntimeError):
    """The member cannot go on; the message says why, naming the source option at fault
    where there is one."""


@dataclass(frozen=True, slots=True)
class MemberSettings:
    bootstrap: str
    group_id: str
    topics: tuple[str, ...]
    group_configs: Mapping[str, str] = field(default_factory=dict)
    """`share.*` group configs SET (IncrementalAlterConfigs on the GROUP) before joining."""
    client_id: str = "shoal-spark-share"
    lock_renew_interval_ms: int | None = None
    """None: half the lock duration the broker reports."""
    request_timeout_ms: int = 30_000
    read_committed: bool = False


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= INT32_MAX else epoch + 1


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


class ShareMember:
    """The driver's share-group member. See the module docstring."""

    def __init__(self, settings: MemberSettings) -> None:
        self.settings = settings
        self.member_id = uuid.uuid4().hex[:22]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"shoal-share-{settings.group_id}", daemon=True
        )
        self._closed = False
        # loop-thread state
        self._group_conn: KafkaConnection | None = None
        self._share_conn: KafkaConnection | None = None
        self._session_lock: asyncio.Lock | None = None
        self._share_epoch = 0
        self._member_epoch = 0
        self._heartbeat_interval_ms = 5_000
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self._partition_counts: dict[str, int] = {}
        self._assigned: set[tuple[uuid.UUID, int]] = set()
        self._in_session: set[tuple[uuid.UUID, int]] = set()
        self._assignment_seen: asyncio.Event | None = None
        self._held: dict[TopicPartition, list[Span]] = {}
        self._lost: dict[TopicPartition, list[Span]] = {}
        self._lock_duration_ms = 30_000
        self._failure: str | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # ---- the synchronous facade

    def start(self) -> None:
        """Connect, apply the group configs, resolve the topics, join and wait for an
        assignment. Raises ShareMemberError with a clear reason."""
        self._thread.start()
        try:
            self._call(self._start(), timeout_ms=ASSIGNMENT_WAIT_MS_MAX + 2 * self._timeout_ms)
        except BaseException:
            self.close()
            raise

    def acquire(
        self, *, records_max: int, wait_ms: int, skip: Collection[TopicPartition] = ()
    ) -> dict[TopicPartition, list[Span]]:
        """One ShareFetch from the assigned partitions but `skip`: at most `records_max`
        records newly acquired (record-limit mode: every acquisition counts as a
        delivery, so the member takes no record it will not deliver), waiting up to
        `wait_ms` for some."""
        return self._call(self._acquire(records_max, wait_ms, skip), timeout_ms=wait_ms)

    def acknowledge(self, spans: Spans, ack_type: int) -> dict[TopicPartition, str]:
        """ACCEPT or RELEASE `spans` (no longer held afterwards, whatever the outcome);
        returns the partitions whose acknowledgement failed, with the error name."""
        if not spans:
            return {}
        return self._call(self._acknowledge(spans, ack_type))

    def end_offsets(self) -> dict[TopicPartition, int]:
        """Every partition's end offset (high watermark, or the last stable offset for
        read_committed)."""
        return self._call(self._end_offsets())

    def take_lost(self) -> dict[TopicPartition, tuple[Span, ...]]:
        """Records whose lock could not be renewed since the last call (now lost)."""
        return self._call(self._take_lost())

    @property
    def lock_duration_ms(self) -> int:
        return self._lock_duration_ms

    def close(self) -> None:
        """Close the share session (releasing what is still held), leave the group, stop
        the thread. Idempotent; never raises."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            try:
                self._call(self._close(), timeout_ms=self._timeout_ms, check=False)
            except Exception:  # closing best-effort: the broker frees the rest on disconnect
                log.warning(
                    "share member %s of group %s: unclean close",
                    self.member_id,
                    self.settings.group_id,
                    exc_info=True,
                )
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()

    @property
    def _timeout_ms(self) -> int:
        return self.settings.request_timeout_ms

    def _call(self, coro: Coroutine[Any, Any, T], *, timeout_ms: int = 0, check: bool = True) -> T:
        if check and (self._closed or self._failure is not None):
            coro.close()
            raise ShareMemberError(self._failure or "the share member is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout=(timeout_ms + self._timeout_ms) / 1000)

    # ---- start

    async def _start(self) -> None:
        self._session_lock = asyncio.Lock()
        self._assignment_seen = asyncio.Event()
        self._group_conn = await self._connect()
        self._share_conn = await self._connect()
        if self.settings.group_configs:
            await self._set_group_configs()
        await self._resolve_topics()
        await self._heartbeat(join=True)
        self._tasks = [
            asyncio.create_task(self._heartbeat_loop(), name="share-heartbeat"),
            asyncio.create_task(self._renew_loop(), name="share-renew"),
        ]
        try:
            async with asyncio.timeout(ASSIGNMENT_WAIT_MS_MAX / 1000):
                await self._assignment_seen.wait()
        except TimeoutError:
            raise ShareMemberError(
                f"share group {self.settings.group_id!r} assigned no partition of "
                f"{list(self.settings.topics)} within {ASSIGNMENT_WAIT_MS_MAX} ms"
            ) from None

    async def _connect(self) -> KafkaConnection:
        errors = []
        for address in self.settings.bootstrap.split(","):
            host, _, port = address.strip().rpartition(":")
            try:
                return await KafkaConnection.open(
                    host or "localhost",
                    int(port),
                    client_id=self.settings.client_id,
                    timeout_s=self._timeout_ms / 1000,
                )
            except (OSError, ValueError, TimeoutError) as exc:
                errors.append(f"{address.strip()}: {exc or type(exc).__name__}")
        raise ShareMemberError(
            f"cannot reach a broker at bootstrap.servers={self.settings.bootstrap!r} "
            f"({'; '.join(errors)})"
        )

    async def _request(self, conn: KafkaConnection | None, body: Any) -> Any:
        assert conn is not None
        try:
            return await conn.request(body, timeout_s=self._timeout_ms / 1000)
        except (ConnectionError, OSError, TimeoutError) as exc:
            raise ShareMemberError(
                f"broker {self.settings.bootstrap} failed a {type(body).__name__}: {exc!r}"
            ) from exc

    async def _set_group_configs(self) -> None:
        request = group_configs_request(self.settings.group_id, self.settings.group_configs)
        (result,) = (await self._request(self._group_conn, request)).responses
        if result.error_code != ErrorCode.none:
            raise ShareMemberError(
                f"group settings {sorted(self.settings.group_configs)} refused for group "
                f"{self.settings.group_id!r}: {error_name(result.error_code)}: "
                f"{result.error_message}"
            )

    async def _resolve_topics(self) -> None:
        request = metadata_request(self.settings.topics)
        response = await self._request(self._group_conn, request)
        for topic in response.topics:
            if topic.error_code != ErrorCode.none:
                raise ShareMemberError(
                    f"topic {topic.name!r} (option topic/topics): {error_name(topic.error_code)}"
                )
            self._topic_ids[topic.name] = topic.topic_id
            self._topic_names[topic.topic_id] = topic.name
            self._partition_counts[topic.name] = len(topic.partitions)

    # ---- membership

    async def _heartbeat(self, *, join: bool = False) -> None:
        request = heartbeat_request(
            self.settings.group_id,
            self.member_id,
            0 if join else self._member_epoch,
            self.settings.topics if join else None,
        )
        response = await self._request(self._group_conn, request)
        error = ErrorCode(response.error_code)
        if error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id) and not join:
            log.warning(
                "share member %s of group %s was fenced (%s): rejoining",
                self.member_id,
                self.settings.group_id,
                error_name(error),
            )
            await self._heartbeat(join=True)
            return
        if error != ErrorCode.none:
            raise ShareMemberError(
                f"ShareGroupHeartbeat of group {self.settings.group_id!r} (option group.id) "
                f"failed: {error_name(error)}: {response.error_message}"
            )
        self._member_epoch = int(response.member_epoch)
        self._heartbeat_interval_ms = max(_ms(response.heartbeat_interval), 100)
        if response.assignment is not None:
            self._assigned = {
                (tp.topic_id, int(p))
                for tp in response.assignment.topic_partitions
                for p in tp.partitions
                if tp.topic_id in self._topic_names
            }
            if self._assigned and self._assignment_seen is not None:
                self._assignment_seen.set()

    async def _heartbeat_loop(self) -> None:
        while True:
            delay_ms = self._heartbeat_interval_ms
            if not self._assigned:  # a new member asks again soon for its first partitions
                delay_ms = min(delay_ms, ASSIGNMENT_POLL_MS)
            await asyncio.sleep(delay_ms / 1000)
            try:
                await self._heartbeat()
            except ShareMemberError as exc:
                log.warning("share member %s: %s; retrying", self.member_id, exc)
                await asyncio.sleep(REJOIN_BACKOFF_MS / 1000)
                old = self._group_conn
                if old is None or old.closed_by_peer:
                    with contextlib.suppress(ShareMemberError):
                        self._group_conn = await self._connect()
                    if old is not None and self._group_conn is not old:
                        await old.close()

    # ---- the share session

    def _fail(self, reason: str) -> ShareMemberError:
        self._failure = self._failure or reason
        return ShareMemberError(reason)

    def _check_session_reply(self, api: str, response: Any) -> None:
        if response.error_code != ErrorCode.none:
            raise self._fail(
                f"{api} of share group {self.settings.group_id!r} failed: "
                f"{error_name(response.error_code)}: {response.error_message}"
            )
        self._share_epoch = _next_epoch(self._share_epoch)
        lock_ms = _ms(response.acquisition_lock_timeout)
        if lock_ms > 0:
            self._lock_duration_ms = lock_ms

    async def _session_request(self, api: str, body: Any) -> Any:
        conn = self._share_conn
        assert conn is not None
        if conn.closed_by_peer:
            raise self._fail(
                f"the share session connection to {self.settings.bootstrap} was lost; the "
                "broker released the records this query held (they will be redelivered)"
            )
        try:
            response = await conn.request(body, timeout_s=self._timeout_ms / 1000)
        except (ConnectionError, OSError, TimeoutError) as exc:
            raise self._fail(f"{api} to {self.settings.bootstrap} failed: {exc!r}") from exc
        self._check_session_reply(api, response)
        return response

    async def _acquire(
        self, records_max: int, wait_ms: int, skip: Collection[TopicPartition]
    ) -> dict[TopicPartition, list[Span]]:
        assert self._session_lock is not None
        skipped = {(self._topic_ids[tp.topic], tp.partition) for tp in skip}
        async with self._session_lock:
            if not self._assigned:  # no partitions yet: wait as a fetch would
                await asyncio.sleep(wait_ms / 1000)
                return {}
            listed = sorted(self._assigned - skipped)
            forgotten = sorted(self._in_session - set(listed))
            if not listed:
                return {}
            request = share_fetch_request(
                self.settings.group_id,
                self.member_id,
                self._share_epoch,
                partitions=listed,
                forgotten=forgotten,
                wait_ms=wait_ms,
                records_max=records_max,
            )
            response = await self._session_request("ShareFetch", request)
            self._in_session = (self._in_session | set(listed)) - set(forgotten)
            acquired: dict[TopicPartition, list[Span]] = {}
            for topic in response.responses:
                name = self._topic_names.get(topic.topic_id)
                for p in topic.partitions:
                    if p.error_code != ErrorCode.none:
                        log.warning(
                            "ShareFetch of %s-%d for group %s: %s",
                            name,
                            p.partition_index,
                            self.settings.group_id,
                            error_name(p.error_code),
                        )
                    if name is None or not p.acquired_records:
                        continue
                    tp = TopicPartition(name, int(p.partition_index))
                    spans = [
                        Span(int(r.first_offset), int(r.last_offset), int(r.delivery_count))
                        for r in p.acquired_records
                    ]
                    acquired[tp] = spans
                    self._held[tp] = merge(split_by(self._held.get(tp, ()), spans)[1], spans)
            return acquired

    async def _acknowledge(
        self, spans: Spans, ack_type: int, *, renew: bool = False
    ) -> dict[TopicPartition, str]:
        assert self._session_lock is not None
        spans = normalized(spans)
        async with self._session_lock:
            request = share_acknowledge_request(
                self.settings.group_id,
                self.member_id,
                self._share_epoch,
                {
                    (self._topic_ids[tp.topic], tp.partition): [(s.first, s.last) for s in items]
                    for tp, items in spans.items()
                },
                ack_type,
                renew=renew,
            )
            response = await self._session_request("ShareAcknowledge", request)
        failed: dict[TopicPartition, str] = {}
        for topic in response.responses:
            name = self._topic_names.get(topic.topic_id, str(topic.topic_id))
            for p in topic.partitions:
                if p.error_code != ErrorCode.none:
                    failed[TopicPartition(name, int(p.partition_index))] = error_name(p.error_code)
        if not renew:
            self._drop_held(spans)
        return failed

    def _drop_held(self, spans: Spans) -> None:
        for tp, items in spans.items():
            kept = split_by(self._held.get(tp, ()), items)[1]
            if kept:
                self._held[tp] = kept
            else:
                self._held.pop(tp, None)

    async def _renew_loop(self) -> None:
        loop = asyncio.get_running_loop()
        last_s = loop.time()
        while True:
            await asyncio.sleep(RENEW_TICK_MS / 1000)
            interval_ms = self.settings.lock_renew_interval_ms or max(
                self._lock_duration_ms // 2, RENEW_TICK_MS
            )
            if (loop.time() - last_s) * 1000 < interval_ms:
                continue  # re-read each tick: the lock duration is learnt from responses
            last_s = loop.time()
            held = normalized(self._held)
            if not held or self._failure is not None:
                continue
            try:
                failed = await self._acknowledge(held, RENEW, renew=True)
            except ShareMemberError as exc:
                log.error("share member %s: RENEW failed: %s", self.member_id, exc)
                continue
            for tp, error in failed.items():
                log.warning(
                    "RENEW of %s-%d for group %s failed (%s): its records are lost",
                    tp.topic,
                    tp.partition,
                    self.settings.group_id,
                    error,
                )
                lost = self._held.pop(tp, [])
                self._lost[tp] = merge(split_by(self._lost.get(tp, ()), lost)[1], lost)

    async def _take_lost(self) -> dict[TopicPartition, tuple[Span, ...]]:
        lost = normalized(self._lost)
        self._lost.clear()
        return lost

    async def _end_offsets(self) -> dict[TopicPartition, int]:
        request = list_offsets_request(
            self._partition_counts, read_committed=self.settings.read_committed
        )
        response = await self._request(self._group_conn, request)
        ends: dict[TopicPartition, int] = {}
        for topic in response.topics:
            for p in topic.partitions:
                if p.error_code != ErrorCode.none:
                    raise ShareMemberError(
                        f"ListOffsets of {topic.name}-{p.partition_index}: "
                        f"{error_name(p.error_code)}"
                    )
                ends[TopicPartition(topic.name, int(p.partition_index))] = int(p.offset)
        return ends

    # ---- close

    async def _close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._share_epoch > 0 and self._failure is None and self._session_lock is not None:
            with contextlib.suppress(ShareMemberError):
                async with self._session_lock:
                    final = share_acknowledge_request(
                        self.settings.group_id, self.member_id, -1, {}, ACCEPT
                    )
                    await self._session_request("ShareAcknowledge", final)
        self._held.clear()
        if self._member_epoch > 0 and self._group_conn is not None:
            leave = heartbeat_request(self.settings.group_id, self.member_id, -1, None)
            with contextlib.suppress(ShareMemberError):
                await self._request(self._group_conn, leave)
        for conn in (self._share_conn, self._group_conn):
            if conn is not None:
                await conn.close()
