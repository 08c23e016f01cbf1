"""A `Broker` wired on a manual clock and never started: no listener, no timers, one
partition per internal topic. Unit tests read its wiring and its metrics registry."""

from __future__ import annotations

from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.server.broker import Broker


def unstarted_broker(data_dir: Path) -> Broker:
    """The broker on `data_dir`; the caller closes its logs (`broker.logs.close()`)."""
    raw = {
        "log.dirs": str(data_dir),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }
    return Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
