"""Connection deadlines: which open connections must close, and why.

Three deadlines, each a named setting, decided here from a connection's
`ConnectionInfo` timestamps (monotonic ms, kept by the connection loop) and checked by
the broker's sweep (`sweep_interval_ms` apart):

- idle: no request in hand and nothing written for `connections.max.idle.ms`
  (Kafka's broker default, 600000 ms);
- never reads: a written response has waited for the client to take it for
  `connections.max.idle.ms` (the connection reads no further request meanwhile:
  `limits.CONNECTION_WRITE_BUFFER_HIGH_BYTES`);
- slowloris: a request frame whose size arrived is not whole after
  `shoal.request.read.timeout.ms`.

A connection whose request is being handled (a parked Fetch, a state write) is never
closed here: its own wait bounds apply.
"""

from __future__ import annotations

import logging

from shoal import limits
from shoal.server.connection_info import ConnectionInfo


def expiry_reason(
    info: ConnectionInfo, *, now_ms: int, idle_ms: int, request_read_ms: int
) -> str | None:
    """Why `info` must close now, or None if it may stay open."""
    if info.frame_started_ms is not None:
        waited_ms = now_ms - info.frame_started_ms
        if waited_ms >= request_read_ms:
            return (
                f"request frame not complete {waited_ms} ms after its size arrived "
                f"(shoal.request.read.timeout.ms={request_read_ms})"
            )
        return None
    if info.write_started_ms is not None:
        waited_ms = now_ms - info.write_started_ms
        if waited_ms >= idle_ms:
            return (
                f"client has not read its response for {waited_ms} ms "
                f"(connections.max.idle.ms={idle_ms})"
            )
        return None
    if info.busy:
        return None
    idle_for_ms = now_ms - info.last_active_ms
    if idle_for_ms >= idle_ms:
        return f"idle for {idle_for_ms} ms (connections.max.idle.ms={idle_ms})"
    return None


def sweep_interval_ms(*, idle_ms: int, request_read_ms: int) -> int:
    """How often to check: a tenth of the shortest deadline, within 10 ms and
    `limits.CONNECTION_SWEEP_INTERVAL_MS_MAX`."""
    shortest_ms = min(idle_ms, request_read_ms)
    return max(10, min(limits.CONNECTION_SWEEP_INTERVAL_MS_MAX, shortest_ms // 10))


def log_level(info: ConnectionInfo) -> int:
    """INFO for a plain idle close (routine: clients reconnect), WARNING for a client
    caught misbehaving (a partial frame, responses left unread)."""
    if info.frame_started_ms is None and info.write_started_ms is None:
        return logging.INFO
    return logging.WARNING
