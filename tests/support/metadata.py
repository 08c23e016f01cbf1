"""A metadata log in a test's directory (server/metadata/metadata_log.py), its fsyncs in place."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.coordinator.log_sink import read_log
from shoal.metadata import CODEC, MetadataShard, TopicImage
from shoal.server.metadata.metadata_log import MetadataLog
from shoal.server.metadata.migration import open_metadata_log
from shoal.server.metadata.topic_catalog import MetadataTopicCatalog

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


def topic_catalog(metadata_dir: Path) -> MetadataTopicCatalog:
    """The broker's topic catalog over the metadata log of `metadata_dir`, opened
    again (`metadata_at`): a log manager given it keeps its topics across reopens.
    (The broker's metadata log is in its data directory; a test of the log manager
    may keep it beside, so that the data directory holds partitions only.)"""
    return MetadataTopicCatalog(metadata_at(metadata_dir))


def durable_topics(metadata: MetadataLog) -> Mapping[str, TopicImage]:
    """The topics the metadata log holds on disk, replayed into a fresh shard (what a
    restart would see, whether or not the live shard has adopted them yet)."""
    shard = MetadataShard()
    for offset, record in read_log(metadata.partition, CODEC.decode, buffer_bytes=1 << 20):
        shard.replay(record, offset)
    return shard.image.topics
