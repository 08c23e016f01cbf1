"""Internal topics: created on first use with fixed settings, flagged internal,
exempt from the topic limits, and opened as they are afterwards."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.coordinator.internal_topics import ensure_internal_topic
from shoal.log.manager import LogManager
from tests.support.metadata import topic_catalog

Opener = Callable[..., LogManager]


@pytest.fixture
def open_manager(tmp_path: Path) -> Iterator[Opener]:
    opened: list[LogManager] = []

    def opener(**overrides: str) -> LogManager:
        manager = LogManager.open(
            data_dir=tmp_path / "data",
            broker_config=BrokerConfig.from_raw(overrides),
            clock=ManualClock(),
            catalog=topic_catalog(tmp_path / "data"),
        )
        opened.append(manager)
        return manager

    yield opener
    for manager in opened:
        manager.abandon()


def test_created_internal_with_fixed_settings(
    open_manager: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    logs = open_manager()
    with caplog.at_level(logging.INFO, logger="shoal.coordinator.internal_topics"):
        partitions = ensure_internal_topic(
            logs, name="__share_group_state", partitions=3, configs={"segment.bytes": 4096}
        )
    info = logs.topic("__share_group_state")
    assert info is not None and info.internal and info.partitions == 3
    assert info.configs == {
        "cleanup.policy": ["delete"],
        "retention.ms": -1,
        "retention.bytes": -1,
        "compression.type": "producer",
        "segment.bytes": 4096,
    }
    assert partitions == [logs.partition("__share_group_state", i) for i in range(3)]
    assert "created internal topic __share_group_state" in caplog.text


def test_reopened_not_recreated(open_manager: Opener, caplog: pytest.LogCaptureFixture) -> None:
    logs = open_manager()
    ensure_internal_topic(logs, name="__consumer_offsets", partitions=2, configs={})
    topic_id = logs.topic("__consumer_offsets").topic_id  # type: ignore[union-attr]
    logs.close()
    again = open_manager()
    with caplog.at_level(logging.INFO, logger="shoal.coordinator.internal_topics"):
        partitions = ensure_internal_topic(
            again, name="__consumer_offsets", partitions=5, configs={}
        )
    info = again.topic("__consumer_offsets")
    assert info is not None and info.topic_id == topic_id and info.internal
    # The existing partition count wins over a changed config (keys must not move).
    assert len(partitions) == 2 and info.partitions == 2
    assert "not the configured 5" in caplog.text
    assert "created internal topic" not in caplog.text


def test_internal_topics_ignore_the_topic_limits(open_manager: Opener) -> None:
    logs = open_manager(**{"shoal.max.topics": "1", "shoal.max.partitions": "1"})
    logs.create_topic("user-topic", partitions=1, configs={})
    partitions = ensure_internal_topic(logs, name="__consumer_offsets", partitions=4, configs={})
    assert len(partitions) == 4


def test_a_client_made_topic_of_that_name_is_used_with_a_warning(
    open_manager: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    logs = open_manager()
    logs.create_topic("__consumer_offsets", partitions=1, configs={})
    with caplog.at_level(logging.WARNING, logger="shoal.coordinator.internal_topics"):
        partitions = ensure_internal_topic(
            logs, name="__consumer_offsets", partitions=1, configs={}
        )
    assert len(partitions) == 1
    assert "is not flagged internal" in caplog.text
