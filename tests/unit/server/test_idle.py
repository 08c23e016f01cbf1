"""Connection deadlines (server/net/idle.py): each closes at its limit, not before, and a
connection whose request is being handled is never closed by them."""

from __future__ import annotations

import logging

from shoal import limits
from shoal.server.connection_info import ConnectionInfo
from shoal.server.net.idle import expiry_reason, log_level, sweep_interval_ms

IDLE_MS = 1_000
READ_MS = 300


def _reason(info: ConnectionInfo, now_ms: int) -> str | None:
    return expiry_reason(info, now_ms=now_ms, idle_ms=IDLE_MS, request_read_ms=READ_MS)


def test_idle_connection_closes_at_connections_max_idle_ms() -> None:
    info = ConnectionInfo(1, "127.0.0.1", 1, last_active_ms=5_000)
    assert _reason(info, 5_999) is None
    reason = _reason(info, 6_000)
    assert reason == "idle for 1000 ms (connections.max.idle.ms=1000)"


def test_partial_frame_closes_at_request_read_timeout_even_when_recently_active() -> None:
    info = ConnectionInfo(1, "h", 1, busy=True, last_active_ms=5_000, frame_started_ms=5_100)
    assert _reason(info, 5_399) is None
    reason = _reason(info, 5_400)
    assert reason is not None and "shoal.request.read.timeout.ms=300" in reason


def test_unread_response_closes_at_connections_max_idle_ms() -> None:
    info = ConnectionInfo(1, "h", 1, busy=True, last_active_ms=0, write_started_ms=2_000)
    assert _reason(info, 2_999) is None
    reason = _reason(info, 3_000)
    assert reason == "client has not read its response for 1000 ms (connections.max.idle.ms=1000)"


def test_request_in_hand_is_never_closed() -> None:
    info = ConnectionInfo(1, "h", 1, busy=True, last_active_ms=0)
    assert _reason(info, 10_000_000) is None


def test_sweep_interval_is_a_tenth_of_the_shortest_deadline_within_bounds() -> None:
    assert sweep_interval_ms(idle_ms=600_000, request_read_ms=30_000) == (
        limits.CONNECTION_SWEEP_INTERVAL_MS_MAX
    )
    assert sweep_interval_ms(idle_ms=2_000, request_read_ms=1_500) == 150
    assert sweep_interval_ms(idle_ms=5, request_read_ms=5) == 10


def test_an_idle_close_is_routine_a_misbehaving_client_is_a_warning() -> None:
    assert log_level(ConnectionInfo(1, "h", 1)) == logging.INFO
    assert log_level(ConnectionInfo(1, "h", 1, frame_started_ms=0)) == logging.WARNING
    assert log_level(ConnectionInfo(1, "h", 1, write_started_ms=0)) == logging.WARNING
