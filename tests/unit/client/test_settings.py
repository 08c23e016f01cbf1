"""Deadline and backoff arithmetic on a manual clock."""

from __future__ import annotations

import pytest

from shoal.client.settings import (
    RETRY_BACKOFF_MAX_MS_DEFAULT,
    RETRY_BACKOFF_MS_DEFAULT,
    Backoff,
    ClientSettings,
    Deadline,
    settings_with,
)
from shoal.clock import ManualClock


def test_backoff_doubles_up_to_the_maximum() -> None:
    backoff = Backoff(initial_ms=RETRY_BACKOFF_MS_DEFAULT, max_ms=RETRY_BACKOFF_MAX_MS_DEFAULT)
    assert [backoff.next_ms() for _ in range(7)] == [100, 200, 400, 800, 1000, 1000, 1000]


def test_zero_backoff_still_grows() -> None:
    backoff = Backoff(initial_ms=0, max_ms=5)
    assert [backoff.next_ms() for _ in range(5)] == [0, 1, 2, 4, 5]


def test_deadline_counts_down_on_the_clock() -> None:
    clock = ManualClock(start_ms=1_000)
    deadline = Deadline(clock, 500)
    assert deadline.remaining_ms == 500 and not deadline.expired
    clock.advance(300)
    assert deadline.cap(1_000) == 200 and deadline.cap(50) == 50
    clock.advance(300)
    assert deadline.remaining_ms == 0 and deadline.expired


def test_settings_with_applies_the_common_keywords() -> None:
    s = settings_with(ClientSettings(retry_backoff_ms=5), client_id="x", api_timeout_ms=7)
    assert (s.client_id, s.api_timeout_ms, s.retry_backoff_ms) == ("x", 7, 5)
    assert s.request_timeout_ms == ClientSettings().request_timeout_ms


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(AssertionError):
        ClientSettings(retry_backoff_ms=2_000, retry_backoff_max_ms=1_000)
