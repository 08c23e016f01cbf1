"""The settings a partition log obeys, read once from a topic's effective config.

Owns: the translation from config keys (`segment.bytes`, `retention.ms`, ...) to one
typed, immutable value the log consults on its hot paths. A key missing from the
mapping takes its default from `shoal.config`, so tests may pass partial dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shoal.config import config_float, config_int, config_list, config_str
from shoal.log.index import OffsetIndex
from shoal.protocol.compression import CODEC_NAMES, Codec

PRODUCER_ID_EXPIRATION_KEY = "producer.id.expiration.ms"
"""A broker key the log also reads; LogManager adds it to the topic config it passes."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int
    segment_ms: int
    index_entries_max: int
    """segment.index.bytes in entries: a segment rolls when its offset index is full."""
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    flush_messages: int
    flush_ms: int
    log_append_time: bool
    producer_id_expiration_ms: int
    delete_policy: bool = True
    """cleanup.policy holds delete: retention.ms and retention.bytes apply."""
    compact_policy: bool = False
    """cleanup.policy holds compact: the cleaner keeps the latest record per key."""
    min_cleanable_dirty_ratio: float = 0.5
    """The cleaner takes the log when dirty bytes / cleanable bytes exceed this."""
    min_compaction_lag_ms: int = 0
    """A segment whose largest timestamp is younger than this is not cleaned yet."""
    max_compaction_lag_ms: int = 2**63 - 1
    """A dirty segment whose first batch is older than this is cleaned whatever the ratio."""
    delete_retention_ms: int = 86_400_000
    """How long tombstones and transaction markers survive the cleaning that first
    saw them (their batch's delete horizon, docs/compaction.md)."""
    compression: Codec | None = None
    """The codec compression.type asks batches to be stored with; None: `producer`
    (each batch keeps its own)."""
    compression_level: int | None = None
    """That codec's level (compression.<codec>.level; None for snappy and none)."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> LogConfig:
        return cls(
            segment_bytes=config_int(config, "segment.bytes"),
            segment_ms=config_int(config, "segment.ms"),
            index_entries_max=max(
                1, config_int(config, "segment.index.bytes") // OffsetIndex.ENTRY_SIZE
            ),
            index_interval_bytes=config_int(config, "index.interval.bytes"),
            retention_ms=config_int(config, "retention.ms"),
            retention_bytes=config_int(config, "retention.bytes"),
            flush_messages=config_int(config, "flush.messages"),
            flush_ms=config_int(config, "flush.ms"),
            log_append_time=config_str(config, "message.timestamp.type") == "LogAppendTime",
            producer_id_expiration_ms=config_int(config, PRODUCER_ID_EXPIRATION_KEY),
            delete_policy="delete" in config_list(config, "cleanup.policy"),
            compact_policy="compact" in config_list(config, "cleanup.policy"),
            min_cleanable_dirty_ratio=config_float(config, "min.cleanable.dirty.ratio"),
            min_compaction_lag_ms=config_int(config, "min.compaction.lag.ms"),
            max_compaction_lag_ms=config_int(config, "max.compaction.lag.ms"),
            delete_retention_ms=config_int(config, "delete.retention.ms"),
            **_compression(config),
        )


_LEVEL_KEYS = {
    Codec.GZIP: "compression.gzip.level",
    Codec.LZ4: "compression.lz4.level",
    Codec.ZSTD: "compression.zstd.level",
}


def _compression(config: Mapping[str, Any]) -> dict[str, Any]:
    """compression.type as the codec to store (None: producer) and that codec's level."""
    codec = CODEC_NAMES.get(config_str(config, "compression.type"))
    level_key = _LEVEL_KEYS.get(codec) if codec is not None else None
    level = config_int(config, level_key) if level_key is not None else None
    return {"compression": codec, "compression_level": level}
