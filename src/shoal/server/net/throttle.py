"""Applying client quotas to a request (KIP-219): byte rates for Produce, Fetch and
ShareFetch, request time (KIP-124) for every request.

A handler asks `produce_throttle_ms` / `fetch_throttle_ms` after it knows the bytes:
a Produce request's record bytes count against `producer_byte_rate`, a Fetch or
ShareFetch response's record bytes against `consumer_byte_rate` (the core and the
store: security/quota.py, server/metadata/quota_store.py). The throttle time goes into the
response's `throttle_time_ms`, and the connection is muted for that long after the
response is written (`ConnectionInfo.mute_ms`, honoured by server/net/connection.py): the
broker reads nothing more from that client meanwhile, while KIP-219 clients also hold
back on their own.

As in Kafka, a throttled Fetch is answered empty and its bytes are taken back (the
client fetches them again after the throttle time), and a Fetch's MaxBytes is bounded
by the quota times the window (`fetch_bytes_max`) so it can fit; a throttled ShareFetch still
carries its records, since they are acquired for the member already.

Request time (`request_percentage`). Kafka counts the time a request-handler thread
spends on a request; Shoal has one event loop, so a request's handler time is the time
the loop spends running its handler's code: `LoopTimed` wraps the handler's coroutine
and adds up the steps it runs, leaving out the time it waits (a long-polling fetch, a
state write, an fsync) and the decoding and encoding around it. Recorded as
percent-seconds, so `request_percentage=100` is the whole loop. Only when some entity
sets it is anything measured. A throttled request's response carries the larger of its
own throttle time and this one, if its schema has `throttle_time_ms`; either way the
connection is muted for it (KIP-219).

The log: one INFO line when a client's requests of one kind start being throttled
and one when they stop, not one per request.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Awaitable, Generator
from typing import Any

from shoal.clock import measure_ns
from shoal.server.context import RequestContext
from shoal.server.metadata.quota_store import QuotaService

log = logging.getLogger(__name__)


def produce_throttle_ms(ctx: RequestContext, size: int) -> int:
    """Record `size` produced bytes; the throttle time (also set as the mute)."""
    quotas = ctx.services.quotas
    if quotas is None or not quotas.quotas:
        return 0
    user, client_id = _names(ctx)
    now_ms = ctx.services.clock.monotonic_ms()
    throttle_ms = quotas.produce_throttle_ms(
        user=user, client_id=client_id, size=size, now_ms=now_ms
    )
    return _mute(ctx, quotas, "produce", throttle_ms)


def fetch_throttle_ms(ctx: RequestContext, size: int, *, unrecord_when_throttled: bool) -> int:
    """Record `size` fetched bytes; the throttle time (also set as the mute). With
    `unrecord_when_throttled` the bytes are taken back when the answer is throttled
    (the caller then answers without records)."""
    quotas = ctx.services.quotas
    if quotas is None or not quotas.quotas:
        return 0
    user, client_id = _names(ctx)
    now_ms = ctx.services.clock.monotonic_ms()
    throttle_ms = quotas.fetch_throttle_ms(user=user, client_id=client_id, size=size, now_ms=now_ms)
    if throttle_ms > 0 and unrecord_when_throttled:
        quotas.fetch_unrecord(user=user, client_id=client_id, size=size, now_ms=now_ms)
    return _mute(ctx, quotas, "fetch", throttle_ms)


def fetch_bytes_max(ctx: RequestContext, max_bytes: int) -> int:
    """`max_bytes` bounded by what the client's consumer quota allows in one window."""
    quotas = ctx.services.quotas
    if quotas is None:
        return max_bytes
    user, client_id = _names(ctx)
    bound = quotas.fetch_bytes_max(user=user, client_id=client_id)
    return max_bytes if bound is None else min(max_bytes, bound)


class LoopTimed:
    """Await a handler's coroutine and add up, in `ns`, the time its steps run."""

    __slots__ = ("_coro", "ns")

    def __init__(self, coro: Awaitable[Any]) -> None:
        self._coro = coro
        self.ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self._coro.__await__()
        value: Any = None
        thrown: BaseException | None = None
        while True:
            started = measure_ns()
            try:
                yielded = steps.send(value) if thrown is None else steps.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self.ns += measure_ns() - started
            try:
                value, thrown = (yield yielded), None
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # noqa: BLE001  (handed on, not swallowed)
                # the loop throws a cancellation, or a failed future's exception, into
                # the outermost coroutine: it goes on to the handler awaiting it
                value, thrown = None, exc


def request_throttled(ctx: RequestContext, response: Any, handler_ns: int) -> Any:
    """Record `handler_ns` against the client's `request_percentage`; the response with
    the throttle time set (if its schema has one and it is larger), muting the
    connection for it."""
    quotas = ctx.services.quotas
    if quotas is None or not quotas.request_quotas:
        return response
    user, client_id = _names(ctx)
    now_ms = ctx.services.clock.monotonic_ms()
    throttle_ms = quotas.request_throttle_ms(
        user=user, client_id=client_id, handler_ns=handler_ns, now_ms=now_ms
    )
    _mute(ctx, quotas, "requests", throttle_ms)
    if throttle_ms <= 0 or "throttle_time" not in _fields(response):
        return response
    throttle = datetime.timedelta(milliseconds=throttle_ms)
    if response.throttle_time >= throttle:
        return response
    return dataclasses.replace(response, throttle_time=throttle)


_FIELDS: dict[type, frozenset[str]] = {}


def _fields(response: Any) -> frozenset[str]:
    names = _FIELDS.get(type(response))
    if names is None:
        names = _FIELDS[type(response)] = frozenset(f.name for f in dataclasses.fields(response))
    return names


def _names(ctx: RequestContext) -> tuple[str, str]:
    return ctx.connection.principal.name, ctx.client_id or ""


def _mute(ctx: RequestContext, quotas: QuotaService, kind: str, throttle_ms: int) -> int:
    user, client_id = _names(ctx)
    if throttle_ms > 0:
        ctx.connection.mute_ms = max(ctx.connection.mute_ms, throttle_ms)
        if quotas.mark_throttled((kind, user, client_id), throttled=True):
            log.info(
                "throttling %s of client %r (user %r, connection %d) for %d ms: over its quota",
                kind,
                client_id,
                user,
                ctx.connection.connection_id,
                throttle_ms,
            )
    elif quotas.mark_throttled((kind, user, client_id), throttled=False):
        log.info("%s of client %r (user %r) is within its quota again", kind, client_id, user)
    return throttle_ms
