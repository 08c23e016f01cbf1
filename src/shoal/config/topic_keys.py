"""The topic config keys (resource type TOPIC), each declared once; most fall back to
a broker key (`synonym`) when a topic does not set them (`effective_topic_config`).

Shoal's own keys and the Kafka keys it acts on are `Key`s, read from a topic's
resolved config through them (`topic_value(configs, RETENTION_MS) -> int`); Kafka
4.2's other topic keys are rows of a table with the reason they have no effect here
(`NoEffect`; docs/reference/configs.md).
"""

from __future__ import annotations

from shoal.config import broker_keys
from shoal.config.checks import COMPRESSION_TYPES, check_gzip_level
from shoal.config.definition import LONG_MAX, ConfigType, Declarer, NoEffect, Scope

_declare = Declarer(Scope.TOPIC)
_DAY_MS = 24 * 3600 * 1000
_N = NoEffect
_INT, _LONG, _LIST = ConfigType.INT, ConfigType.LONG, ConfigType.LIST


# ---- topic keys (fall back to their broker synonym)
CLEANUP_POLICY = _declare.strings(
    "cleanup.policy",
    ["delete"],
    "delete (retention), compact (the latest record per key), or both.",
    choices=("compact", "delete"),
    synonym=broker_keys.LOG_CLEANUP_POLICY,
)
RETENTION_MS = _declare.long(
    "retention.ms",
    7 * _DAY_MS,
    "Time retention; -1 forever.",
    min=-1,
    synonym=broker_keys.LOG_RETENTION_MS,
)
RETENTION_BYTES = _declare.long(
    "retention.bytes",
    -1,
    "Size retention; -1 none.",
    min=-1,
    synonym=broker_keys.LOG_RETENTION_BYTES,
)
SEGMENT_BYTES = _declare.integer(
    "segment.bytes", 1_073_741_824, "Segment size.", min=14, synonym=broker_keys.LOG_SEGMENT_BYTES
)
SEGMENT_MS = _declare.long(
    "segment.ms", 7 * _DAY_MS, "Segment age before roll.", min=1, synonym=broker_keys.LOG_ROLL_MS
)
MAX_MESSAGE_BYTES = _declare.integer(
    "max.message.bytes", 1_048_588, "Largest batch.", min=0, synonym=broker_keys.MESSAGE_MAX_BYTES
)
FLUSH_MESSAGES = _declare.long(
    "flush.messages",
    LONG_MAX,
    "fsync after N records.",
    min=1,
    synonym=broker_keys.LOG_FLUSH_INTERVAL_MESSAGES,
)
FLUSH_MS = _declare.long(
    "flush.ms", LONG_MAX, "fsync after ms.", min=0, synonym=broker_keys.LOG_FLUSH_INTERVAL_MS
)
INDEX_INTERVAL_BYTES = _declare.integer(
    "index.interval.bytes",
    4096,
    "Index spacing.",
    min=0,
    synonym=broker_keys.LOG_INDEX_INTERVAL_BYTES,
)
SEGMENT_INDEX_BYTES = _declare.integer(
    "segment.index.bytes",
    10_485_760,
    "Index size.",
    min=4,
    synonym=broker_keys.LOG_INDEX_SIZE_MAX_BYTES,
)
ERRORS_DEADLETTERQUEUE_GROUP_ENABLE = _declare.boolean(
    "errors.deadletterqueue.group.enable",
    False,
    "KIP-1191: the topic may serve as a share group's dead-letter queue topic.",
)
MESSAGE_TIMESTAMP_TYPE = _declare.string(
    "message.timestamp.type",
    "CreateTime",
    "Timestamp type.",
    choices=("CreateTime", "LogAppendTime"),
    synonym=broker_keys.LOG_MESSAGE_TIMESTAMP_TYPE,
)
MIN_INSYNC_REPLICAS = _declare.integer(
    "min.insync.replicas", 1, "Single node.", min=1, max=1, synonym=broker_keys.MIN_INSYNC_REPLICAS
)
COMPRESSION_TYPE = _declare.string(
    "compression.type",
    "producer",
    "Codec of the stored batches: producer keeps each batch's own; another value "
    "recompresses batches of another codec (docs/design/compression.md).",
    choices=COMPRESSION_TYPES,
    synonym=broker_keys.COMPRESSION_TYPE,
    kafka_words=True,
)
COMPRESSION_GZIP_LEVEL = _declare.integer(
    "compression.gzip.level",
    -1,
    "Level of broker-side gzip compression.",
    check=check_gzip_level,
    synonym=broker_keys.COMPRESSION_GZIP_LEVEL,
    kafka_words=True,
)
COMPRESSION_LZ4_LEVEL = _declare.integer(
    "compression.lz4.level",
    9,
    "Level of broker-side lz4 compression.",
    min=1,
    max=17,
    synonym=broker_keys.COMPRESSION_LZ4_LEVEL,
    kafka_words=True,
)
COMPRESSION_ZSTD_LEVEL = _declare.integer(
    "compression.zstd.level",
    3,
    "Level of broker-side zstd compression.",
    min=-131072,
    max=22,
    synonym=broker_keys.COMPRESSION_ZSTD_LEVEL,
    kafka_words=True,
)


# ---- Kafka 4.2's topic keys beyond Shoal's own: the cleaner's, which Shoal acts on
# (server/services/log_cleaner.py), and rows of those that do nothing on one Shoal node, with
# (name, type, Kafka's default as Kafka shows it, broker synonym, why no effect); a row
# takes its synonym's bounds (broker_keys.KAFKA_MINIMUMS).
DELETE_RETENTION_MS = _declare.long(
    "delete.retention.ms",
    86_400_000,
    "How long tombstones survive their first cleaning.",
    min=0,
    synonym=broker_keys.LOG_CLEANER_DELETE_RETENTION_MS,
)
_declare.kafka_keys(
    [
        ("file.delete.delay.ms", _LONG, "60000", "log.segment.delete.delay.ms", _N.LOG_FILES),
        ("follower.replication.throttled.replicas", _LIST, "", None, _N.REPLICATION),
        ("leader.replication.throttled.replicas", _LIST, "", None, _N.REPLICATION),
        ("local.retention.bytes", _LONG, "-2", "log.local.retention.bytes", _N.TIERED),
        ("local.retention.ms", _LONG, "-2", "log.local.retention.ms", _N.TIERED),
    ],
    minimums=broker_keys.KAFKA_MINIMUMS,
)
MAX_COMPACTION_LAG_MS = _declare.long(
    "max.compaction.lag.ms",
    LONG_MAX,
    "Dirty records older than this are cleaned at once.",
    min=1,
    synonym=broker_keys.LOG_CLEANER_MAX_COMPACTION_LAG_MS,
)
_declare.kafka_keys(
    [
        (
            "max.decompressed.message.bytes",
            _INT,
            "2147483639",
            "max.decompressed.message.bytes",
            _N.UNCHECKED,
        ),
        (
            "message.timestamp.after.max.ms",
            _LONG,
            "3600000",
            "log.message.timestamp.after.max.ms",
            _N.UNCHECKED,
        ),
        (
            "message.timestamp.before.max.ms",
            _LONG,
            "9223372036854775807",
            "log.message.timestamp.before.max.ms",
            _N.UNCHECKED,
        ),
    ],
    minimums=broker_keys.KAFKA_MINIMUMS,
)
MIN_CLEANABLE_DIRTY_RATIO = _declare.double(
    "min.cleanable.dirty.ratio",
    0.5,
    "Dirty share of the log before the cleaner takes it.",
    min=0,
    max=1,
    synonym=broker_keys.LOG_CLEANER_MIN_CLEANABLE_RATIO,
)
MIN_COMPACTION_LAG_MS = _declare.long(
    "min.compaction.lag.ms",
    0,
    "Records younger than this are not cleaned yet.",
    min=0,
    synonym=broker_keys.LOG_CLEANER_MIN_COMPACTION_LAG_MS,
)
_declare.kafka_keys(
    [
        ("preallocate", ConfigType.BOOLEAN, "false", "log.preallocate", _N.LOG_FILES),
        ("remote.log.copy.disable", ConfigType.BOOLEAN, "false", None, _N.TIERED),
        ("remote.log.delete.on.disable", ConfigType.BOOLEAN, "false", None, _N.TIERED),
        ("remote.storage.enable", ConfigType.BOOLEAN, "false", None, _N.TIERED),
        ("segment.jitter.ms", _LONG, "0", "log.roll.jitter.ms", _N.LOG_FILES),
        (
            "unclean.leader.election.enable",
            ConfigType.BOOLEAN,
            "false",
            "unclean.leader.election.enable",
            _N.REPLICATION,
        ),
    ],
    minimums=broker_keys.KAFKA_MINIMUMS,
)

DEFINITIONS = _declare.definitions
"""Every topic key's definition, in declaration order."""
