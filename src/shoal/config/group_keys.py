"""The group config keys (resource type GROUP: share, consumer and streams groups),
each declared once; a group that does not set one falls back to its broker key
(`synonym`), clamped into the broker's range for it (`SHARE_RANGES`,
`CONSUMER_RANGES`; group/configs.py applies them).

Shoal's own keys are `Key`s; Kafka 4.2's streams group keys, which do nothing here
(no Kafka Streams groups), are rows of a table (`NoEffect`; docs/reference/configs.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.config import broker_keys
from shoal.config.checks import check_by_duration, check_finite
from shoal.config.definition import ConfigType, Declarer, Key, NoEffect, Scope

_declare = Declarer(Scope.GROUP)
_DAY_MS = 24 * 3600 * 1000
_N = NoEffect
_INT = ConfigType.INT

# ---- consumer group keys (resource type GROUP, KIP-848 groups); bounds are checked
# against the broker's group.consumer.min/max.* keys (group/configs.py)
CONSUMER_SESSION_TIMEOUT_MS = _declare.optional_integer(
    "consumer.session.timeout.ms",
    None,
    "A consumer group member's session timeout (default: group.consumer.session.timeout.ms).",
    min=1,
    synonym=broker_keys.GROUP_CONSUMER_SESSION_TIMEOUT_MS,
)
CONSUMER_HEARTBEAT_INTERVAL_MS = _declare.optional_integer(
    "consumer.heartbeat.interval.ms",
    None,
    "A consumer group member's heartbeat interval (default: group.consumer.heartbeat.interval.ms).",
    min=1,
    synonym=broker_keys.GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS,
)

# ---- share group keys (resource type GROUP); bounds are checked against the broker
SHARE_SESSION_TIMEOUT_MS = _declare.optional_integer(
    "share.session.timeout.ms",
    None,
    "Member expiry.",
    min=1,
    synonym=broker_keys.GROUP_SHARE_SESSION_TIMEOUT_MS,
)
SHARE_HEARTBEAT_INTERVAL_MS = _declare.optional_integer(
    "share.heartbeat.interval.ms",
    None,
    "Heartbeat.",
    min=1,
    synonym=broker_keys.GROUP_SHARE_HEARTBEAT_INTERVAL_MS,
)
SHARE_RECORD_LOCK_DURATION_MS = _declare.optional_integer(
    "share.record.lock.duration.ms",
    None,
    "Lock.",
    min=1000,
    synonym=broker_keys.GROUP_SHARE_RECORD_LOCK_DURATION_MS,
)
SHARE_AUTO_OFFSET_RESET = _declare.string(
    "share.auto.offset.reset", "latest", "Start of a new share-partition.", check=check_by_duration
)
SHARE_ISOLATION_LEVEL = _declare.string(
    "share.isolation.level",
    "read_uncommitted",
    "Isolation.",
    choices=("read_committed", "read_uncommitted"),
)
SHARE_DELIVERY_COUNT_LIMIT = _declare.optional_integer(
    "share.delivery.count.limit",
    None,
    "Deliveries.",
    min=2,
    synonym=broker_keys.GROUP_SHARE_DELIVERY_COUNT_LIMIT,
)
SHARE_PARTITION_MAX_RECORD_LOCKS = _declare.optional_integer(
    "share.partition.max.record.locks",
    None,
    "Window.",
    min=100,
    synonym=broker_keys.GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS,
)
SHARE_RENEW_ACKNOWLEDGE_ENABLE = _declare.boolean(
    "share.renew.acknowledge.enable", True, "Allow RENEW."
)
ERRORS_DEADLETTERQUEUE_TOPIC_NAME = _declare.string(
    "errors.deadletterqueue.topic.name",
    "",
    "KIP-1191: the share group's dead-letter queue topic (empty: none).",
)
ERRORS_DEADLETTERQUEUE_COPY_RECORD_ENABLE = _declare.boolean(
    "errors.deadletterqueue.copy.record.enable",
    False,
    "KIP-1191: copy key, value and headers onto the DLQ record (else context headers only).",
)

# ---- Shoal extensions to share groups (not Kafka keys)
SHOAL_SHARE_REDELIVERY_BACKOFF_MS = _declare.integer(
    "shoal.share.redelivery.backoff.ms",
    0,
    "Shoal extension (not a Kafka config): delay before a RELEASEd record, or one "
    "whose acquisition lock expired, can be acquired again, after its first "
    "delivery; grows by shoal.share.redelivery.backoff.multiplier per further "
    "delivery, up to shoal.share.redelivery.backoff.max.ms. 0 (the default) "
    "redelivers at once, as Kafka does. Kept in memory only: a broker restart makes "
    "delayed records available at once.",
    min=0,
    max=_DAY_MS,
)
SHOAL_SHARE_REDELIVERY_BACKOFF_MULTIPLIER = _declare.double(
    "shoal.share.redelivery.backoff.multiplier",
    2.0,
    "Shoal extension (not a Kafka config): factor the redelivery backoff grows by "
    "with each delivery (delay = backoff.ms * multiplier^(delivery count - 1)); 1.0 "
    "keeps it constant.",
    min=1.0,
    max=1000.0,
    check=check_finite,
)
SHOAL_SHARE_REDELIVERY_BACKOFF_MAX_MS = _declare.integer(
    "shoal.share.redelivery.backoff.max.ms",
    60_000,
    "Shoal extension (not a Kafka config): the longest redelivery backoff; must be "
    "at least shoal.share.redelivery.backoff.ms when both are set.",
    min=0,
    max=_DAY_MS,
)
SHOAL_SHARE_DELIVERY_PAUSED = _declare.boolean(
    "shoal.share.delivery.paused",
    False,
    "Shoal extension (not a Kafka config): true stops the group's acquisitions "
    "(ShareFetch answers without records; acknowledgements work; held locks run "
    "out normally) until it is false or deleted. Set by `shoal share-groups "
    "--pause` / `--resume`.",
)

SHOAL_SHARE_DELIVERY_ORDER = _declare.string(
    "shoal.share.delivery.order",
    "none",
    "Shoal extension (not a Kafka config): key = per-key ordering. While a record with "
    "a key is in flight (acquired, or released and waiting to be redelivered), no "
    "later record with that key is handed out to any member, and a key's records go "
    "out in offset order; consecutive records of one key may go to one member in one "
    "acquisition. Records with a null key are unordered. none (the default) is "
    "Kafka's behaviour.",
    choices=("none", "key"),
)
SHOAL_SHARE_DELIVERY_DELAY_MAX_MS = _declare.integer(
    "shoal.share.delivery.delay.max.ms",
    0,
    "Shoal extension (not a Kafka config): scheduled delivery. A record whose header "
    "shoal.deliver.at holds an epoch time in milliseconds (decimal ASCII) is not "
    "handed out before then, nor later than this long after its timestamp. 0 (the "
    "default) turns scheduled delivery off: the header is not read and records go out "
    "at once, as in Kafka. A malformed header delivers the record at once (counted in "
    "a metric).",
    min=0,
    max=7 * _DAY_MS,
)

# ---- Kafka 4.2's streams group keys: (name, type, Kafka's default, broker synonym,
# why no effect), with the lower bounds Kafka 4.2 checks on them
_declare.kafka_keys(
    [
        (
            "streams.heartbeat.interval.ms",
            _INT,
            "5000",
            "group.streams.heartbeat.interval.ms",
            _N.STREAMS,
        ),
        (
            "streams.initial.rebalance.delay.ms",
            _INT,
            "3000",
            "group.streams.initial.rebalance.delay.ms",
            _N.STREAMS,
        ),
        (
            "streams.num.standby.replicas",
            _INT,
            "0",
            "group.streams.num.standby.replicas",
            _N.STREAMS,
        ),
        (
            "streams.session.timeout.ms",
            _INT,
            "45000",
            "group.streams.session.timeout.ms",
            _N.STREAMS,
        ),
    ],
    minimums={
        "streams.heartbeat.interval.ms": 1,
        "streams.session.timeout.ms": 1,
        "streams.initial.rebalance.delay.ms": 0,
        "streams.num.standby.replicas": 0,
    },
)

DEFINITIONS = _declare.definitions
"""Every group key's definition, in declaration order."""


@dataclass(frozen=True, slots=True)
class BrokerRange:
    """A group key's range on this broker: the broker keys holding its minimum and
    maximum. A group's value outside it is refused when set and clamped when read."""

    key: Key[int | None]
    low: Key[int]
    high: Key[int]


_b = broker_keys
SHARE_RANGES = (
    BrokerRange(
        SHARE_SESSION_TIMEOUT_MS,
        _b.GROUP_SHARE_MIN_SESSION_TIMEOUT_MS,
        _b.GROUP_SHARE_MAX_SESSION_TIMEOUT_MS,
    ),
    BrokerRange(
        SHARE_HEARTBEAT_INTERVAL_MS,
        _b.GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS,
        _b.GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS,
    ),
    BrokerRange(
        SHARE_RECORD_LOCK_DURATION_MS,
        _b.GROUP_SHARE_MIN_RECORD_LOCK_DURATION_MS,
        _b.GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS,
    ),
    BrokerRange(
        SHARE_DELIVERY_COUNT_LIMIT,
        _b.GROUP_SHARE_MIN_DELIVERY_COUNT_LIMIT,
        _b.GROUP_SHARE_MAX_DELIVERY_COUNT_LIMIT,
    ),
    BrokerRange(
        SHARE_PARTITION_MAX_RECORD_LOCKS,
        _b.GROUP_SHARE_MIN_PARTITION_MAX_RECORD_LOCKS,
        _b.GROUP_SHARE_MAX_PARTITION_MAX_RECORD_LOCKS,
    ),
)
"""The share group keys' ranges; each broker default (the key's synonym) must lie in
its range too, checked at start-up as Kafka does (`BrokerConfig`)."""

CONSUMER_RANGES = (
    BrokerRange(
        CONSUMER_SESSION_TIMEOUT_MS,
        _b.GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS,
        _b.GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS,
    ),
    BrokerRange(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        _b.GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS,
        _b.GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS,
    ),
)
"""The consumer group keys' ranges (Kafka's GroupConfig.validate)."""
