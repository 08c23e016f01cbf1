"""Opening the data directory logs `recovered N of M partitions` (progress of long
work in the log, as shoal/progress.py reports it)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.manager import LogManager
from tests.support.metadata import topic_catalog


def _open(data_dir: Path) -> LogManager:
    config = BrokerConfig.from_raw({"log.dirs": str(data_dir)})
    return LogManager.open(
        data_dir=data_dir,
        broker_config=config,
        clock=ManualClock(),
        catalog=topic_catalog(data_dir),
    )


def test_recovery_logs_progress_per_tenth(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = _open(tmp_path)
    first.create_topic("a", partitions=15, configs={})
    first.create_topic("b", partitions=5, configs={})
    first.close()
    caplog.set_level(logging.INFO, logger="shoal.log.manager")
    _open(tmp_path).close()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("recovered")]
    assert lines == [f"recovered {n} of 20 partitions" for n in range(2, 21, 2)]


def test_an_empty_data_directory_logs_no_progress(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="shoal.log.manager")
    _open(tmp_path).close()
    assert not [r for r in caplog.records if r.getMessage().startswith("recovered")]
