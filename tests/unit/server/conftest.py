"""Fixtures of the server's unit tests: a `Broker` built without a socket."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.server.broker import Broker
from tests.support.unstarted_broker import unstarted_broker
from tests.unit.server.authz_harness import Harness


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A broker wired on a manual clock and never started (no listener, no timers),
    with one partition per internal topic; its logs are closed afterwards."""
    built = unstarted_broker(tmp_path)
    yield built
    built.logs.close()


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """The authorization tests' harness (tests/unit/server/authz_harness.py): a broker
    with topics "t" and "secret", its coordinators started, a grant-table authorizer."""
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }
    broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
    broker.group_service.start()
    broker.txn.start()
    broker.logs.create_topic("t", partitions=1, configs={})
    broker.logs.create_topic("secret", partitions=1, configs={})
    yield Harness(broker)
    asyncio.run(broker.txn.stop())
    broker.logs.close()
