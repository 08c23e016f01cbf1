"""Fixtures of the server's unit tests: a `Broker` built without a socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.server.broker import Broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A broker wired on a manual clock and never started (no listener, no timers),
    with one partition per internal topic; its logs are closed afterwards."""
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }
    built = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
    yield built
    built.logs.close()
