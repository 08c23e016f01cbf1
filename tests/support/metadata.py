"""A metadata log in a test's directory (server/metadata_log.py), its fsyncs in place."""

from __future__ import annotations

from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.server.metadata_log import MetadataLog
from shoal.server.metadata_migration import open_metadata_log

_OPEN: dict[Path, MetadataLog] = {}


def open_metadata(data_dir: Path, **raw: str) -> MetadataLog:
    """Open (replaying and migrating) the metadata log of `data_dir`; close it after."""
    config = BrokerConfig.from_raw({"log.dirs": str(data_dir), **raw})
    return open_metadata_log(config, ManualClock())


def metadata_at(data_dir: Path) -> MetadataLog:
    """The metadata log of `data_dir`, opened again: the one an earlier call opened
    there is closed first, so each call is a broker restart."""
    previous = _OPEN.pop(data_dir, None)
    if previous is not None:
        previous.close()
    metadata = _OPEN[data_dir] = open_metadata(data_dir)
    return metadata
