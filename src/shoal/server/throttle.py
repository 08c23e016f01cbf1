"""Applying client quotas to a request (KIP-219), for Produce, Fetch and ShareFetch.

A handler asks `produce_throttle_ms` / `fetch_throttle_ms` after it knows the bytes:
a Produce request's record bytes count against `producer_byte_rate`, a Fetch or
ShareFetch response's record bytes against `consumer_byte_rate` (the core and the
store: security/quota.py, server/quota_store.py). The throttle time goes into the
response's `throttle_time_ms`, and the connection is muted for that long after the
response is written (`ConnectionInfo.mute_ms`, honoured by server/connection.py): the
broker reads nothing more from that client meanwhile, while KIP-219 clients also hold
back on their own.

As in Kafka, a throttled Fetch is answered empty and its bytes are taken back (the
client fetches them again after the throttle time), and a Fetch's MaxBytes is bounded
by the quota times the window (`fetch_bytes_max`) so it can fit; a throttled ShareFetch still
carries its records, since they are acquired for the member already.

The log: one INFO line when a client's requests of one kind start being throttled
and one when they stop, not one per request.
"""

from __future__ import annotations

import logging

from shoal.server.context import RequestContext
from shoal.server.quota_store import QuotaService

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
