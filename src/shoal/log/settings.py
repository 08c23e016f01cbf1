"""The settings a partition log obeys, read once from a topic's effective config.

Owns: the translation from config keys (`segment.bytes`, `retention.ms`, ...) to one
typed, immutable value the log consults on its hot paths. A key missing from the
mapping takes its default from `shoal.config`, so tests may pass partial dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from shoal.config import Key, broker_keys, topic_value
from shoal.config import topic_keys as tk
from shoal.log.index import OffsetIndex
from shoal.protocol.compression import CODEC_NAMES, Codec

PRODUCER_ID_EXPIRATION = broker_keys.PRODUCER_ID_EXPIRATION_MS
"""A broker key the log also reads; LogManager adds it to the topic config it passes."""

T = TypeVar("T")


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
    saw them (their batch's delete horizon, docs/design/compaction.md)."""
    compression: Codec | None = None
    """The codec compression.type asks batches to be stored with; None: `producer`
    (each batch keeps its own)."""
    compression_level: int | None = None
    """That codec's level (compression.<codec>.level; None for snappy and none)."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> LogConfig:
        def value(key: Key[T]) -> T:
            return topic_value(config, key)

        policy = value(tk.CLEANUP_POLICY)
        return cls(
            segment_bytes=value(tk.SEGMENT_BYTES),
            segment_ms=value(tk.SEGMENT_MS),
            index_entries_max=max(1, value(tk.SEGMENT_INDEX_BYTES) // OffsetIndex.ENTRY_SIZE),
            index_interval_bytes=value(tk.INDEX_INTERVAL_BYTES),
            retention_ms=value(tk.RETENTION_MS),
            retention_bytes=value(tk.RETENTION_BYTES),
            flush_messages=value(tk.FLUSH_MESSAGES),
            flush_ms=value(tk.FLUSH_MS),
            log_append_time=value(tk.MESSAGE_TIMESTAMP_TYPE) == "LogAppendTime",
            producer_id_expiration_ms=value(PRODUCER_ID_EXPIRATION),
            delete_policy="delete" in policy,
            compact_policy="compact" in policy,
            min_cleanable_dirty_ratio=float(value(tk.MIN_CLEANABLE_DIRTY_RATIO)),
            min_compaction_lag_ms=value(tk.MIN_COMPACTION_LAG_MS),
            max_compaction_lag_ms=value(tk.MAX_COMPACTION_LAG_MS),
            delete_retention_ms=value(tk.DELETE_RETENTION_MS),
            **_compression(config),
        )


_LEVEL_KEYS = {
    Codec.GZIP: tk.COMPRESSION_GZIP_LEVEL,
    Codec.LZ4: tk.COMPRESSION_LZ4_LEVEL,
    Codec.ZSTD: tk.COMPRESSION_ZSTD_LEVEL,
}


def _compression(config: Mapping[str, Any]) -> dict[str, Any]:
    """compression.type as the codec to store (None: producer) and that codec's level."""
    codec = CODEC_NAMES.get(topic_value(config, tk.COMPRESSION_TYPE))
    level_key = _LEVEL_KEYS.get(codec) if codec is not None else None
    level = topic_value(config, level_key) if level_key is not None else None
    return {"compression": codec, "compression_level": level}
