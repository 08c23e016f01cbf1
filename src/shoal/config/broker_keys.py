"""The broker's config keys (resource type BROKER), each declared once.

Shoal's own keys and the Kafka keys it acts on are `Key`s, read through them
(`BrokerConfig.get(NUM_PARTITIONS) -> int`); Kafka 4.2's other broker keys, which one
Shoal node accepts, stores and shows without acting on them, are rows of a table with
the reason (`NoEffect`; docs/reference/configs.md). The table of every key (table.py) is built
from `DEFINITIONS`, in declaration order, which is the order DescribeConfigs lists
them in.

Longer than 600 lines on purpose: one declaration per broker key, each with its
default, bounds and doc, is the point of this module.
"""

from __future__ import annotations

from shoal import limits
from shoal.config.checks import (
    COMPRESSION_TYPES,
    check_gzip_level,
    check_http_listener,
    check_jwks_url,
    check_listeners,
    check_mapping_rules,
    check_migration_policy,
    check_protocol_map,
    check_sasl_mechanisms,
    check_super_users,
)
from shoal.config.definition import LONG_MAX, ConfigType, Declarer, NoEffect, Scope

_declare = Declarer(Scope.BROKER)
_DAY_MS = 24 * 3600 * 1000
_N = NoEffect
_INT, _LONG, _LIST = ConfigType.INT, ConfigType.LONG, ConfigType.LIST


# ---- broker: identity and listeners
NODE_ID = _declare.integer("node.id", 1, "This broker's node id.", min=0, read_only=True)
BROKER_ID = _declare.integer("broker.id", -1, "Synonym of node.id (Kafka's older name).", min=-1)
LISTENERS = _declare.strings(
    "listeners",
    ["PLAINTEXT://127.0.0.1:9092"],
    "Where the broker listens.",
    read_only=True,
    check=check_listeners,
)
ADVERTISED_LISTENERS = _declare.optional_strings(
    "advertised.listeners",
    None,
    "What clients are told to connect to; defaults to listeners.",
    nullable=True,
    read_only=True,
    check=check_listeners,
)

# ---- broker: metrics.listener
METRICS_LISTENER = _declare.optional_string(
    "metrics.listener",
    None,
    "HTTP listener for /metrics and the web console, e.g. http://127.0.0.1:9404 "
    "(port 0: ephemeral); off when unset. Binds only the host named.",
    nullable=True,
    read_only=True,
    check=check_http_listener,
)
LOG_DIRS = _declare.string("log.dirs", "./shoal-data", "Data directory.", read_only=True)
LOG_DIR = _declare.optional_string(
    "log.dir", None, "Synonym of log.dirs.", nullable=True, read_only=True
)
CLUSTER_ID = _declare.optional_string(
    "cluster.id", None, "Cluster id; generated on first start.", nullable=True
)
LOG_LEVEL = _declare.string(
    "log.level", "INFO", "Log level.", choices=("DEBUG", "INFO", "WARNING", "ERROR")
)

# ---- broker: network and limits
SOCKET_REQUEST_MAX_BYTES = _declare.integer(
    "socket.request.max.bytes",
    104_857_600,
    "Largest request frame; a larger one closes the connection.",
    min=1,
)
MAX_CONNECTIONS = _declare.integer(
    "max.connections",
    limits.CONNECTIONS_MAX_DEFAULT,
    "Open client connections at most; more are closed at accept.",
    min=1,
)

# ---- connections: idle, slowloris and non-reading connections
CONNECTIONS_MAX_IDLE_MS = _declare.long(
    "connections.max.idle.ms",
    limits.CONNECTIONS_MAX_IDLE_MS_DEFAULT,
    "Close a connection idle this long, or whose client has not read a response this long.",
    min=1,
)
SHOAL_REQUEST_READ_TIMEOUT_MS = _declare.integer(
    "shoal.request.read.timeout.ms",
    limits.REQUEST_READ_TIMEOUT_MS_DEFAULT,
    "A request frame must arrive whole this soon after its size; else the connection closes.",
    min=1,
)

# ---- client quotas: the rate window of producer/consumer_byte_rate
QUOTA_WINDOW_NUM = _declare.integer(
    "quota.window.num", 11, "Samples of a client quota's rate window (Kafka's default 11).", min=1
)
QUOTA_WINDOW_SIZE_SECONDS = _declare.integer(
    "quota.window.size.seconds",
    1,
    "Length of one sample of a client quota's rate window, in seconds.",
    min=1,
)
SHOAL_MAX_TOPICS = _declare.integer(
    "shoal.max.topics",
    limits.TOPICS_MAX_DEFAULT,
    "User topics at most (internal ones not counted); more gets POLICY_VIOLATION.",
    min=1,
)
SHOAL_MAX_PARTITIONS = _declare.integer(
    "shoal.max.partitions",
    limits.PARTITIONS_MAX_DEFAULT,
    "Partitions at most across all user topics; more gets INVALID_PARTITIONS.",
    min=1,
)
SHOAL_FETCH_MAX_WAIT_MS = _declare.integer(
    "shoal.fetch.max.wait.ms",
    limits.FETCH_WAIT_MS_MAX,
    "A Fetch's MaxWaitMs is clamped to this.",
    min=0,
    max=limits.FETCH_WAIT_MS_MAX,
)
QUEUED_MAX_REQUESTS = _declare.integer(
    "queued.max.requests",
    500,
    "Requests read ahead per connection before the broker stops reading it.",
    min=1,
)
SHOAL_SHUTDOWN_TIMEOUT_MS = _declare.integer(
    "shoal.shutdown.timeout.ms",
    limits.SHUTDOWN_DRAIN_MS,
    "How long shutdown waits for in-flight requests.",
    min=0,
)
SHOAL_SHARE_PARTITION_IDLE_UNLOAD_MS = _declare.integer(
    "shoal.share.partition.idle.unload.ms",
    limits.SHARE_PARTITION_IDLE_UNLOAD_MS,
    "A share-partition unused this long with nothing acquired leaves memory; "
    "its next use reloads it from the share coordinator.",
    min=100,
)
SHOAL_SHARE_BROWSE_MAX_ENTRIES = _declare.integer(
    "shoal.share.browse.max.entries",
    limits.SHARE_BROWSE_ENTRIES_MAX,
    "In-flight entries (a batch range or one record) per share-partition that one "
    "ShareGroupBrowse (Shoal's extension API, `shoal share-groups --browse`) returns "
    "at most; the rest is flagged truncated.",
    min=0,
    max=100_000,
)

# ---- broker: web console (server/observability/console/)
CONSOLE_ALLOW_WRITES = _declare.boolean(
    "console.allow.writes",
    False,
    "Let the web console reset offsets of and delete empty groups (POST actions).",
)
CONSOLE_INFLIGHT_MAX_RECORDS = _declare.integer(
    "console.inflight.max.records",
    limits.CONSOLE_INFLIGHT_ENTRIES_MAX,
    "Entries (a batch range or one record) of a share-partition's in-flight window "
    "one console view shows; the rest is counted as truncated.",
    min=1,
    max=100_000,
)

# ---- broker: topics
NUM_PARTITIONS = _declare.integer(
    "num.partitions",
    1,
    "Partitions of auto-created topics.",
    min=1,
    max=limits.PARTITIONS_PER_TOPIC_MAX,
)
DEFAULT_REPLICATION_FACTOR = _declare.integer(
    "default.replication.factor",
    1,
    "Replication factor; a single node supports only 1.",
    min=1,
    max=1,
)
AUTO_CREATE_TOPICS_ENABLE = _declare.boolean(
    "auto.create.topics.enable",
    True,
    "Create a topic when Metadata or Produce names an unknown one.",
)
DELETE_TOPIC_ENABLE = _declare.boolean("delete.topic.enable", True, "Allow DeleteTopics.")

# ---- broker: log (each has a topic-level synonym below)
LOG_SEGMENT_BYTES = _declare.integer("log.segment.bytes", 1_073_741_824, "Segment size.", min=14)
LOG_ROLL_MS = _declare.long("log.roll.ms", 7 * _DAY_MS, "Roll a segment after this age.", min=1)
LOG_ROLL_HOURS = _declare.integer(
    "log.roll.hours", 168, "Roll after hours (if log.roll.ms unset).", min=1
)
LOG_RETENTION_MS = _declare.long(
    "log.retention.ms", 7 * _DAY_MS, "Delete segments older than this; -1 keeps forever.", min=-1
)
LOG_RETENTION_MINUTES = _declare.optional_integer(
    "log.retention.minutes", None, "Retention in minutes.", nullable=True
)
LOG_RETENTION_HOURS = _declare.integer("log.retention.hours", 168, "Retention in hours.", min=-1)
LOG_RETENTION_BYTES = _declare.long(
    "log.retention.bytes",
    -1,
    "Delete oldest segments past this partition size; -1 no limit.",
    min=-1,
)
LOG_RETENTION_CHECK_INTERVAL_MS = _declare.long(
    "log.retention.check.interval.ms", 300_000, "How often retention runs.", min=1
)
LOG_FLUSH_INTERVAL_MESSAGES = _declare.long(
    "log.flush.interval.messages",
    LONG_MAX,
    "fsync after this many records; 1 = every write.",
    min=1,
)
LOG_FLUSH_INTERVAL_MS = _declare.optional_long(
    "log.flush.interval.ms",
    None,
    "fsync data older than this; unset = page cache only.",
    nullable=True,
    min=0,
)
LOG_FLUSH_SCHEDULER_INTERVAL_MS = _declare.long(
    "log.flush.scheduler.interval.ms", LONG_MAX, "How often the flusher looks.", min=1
)
LOG_INDEX_INTERVAL_BYTES = _declare.integer(
    "log.index.interval.bytes", 4096, "Bytes between index entries.", min=0
)
LOG_INDEX_SIZE_MAX_BYTES = _declare.integer(
    "log.index.size.max.bytes", 10_485_760, "Max index size.", min=4
)
LOG_CLEANUP_POLICY = _declare.strings(
    "log.cleanup.policy",
    ["delete"],
    "delete (retention), compact (the latest record per key), or both.",
    choices=("compact", "delete"),
)
LOG_MESSAGE_TIMESTAMP_TYPE = _declare.string(
    "log.message.timestamp.type",
    "CreateTime",
    "Timestamp type.",
    choices=("CreateTime", "LogAppendTime"),
)
MESSAGE_MAX_BYTES = _declare.integer("message.max.bytes", 1_048_588, "Largest record batch.", min=0)
MIN_INSYNC_REPLICAS = _declare.integer(
    "min.insync.replicas", 1, "Single node: always 1.", min=1, max=1
)
COMPRESSION_TYPE = _declare.string(
    "compression.type",
    "producer",
    "Codec of the stored batches: producer keeps each batch's own; another value "
    "recompresses batches of another codec (docs/design/compression.md).",
    choices=COMPRESSION_TYPES,
    kafka_words=True,
)
# Kafka's CompressionType ranges of the level keys (KIP-390), which
# protocol/compression.py applies (a unit test keeps the two equal)
COMPRESSION_GZIP_LEVEL = _declare.integer(
    "compression.gzip.level",
    -1,
    "Level of broker-side gzip compression.",
    check=check_gzip_level,
    dynamic=True,
    kafka_words=True,
)
COMPRESSION_LZ4_LEVEL = _declare.integer(
    "compression.lz4.level",
    9,
    "Level of broker-side lz4 compression.",
    min=1,
    max=17,
    dynamic=True,
    kafka_words=True,
)
COMPRESSION_ZSTD_LEVEL = _declare.integer(
    "compression.zstd.level",
    3,
    "Level of broker-side zstd compression.",
    min=-131072,
    max=22,
    dynamic=True,
    kafka_words=True,
)


# ---- broker: producers and transactions
TRANSACTION_MAX_TIMEOUT_MS = _declare.integer(
    "transaction.max.timeout.ms", 900_000, "Largest txn timeout.", min=1
)
TRANSACTION_PARTITION_VERIFICATION_ENABLE = _declare.boolean(
    "transaction.partition.verification.enable",
    True,
    "Verify transactional writes with the coordinator (KIP-890) before appending them.",
    dynamic=True,
)
TRANSACTION_STATE_LOG_NUM_PARTITIONS = _declare.integer(
    "transaction.state.log.num.partitions", 50, "Txn state topic.", min=1
)
TRANSACTION_STATE_LOG_SEGMENT_BYTES = _declare.integer(
    "transaction.state.log.segment.bytes", 104_857_600, "Segment.", min=1
)
TRANSACTION_STATE_LOG_LOAD_BUFFER_SIZE = _declare.integer(
    "transaction.state.log.load.buffer.size", 5_242_880, "Load.", min=1
)
TRANSACTIONAL_ID_EXPIRATION_MS = _declare.integer(
    "transactional.id.expiration.ms", 7 * _DAY_MS, "Idle ids.", min=1
)
TRANSACTION_STATE_LOG_PRUNE_INTERVAL_MS = _declare.integer(
    "transaction.state.log.prune.interval.ms",
    300_000,
    "Shoal: how often __transaction_state is re-written and pruned (Kafka compacts).",
    min=1,
)
TRANSACTION_STATE_LOG_REWRITE_WINDOW_RECORDS = _declare.integer(
    "transaction.state.log.rewrite.window.records",
    10_000,
    "Shoal: a transactional id whose latest record lies more records than this below "
    "its __transaction_state partition's end is re-written, so idle ids do not pin the log.",
    min=0,
)
TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS = _declare.integer(
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    10_000,
    "How often timed-out transactions are aborted.",
    min=1,
)
TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS = _declare.integer(
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    3_600_000,
    "How often expired transactional ids are removed.",
    min=1,
)
PRODUCER_ID_EXPIRATION_MS = _declare.integer(
    "producer.id.expiration.ms", _DAY_MS, "Forget idle producer ids after this.", min=1
)

# ---- broker: classic consumer groups (Kafka's defaults and bounds)
GROUP_INITIAL_REBALANCE_DELAY_MS = _declare.integer(
    "group.initial.rebalance.delay.ms", 3_000, "First join wait.", min=0
)
GROUP_MIN_SESSION_TIMEOUT_MS = _declare.integer(
    "group.min.session.timeout.ms", 6_000, "Bound.", min=1
)
GROUP_MAX_SESSION_TIMEOUT_MS = _declare.integer(
    "group.max.session.timeout.ms", 1_800_000, "Bound.", min=1
)
GROUP_MAX_SIZE = _declare.integer(
    "group.max.size", 2_147_483_647, "Classic members per group.", min=1
)
OFFSETS_RETENTION_MINUTES = _declare.integer(
    "offsets.retention.minutes", 10_080, "Empty groups' offsets.", min=1
)
OFFSETS_RETENTION_CHECK_INTERVAL_MS = _declare.long(
    "offsets.retention.check.interval.ms", 600_000, "Expiry scan.", min=1
)

# ---- broker: consumer groups, KIP-848 protocol (Kafka's defaults)
GROUP_CONSUMER_SESSION_TIMEOUT_MS = _declare.integer(
    "group.consumer.session.timeout.ms", 45_000, "Member expiry.", min=1
)
GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS = _declare.integer(
    "group.consumer.heartbeat.interval.ms", 5_000, "Heartbeat.", min=1
)
GROUP_CONSUMER_MAX_SIZE = _declare.integer(
    "group.consumer.max.size", 2_147_483_647, "Members per group.", min=1
)
GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS = _declare.integer(
    "group.consumer.min.session.timeout.ms", 45_000, "Bound.", min=1
)
GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS = _declare.integer(
    "group.consumer.max.session.timeout.ms", 60_000, "Bound.", min=1
)
GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS = _declare.integer(
    "group.consumer.min.heartbeat.interval.ms", 5_000, "Bound.", min=1
)
GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS = _declare.integer(
    "group.consumer.max.heartbeat.interval.ms", 15_000, "Bound.", min=1
)
GROUP_CONSUMER_ASSIGNORS = _declare.strings(
    "group.consumer.assignors",
    ["uniform", "range"],
    "Server assignors, the first is the default.",
    choices=("uniform", "range"),
)
GROUP_CONSUMER_MIGRATION_POLICY = _declare.string(
    "group.consumer.migration.policy",
    "bidirectional",
    "Online classic<->consumer group conversion: disabled, upgrade, downgrade or "
    "bidirectional (case-insensitive).",
    check=check_migration_policy,
)

# ---- broker: share groups (see docs/reference/configs.md, "Group configs")
SHARE_VERSION = _declare.integer("share.version", 1, "0 disables share groups.", min=0, max=1)
GROUP_SHARE_SESSION_TIMEOUT_MS = _declare.integer(
    "group.share.session.timeout.ms", 45_000, "Member expiry.", min=1
)
GROUP_SHARE_MIN_SESSION_TIMEOUT_MS = _declare.integer(
    "group.share.min.session.timeout.ms", 45_000, "Bound.", min=1
)
GROUP_SHARE_MAX_SESSION_TIMEOUT_MS = _declare.integer(
    "group.share.max.session.timeout.ms", 60_000, "Bound.", min=1
)
GROUP_SHARE_HEARTBEAT_INTERVAL_MS = _declare.integer(
    "group.share.heartbeat.interval.ms", 5_000, "Heartbeat.", min=1
)
GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS = _declare.integer(
    "group.share.min.heartbeat.interval.ms", 5_000, "Bound.", min=1
)
GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS = _declare.integer(
    "group.share.max.heartbeat.interval.ms", 15_000, "Bound.", min=1
)
GROUP_SHARE_MAX_SIZE = _declare.integer(
    "group.share.max.size", 200, "Members per group.", min=1, max=1000
)
GROUP_SHARE_ASSIGNORS = _declare.strings(
    "group.share.assignors", ["simple"], "Assignor.", choices=("simple",)
)
GROUP_SHARE_INITIALIZE_RETRY_INTERVAL_MS = _declare.integer(
    "group.share.initialize.retry.interval.ms", 30_000, "Retry.", min=1
)
GROUP_SHARE_ASSIGNMENT_INTERVAL_MS = _declare.integer(
    "group.share.assignment.interval.ms", 0, "Assignment rate.", min=0
)
GROUP_SHARE_DELIVERY_COUNT_LIMIT = _declare.integer(
    "group.share.delivery.count.limit", 5, "Deliveries.", min=2, max=10
)
GROUP_SHARE_MIN_DELIVERY_COUNT_LIMIT = _declare.integer(
    "group.share.min.delivery.count.limit", 2, "Bound.", min=2, max=5
)
GROUP_SHARE_MAX_DELIVERY_COUNT_LIMIT = _declare.integer(
    "group.share.max.delivery.count.limit", 10, "Bound.", min=5, max=25
)
GROUP_SHARE_RECORD_LOCK_DURATION_MS = _declare.integer(
    "group.share.record.lock.duration.ms", 30_000, "Lock.", min=1000, max=3_600_000
)
GROUP_SHARE_MIN_RECORD_LOCK_DURATION_MS = _declare.integer(
    "group.share.min.record.lock.duration.ms", 15_000, "Bound.", min=1000, max=30_000
)
GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS = _declare.integer(
    "group.share.max.record.lock.duration.ms", 60_000, "Bound.", min=30_000, max=3_600_000
)
GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS = _declare.integer(
    "group.share.partition.max.record.locks", 2000, "In-flight window.", min=100, max=10_000
)
GROUP_SHARE_MIN_PARTITION_MAX_RECORD_LOCKS = _declare.integer(
    "group.share.min.partition.max.record.locks", 100, "Bound.", min=100, max=2000
)
GROUP_SHARE_MAX_PARTITION_MAX_RECORD_LOCKS = _declare.integer(
    "group.share.max.partition.max.record.locks", 4000, "Bound.", min=2000, max=10_000
)
GROUP_SHARE_MAX_SHARE_SESSIONS = _declare.integer(
    "group.share.max.share.sessions", 2000, "Sessions per broker.", min=1
)

# ---- dead-letter queues for share groups (KIP-1191, Kafka 4.4)
ERRORS_DEADLETTERQUEUE_TOPIC_NAME_PREFIX = _declare.string(
    "errors.deadletterqueue.topic.name.prefix",
    "dlq.",
    "KIP-1191: prefix every share group DLQ topic name must start with (empty: any).",
)
OFFSETS_TOPIC_NUM_PARTITIONS = _declare.integer(
    "offsets.topic.num.partitions", 50, "Partitions of __consumer_offsets.", min=1
)
OFFSETS_TOPIC_REPLICATION_FACTOR = _declare.short(
    "offsets.topic.replication.factor", 1, "Single node.", min=1, max=1
)
OFFSETS_TOPIC_SEGMENT_BYTES = _declare.integer(
    "offsets.topic.segment.bytes",
    104_857_600,
    "Segment size of __consumer_offsets (at least Shoal's smallest segment, 14).",
    min=14,
)
OFFSETS_LOAD_BUFFER_SIZE = _declare.integer(
    "offsets.load.buffer.size", 5_242_880, "Read size when replaying __consumer_offsets.", min=1
)
OFFSETS_TOPIC_PRUNE_INTERVAL_MS = _declare.integer(
    "offsets.topic.prune.interval.ms",
    30_000,
    "Shoal: how often the group coordinator re-writes old records and deletes the "
    "__consumer_offsets records no live key needs.",
    min=1,
)
OFFSETS_TOPIC_REWRITE_WINDOW_RECORDS = _declare.integer(
    "offsets.topic.rewrite.window.records",
    10_000,
    "Shoal: a live key whose latest record lies more records than this below its "
    "__consumer_offsets partition's end is re-written, so old keys do not pin the log.",
    min=0,
)
SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS = _declare.integer(
    "share.coordinator.state.topic.num.partitions", 50, "State topic.", min=1
)
SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR = _declare.short(
    "share.coordinator.state.topic.replication.factor", 1, "Single node.", min=1, max=1
)
SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR = _declare.short(
    "share.coordinator.state.topic.min.isr", 1, "Single node.", min=1, max=1
)
SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES = _declare.integer(
    "share.coordinator.state.topic.segment.bytes", 104_857_600, "Seg.", min=1
)
SHARE_COORDINATOR_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = _declare.integer(
    "share.coordinator.snapshot.update.records.per.snapshot",
    500,
    "Updates between snapshots.",
    min=0,
)
SHARE_COORDINATOR_WRITE_TIMEOUT_MS = _declare.integer(
    "share.coordinator.write.timeout.ms", 5000, "Write timeout.", min=1
)
SHARE_COORDINATOR_LOAD_BUFFER_SIZE = _declare.integer(
    "share.coordinator.load.buffer.size", 5_242_880, "Replay buffer.", min=1
)
SHARE_COORDINATOR_APPEND_LINGER_MS = _declare.integer(
    "share.coordinator.append.linger.ms", -1, "Append linger.", min=-1
)
SHARE_COORDINATOR_STATE_TOPIC_PRUNE_INTERVAL_MS = _declare.integer(
    "share.coordinator.state.topic.prune.interval.ms", 300_000, "Prune.", min=1
)
SHARE_COORDINATOR_COLD_PARTITION_SNAPSHOT_INTERVAL_MS = _declare.integer(
    "share.coordinator.cold.partition.snapshot.interval.ms", 300_000, "Cold snapshot.", min=1
)
SHARE_COORDINATOR_STATE_TOPIC_COMPRESSION_CODEC = _declare.integer(
    "share.coordinator.state.topic.compression.codec",
    0,
    "Codec id of state records; Shoal writes them uncompressed.",
    no_effect=NoEffect.COMPRESSION,
)
SHARE_COORDINATOR_THREADS = _declare.integer(
    "share.coordinator.threads",
    1,
    "Kafka knob; no Shoal meaning.",
    min=1,
    no_effect=NoEffect.THREADS,
)
SHARE_FETCH_PURGATORY_PURGE_INTERVAL_REQUESTS = _declare.integer(
    "share.fetch.purgatory.purge.interval.requests",
    1000,
    "Kafka knob; no Shoal meaning.",
    no_effect=NoEffect.PURGATORY,
)
GROUP_SHARE_PERSISTER_CLASS_NAME = _declare.string(
    "group.share.persister.class.name",
    "org.apache.kafka.server.share.persister.DefaultStatePersister",
    "Kafka knob; Shoal always persists through its share coordinator.",
    no_effect=NoEffect.PLUGINS,
)

# ---- broker: authorization (security/authorizer.py, server/metadata/acl_store.py)
AUTHORIZER_CLASS_NAME = _declare.string(
    "authorizer.class.name",
    "",
    "Empty: no authorizer (everything allowed, the ACL APIs answer SECURITY_DISABLED). "
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer or its short name "
    "'standard': Kafka's ACL authorizer.",
    read_only=True,
    choices=("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "standard"),
)
SUPER_USERS = _declare.string(
    "super.users",
    "",
    "Principals always allowed, separated by semicolons (User:admin;User:ops).",
    read_only=True,
    check=check_super_users,
)
ALLOW_EVERYONE_IF_NO_ACL_FOUND = _declare.boolean(
    "allow.everyone.if.no.acl.found",
    False,
    "Allow an action on a resource no ACL names (with an authorizer configured).",
    read_only=True,
)

# ---- broker: SASL authentication (docs/reference/security.md, "SASL")
SASL_ENABLED_MECHANISMS = _declare.strings(
    "sasl.enabled.mechanisms",
    ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
    "SASL mechanisms served on SASL listeners (Kafka's default GSSAPI is not served; "
    "OAUTHBEARER must be enabled explicitly).",
    check=check_sasl_mechanisms,
)
CONNECTIONS_MAX_REAUTH_MS = _declare.long(
    "connections.max.reauth.ms",
    0,
    "KIP-368: a SASL session's lifetime; past it only a re-authentication is served "
    "(0: sessions never expire).",
    min=0,
)
CONNECTION_FAILED_AUTHENTICATION_DELAY_MS = _declare.integer(
    "connection.failed.authentication.delay.ms",
    100,
    "How long a failed SASL authentication's response is delayed before the close.",
    min=0,
)
SASL_SERVER_MAX_RECEIVE_SIZE = _declare.integer(
    "sasl.server.max.receive.size",
    524_288,
    "Largest frame a SASL listener reads before the connection is authenticated "
    "(Kafka's default, 512 KiB); a larger one closes the connection.",
    min=1,
)
SASL_OAUTHBEARER_JWKS_ENDPOINT_URL = _declare.optional_string(
    "sasl.oauthbearer.jwks.endpoint.url",
    None,
    "OAUTHBEARER: a file: URL of a JWK set; tokens must be RS256/ES256-signed by one of "
    "its keys. Unset: the unsecured (alg none) validator for development.",
    nullable=True,
    check=check_jwks_url,
)
SASL_OAUTHBEARER_EXPECTED_AUDIENCE = _declare.strings(
    "sasl.oauthbearer.expected.audience",
    [],
    "OAUTHBEARER (JWKS): a token's 'aud' must name one of these (empty: not checked).",
)
SASL_OAUTHBEARER_EXPECTED_ISSUER = _declare.optional_string(
    "sasl.oauthbearer.expected.issuer",
    None,
    "OAUTHBEARER (JWKS): a token's 'iss' must equal this (unset: not checked).",
    nullable=True,
)
SASL_OAUTHBEARER_SUB_CLAIM_NAME = _declare.string(
    "sasl.oauthbearer.sub.claim.name", "sub", "OAUTHBEARER (JWKS): the claim naming the principal."
)
SASL_OAUTHBEARER_SCOPE_CLAIM_NAME = _declare.string(
    "sasl.oauthbearer.scope.claim.name", "scope", "OAUTHBEARER (JWKS): the claim holding the scope."
)
SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS = _declare.integer(
    "sasl.oauthbearer.clock.skew.seconds",
    30,
    "OAUTHBEARER (JWKS): clock skew allowed when checking 'exp' and 'iat'.",
    min=0,
)

# ---- broker: listeners and TLS. Each `ssl.*` key may also be set

# for one listener as `listener.name.<lower-case listener name>.ssl.*` (`listener_value`).
LISTENER_SECURITY_PROTOCOL_MAP = _declare.strings(
    "listener.security.protocol.map",
    ["PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"],
    "Listener name to security protocol (NAME:PROTOCOL, comma-separated).",
    read_only=True,
    check=check_protocol_map,
)
SSL_KEYSTORE_TYPE = _declare.string(
    "ssl.keystore.type", "PEM", "Key store format (PEM only).", choices=("PEM",)
)
SSL_KEYSTORE_LOCATION = _declare.optional_string(
    "ssl.keystore.location",
    None,
    "PEM file with the private key and the certificate chain.",
    nullable=True,
)
SSL_KEYSTORE_CERTIFICATE_CHAIN = _declare.password(
    "ssl.keystore.certificate.chain", None, "The certificate chain in PEM, inline.", nullable=True
)
SSL_KEYSTORE_KEY = _declare.password(
    "ssl.keystore.key", None, "The key in PEM, inline.", nullable=True
)
SSL_KEY_PASSWORD = _declare.password(
    "ssl.key.password", None, "Password of an encrypted private key.", nullable=True
)
SSL_TRUSTSTORE_TYPE = _declare.string(
    "ssl.truststore.type", "PEM", "Trust store format (PEM only).", choices=("PEM",)
)
SSL_TRUSTSTORE_LOCATION = _declare.optional_string(
    "ssl.truststore.location",
    None,
    "PEM file of the CA certificates client certificates are checked against.",
    nullable=True,
)
SSL_TRUSTSTORE_CERTIFICATES = _declare.password(
    "ssl.truststore.certificates", None, "CA certificates in PEM, inline.", nullable=True
)
SSL_CLIENT_AUTH = _declare.string(
    "ssl.client.auth",
    "none",
    "Client certificates: none, requested or required.",
    choices=("none", "requested", "required"),
)
SSL_ENABLED_PROTOCOLS = _declare.strings(
    "ssl.enabled.protocols",
    ["TLSv1.2", "TLSv1.3"],
    "TLS versions accepted (TLS 1.2 and later only).",
    choices=("TLSv1.2", "TLSv1.3"),
)
SSL_CIPHER_SUITES = _declare.strings(
    "ssl.cipher.suites", [], "TLS 1.2 cipher suites (OpenSSL names); empty: the defaults."
)
SSL_PRINCIPAL_MAPPING_RULES = _declare.string(
    "ssl.principal.mapping.rules",
    "DEFAULT",
    "Client certificate DN to user name (Kafka's RULE:pattern/replacement/[LU], DEFAULT).",
    check=check_mapping_rules,
)
SHOAL_SSL_HANDSHAKE_TIMEOUT_MS = _declare.integer(
    "shoal.ssl.handshake.timeout.ms",
    limits.SSL_HANDSHAKE_TIMEOUT_MS_DEFAULT,
    "A TLS handshake not finished within this closes the connection (logged).",
    min=100,
)
SHOAL_SSL_RELOAD_CHECK_INTERVAL_MS = _declare.integer(
    "shoal.ssl.reload.check.interval.ms",
    limits.SSL_RELOAD_CHECK_INTERVAL_MS_DEFAULT,
    "How often the key and trust store files are checked for a change (then reloaded).",
    min=100,
)


# ---- Kafka 4.2's broker keys that do nothing on one Shoal node (docs/reference/configs.md). Each
# is accepted in a properties file and by the admin APIs (dynamically where Kafka allows
# it), stored and shown as Kafka shows it, with its Kafka type, default and bounds.

KAFKA_MINIMUMS: dict[str, int | float] = {
    **dict.fromkeys(
        (
            "background.threads",
            "max.decompressed.message.bytes",
            "num.io.threads",
            "num.network.threads",
            "num.recovery.threads.per.data.dir",
            "num.replica.fetchers",
            "remote.fetch.max.wait.ms",
            "remote.list.offsets.request.timeout.ms",
            "remote.log.index.file.cache.total.size.bytes",
            "remote.log.manager.copier.thread.pool.size",
            "remote.log.manager.copy.max.bytes.per.second",
            "remote.log.manager.expiration.thread.pool.size",
            "remote.log.manager.fetch.max.bytes.per.second",
            "remote.log.manager.follower.thread.pool.size",
            "remote.log.reader.threads",
        ),
        1,
    ),
    **dict.fromkeys(
        (
            "follower.replication.throttled.rate",
            "leader.replication.throttled.rate",
            "log.cleaner.io.buffer.size",
            "log.message.timestamp.after.max.ms",
            "log.message.timestamp.before.max.ms",
            "log.roll.jitter.ms",
            "log.segment.delete.delay.ms",
            "max.connection.creation.rate",
            "max.connections.per.ip",
            "replica.alter.log.dirs.io.max.bytes.per.second",
        ),
        0,
    ),
    "log.local.retention.bytes": -2,
    "log.local.retention.ms": -2,
}
"""The lower bounds Kafka 4.2 checks on the dynamic keys above (and, through their
broker synonyms, the topic keys), as the reference broker answers them."""

# (name, type, Kafka's default as Kafka shows it, dynamic in Kafka, why no effect)
_declare.kafka_keys(
    [
        ("add.partitions.to.txn.retry.backoff.max.ms", _INT, "100", False, _N.UNCHECKED),
        ("add.partitions.to.txn.retry.backoff.ms", _INT, "20", False, _N.UNCHECKED),
        ("alter.config.policy.class.name", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("alter.log.dirs.replication.quota.window.num", _INT, "11", False, _N.REPLICATION),
        ("alter.log.dirs.replication.quota.window.size.seconds", _INT, "1", False, _N.REPLICATION),
        ("auto.leader.rebalance.enable", ConfigType.BOOLEAN, "true", False, _N.KRAFT),
        ("background.threads", _INT, "10", True, _N.THREADS),
        ("broker.heartbeat.interval.ms", _INT, "2000", False, _N.KRAFT),
        ("broker.rack", ConfigType.STRING, None, False, _N.KRAFT),
        ("broker.session.timeout.ms", _INT, "9000", False, _N.KRAFT),
        ("client.quota.callback.class", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("config.providers", _LIST, "", True, _N.PLUGINS),
        ("controlled.shutdown.enable", ConfigType.BOOLEAN, "true", False, _N.KRAFT),
        ("controller.listener.names", _LIST, None, False, _N.KRAFT),
        ("controller.quorum.append.linger.ms", _INT, "25", False, _N.KRAFT),
        ("controller.quorum.auto.join.enable", ConfigType.BOOLEAN, "false", False, _N.KRAFT),
        ("controller.quorum.bootstrap.servers", _LIST, "", False, _N.KRAFT),
        ("controller.quorum.election.backoff.max.ms", _INT, "1000", False, _N.KRAFT),
        ("controller.quorum.election.timeout.ms", _INT, "1000", False, _N.KRAFT),
        ("controller.quorum.fetch.timeout.ms", _INT, "2000", False, _N.KRAFT),
        ("controller.quorum.request.timeout.ms", _INT, "2000", False, _N.KRAFT),
        ("controller.quorum.retry.backoff.ms", _INT, "20", False, _N.KRAFT),
        ("controller.quorum.voters", _LIST, "", False, _N.KRAFT),
        ("controller.quota.window.num", _INT, "11", False, _N.KRAFT),
        ("controller.quota.window.size.seconds", _INT, "1", False, _N.KRAFT),
        ("controller.socket.timeout.ms", _INT, "30000", False, _N.KRAFT),
        ("create.topic.policy.class.name", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("delegation.token.expiry.check.interval.ms", _LONG, "3600000", False, _N.DELEGATION),
        ("delegation.token.expiry.time.ms", _LONG, "86400000", False, _N.DELEGATION),
        ("delegation.token.max.lifetime.ms", _LONG, "604800000", False, _N.DELEGATION),
        ("delegation.token.secret.key", ConfigType.PASSWORD, None, False, _N.DELEGATION),
        ("delete.records.purgatory.purge.interval.requests", _INT, "1", False, _N.PURGATORY),
        ("early.start.listeners", _LIST, None, False, _N.KRAFT),
        ("fetch.max.bytes", _INT, "57671680", False, _N.PURGATORY),
        ("fetch.purgatory.purge.interval.requests", _INT, "1000", False, _N.PURGATORY),
        ("follower.replication.throttled.rate", _LONG, "9223372036854775807", True, _N.REPLICATION),
        ("group.coordinator.append.linger.ms", _INT, "-1", False, _N.UNCHECKED),
        (
            "group.coordinator.rebalance.protocols",
            _LIST,
            "classic,consumer,streams",
            False,
            _N.UNCHECKED,
        ),
        ("group.coordinator.threads", _INT, "4", False, _N.THREADS),
        ("group.streams.heartbeat.interval.ms", _INT, "5000", False, _N.STREAMS),
        ("group.streams.initial.rebalance.delay.ms", _INT, "3000", False, _N.STREAMS),
        ("group.streams.max.heartbeat.interval.ms", _INT, "15000", False, _N.STREAMS),
        ("group.streams.max.session.timeout.ms", _INT, "60000", False, _N.STREAMS),
        ("group.streams.max.size", _INT, "2147483647", False, _N.STREAMS),
        ("group.streams.max.standby.replicas", _INT, "2", False, _N.STREAMS),
        ("group.streams.min.heartbeat.interval.ms", _INT, "5000", False, _N.STREAMS),
        ("group.streams.min.session.timeout.ms", _INT, "45000", False, _N.STREAMS),
        ("group.streams.num.standby.replicas", _INT, "0", False, _N.STREAMS),
        ("group.streams.session.timeout.ms", _INT, "45000", False, _N.STREAMS),
        ("initial.broker.registration.timeout.ms", _INT, "60000", False, _N.KRAFT),
        ("inter.broker.listener.name", ConfigType.STRING, None, False, _N.KRAFT),
        ("kafka.metrics.polling.interval.secs", _INT, "10", False, _N.PLUGINS),
        ("kafka.metrics.reporters", _LIST, "", False, _N.PLUGINS),
        ("leader.imbalance.check.interval.seconds", _LONG, "300", False, _N.KRAFT),
        ("leader.replication.throttled.rate", _LONG, "9223372036854775807", True, _N.REPLICATION),
    ],
    minimums=KAFKA_MINIMUMS,
)

# ---- Kafka's log cleaner keys, which Shoal acts on (server/services/log_cleaner.py)
LOG_CLEANER_BACKOFF_MS = _declare.long(
    "log.cleaner.backoff.ms",
    15_000,
    "How long a cleaner thread sleeps when nothing is cleanable.",
    min=0,
    dynamic=True,
)
LOG_CLEANER_DEDUPE_BUFFER_SIZE = _declare.long(
    "log.cleaner.dedupe.buffer.size",
    134_217_728,
    "The key maps' memory, shared by the cleaner threads (160 bytes per key).",
    dynamic=True,
)
LOG_CLEANER_DELETE_RETENTION_MS = _declare.long(
    "log.cleaner.delete.retention.ms",
    86_400_000,
    "How long tombstones survive their first cleaning.",
    min=0,
    dynamic=True,
)
LOG_CLEANER_ENABLE = _declare.boolean(
    "log.cleaner.enable", True, "Run the log cleaner (compaction of cleanup.policy=compact topics)."
)
LOG_CLEANER_IO_BUFFER_LOAD_FACTOR = _declare.double(
    "log.cleaner.io.buffer.load.factor",
    0.9,
    "The share of a key map the cleaner fills.",
    dynamic=True,
)
_declare.kafka_keys(
    [("log.cleaner.io.buffer.size", _INT, "524288", True, _N.CLEANER)], minimums=KAFKA_MINIMUMS
)
LOG_CLEANER_IO_MAX_BYTES_PER_SECOND = _declare.double(
    "log.cleaner.io.max.bytes.per.second",
    1.7976931348623157e308,
    "The cleaner threads' I/O bound, read and written.",
    dynamic=True,
)
LOG_CLEANER_MAX_COMPACTION_LAG_MS = _declare.long(
    "log.cleaner.max.compaction.lag.ms",
    LONG_MAX,
    "Dirty records older than this are cleaned at once.",
    min=1,
    dynamic=True,
)
LOG_CLEANER_MIN_CLEANABLE_RATIO = _declare.double(
    "log.cleaner.min.cleanable.ratio",
    0.5,
    "Dirty share of a log before the cleaner takes it.",
    min=0,
    max=1,
    dynamic=True,
)  # Kafka's between(0, 1)
LOG_CLEANER_MIN_COMPACTION_LAG_MS = _declare.long(
    "log.cleaner.min.compaction.lag.ms",
    0,
    "Records younger than this are not cleaned yet.",
    min=0,
    dynamic=True,
)
LOG_CLEANER_THREADS = _declare.integer(
    "log.cleaner.threads",
    1,
    "Cleaner threads (server/services/log_cleaner.py).",
    min=0,
    dynamic=True,
)

_declare.kafka_keys(
    [
        ("log.dir.failure.timeout.ms", _LONG, "30000", False, _N.REPLICATION),
        ("log.flush.offset.checkpoint.interval.ms", _INT, "60000", False, _N.LOG_FILES),
        ("log.flush.start.offset.checkpoint.interval.ms", _INT, "60000", False, _N.LOG_FILES),
        ("log.local.retention.bytes", _LONG, "-2", True, _N.TIERED),
        ("log.local.retention.ms", _LONG, "-2", True, _N.TIERED),
        ("log.message.timestamp.after.max.ms", _LONG, "3600000", True, _N.UNCHECKED),
        ("log.message.timestamp.before.max.ms", _LONG, "9223372036854775807", True, _N.UNCHECKED),
        ("log.preallocate", ConfigType.BOOLEAN, "false", True, _N.LOG_FILES),
        ("log.roll.jitter.hours", _INT, "0", False, _N.LOG_FILES),
        ("log.roll.jitter.ms", _LONG, None, True, _N.LOG_FILES),
        ("log.segment.delete.delay.ms", _LONG, "60000", True, _N.LOG_FILES),
        ("max.connection.creation.rate", _INT, "2147483647", True, _N.CONNECTIONS),
        ("max.connections.per.ip", _INT, "2147483647", True, _N.CONNECTIONS),
        ("max.connections.per.ip.overrides", ConfigType.STRING, "", True, _N.CONNECTIONS),
        ("max.decompressed.message.bytes", _INT, "2147483639", True, _N.UNCHECKED),
        ("max.incremental.fetch.session.cache.slots", _INT, "1000", False, _N.PURGATORY),
        ("max.request.partition.size.limit", _INT, "2000", False, _N.UNCHECKED),
        ("metadata.log.dir", ConfigType.STRING, None, False, _N.KRAFT),
        ("metadata.log.max.record.bytes.between.snapshots", _LONG, "20971520", False, _N.KRAFT),
        ("metadata.log.max.snapshot.interval.ms", _LONG, "3600000", False, _N.KRAFT),
        ("metadata.log.segment.bytes", _INT, "1073741824", False, _N.KRAFT),
        ("metadata.log.segment.ms", _LONG, "604800000", False, _N.KRAFT),
        ("metadata.max.idle.interval.ms", _INT, "500", False, _N.KRAFT),
        ("metadata.max.retention.bytes", _LONG, "104857600", False, _N.KRAFT),
        ("metadata.max.retention.ms", _LONG, "604800000", False, _N.KRAFT),
        (
            "metric.reporters",
            _LIST,
            "org.apache.kafka.common.metrics.JmxReporter",
            True,
            _N.PLUGINS,
        ),
        ("metrics.num.samples", _INT, "2", False, _N.PLUGINS),
        ("metrics.recording.level", ConfigType.STRING, "INFO", False, _N.PLUGINS),
        ("metrics.sample.window.ms", _LONG, "30000", False, _N.PLUGINS),
        ("num.io.threads", _INT, "8", True, _N.THREADS),
        ("num.network.threads", _INT, "3", True, _N.THREADS),
        ("num.recovery.threads.per.data.dir", _INT, "2", True, _N.THREADS),
        ("num.replica.alter.log.dirs.threads", _INT, None, False, _N.REPLICATION),
        ("num.replica.fetchers", _INT, "1", True, _N.REPLICATION),
        ("offset.metadata.max.bytes", _INT, "4096", False, _N.UNCHECKED),
        ("offsets.commit.timeout.ms", _INT, "5000", False, _N.UNCHECKED),
        ("offsets.topic.compression.codec", _INT, "0", False, _N.UNCHECKED),
        (
            "principal.builder.class",
            ConfigType.CLASS,
            "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
            True,
            _N.PLUGINS,
        ),
        ("process.roles", _LIST, None, False, _N.KRAFT),
        ("producer.purgatory.purge.interval.requests", _INT, "1000", False, _N.PURGATORY),
        ("queued.max.request.bytes", _LONG, "-1", False, _N.SOCKETS),
        ("remote.fetch.max.wait.ms", _INT, "500", True, _N.TIERED),
        ("remote.list.offsets.request.timeout.ms", _LONG, "30000", True, _N.TIERED),
        ("remote.log.index.file.cache.total.size.bytes", _LONG, "1073741824", True, _N.TIERED),
        ("remote.log.manager.copier.thread.pool.size", _INT, "10", True, _N.TIERED),
        (
            "remote.log.manager.copy.max.bytes.per.second",
            _LONG,
            "9223372036854775807",
            True,
            _N.TIERED,
        ),
        ("remote.log.manager.copy.quota.window.num", _INT, "11", False, _N.TIERED),
        ("remote.log.manager.copy.quota.window.size.seconds", _INT, "1", False, _N.TIERED),
        ("remote.log.manager.expiration.thread.pool.size", _INT, "10", True, _N.TIERED),
        (
            "remote.log.manager.fetch.max.bytes.per.second",
            _LONG,
            "9223372036854775807",
            True,
            _N.TIERED,
        ),
        ("remote.log.manager.fetch.quota.window.num", _INT, "11", False, _N.TIERED),
        ("remote.log.manager.fetch.quota.window.size.seconds", _INT, "1", False, _N.TIERED),
        ("remote.log.manager.follower.thread.pool.size", _INT, "2", True, _N.TIERED),
        ("remote.log.manager.task.interval.ms", _LONG, "30000", False, _N.TIERED),
        ("remote.log.manager.thread.pool.size", _INT, "2", False, _N.TIERED),
        ("remote.log.metadata.custom.metadata.max.bytes", _INT, "128", False, _N.TIERED),
        (
            "remote.log.metadata.manager.class.name",
            ConfigType.STRING,
            "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager",
            False,
            _N.TIERED,
        ),
        ("remote.log.metadata.manager.class.path", ConfigType.STRING, None, False, _N.TIERED),
        (
            "remote.log.metadata.manager.impl.prefix",
            ConfigType.STRING,
            "rlmm.config.",
            False,
            _N.TIERED,
        ),
        ("remote.log.metadata.manager.listener.name", ConfigType.STRING, None, False, _N.TIERED),
        ("remote.log.reader.max.pending.tasks", _INT, "100", False, _N.TIERED),
        ("remote.log.reader.threads", _INT, "10", True, _N.TIERED),
        ("remote.log.storage.manager.class.name", ConfigType.STRING, None, False, _N.TIERED),
        ("remote.log.storage.manager.class.path", ConfigType.STRING, None, False, _N.TIERED),
        (
            "remote.log.storage.manager.impl.prefix",
            ConfigType.STRING,
            "rsm.config.",
            False,
            _N.TIERED,
        ),
        ("remote.log.storage.system.enable", ConfigType.BOOLEAN, "false", False, _N.TIERED),
        (
            "replica.alter.log.dirs.io.max.bytes.per.second",
            _LONG,
            "9223372036854775807",
            True,
            _N.REPLICATION,
        ),
        ("replica.fetch.backoff.ms", _INT, "1000", False, _N.REPLICATION),
        ("replica.fetch.max.bytes", _INT, "1048576", False, _N.REPLICATION),
        ("replica.fetch.min.bytes", _INT, "1", False, _N.REPLICATION),
        ("replica.fetch.response.max.bytes", _INT, "10485760", False, _N.REPLICATION),
        ("replica.fetch.wait.max.ms", _INT, "500", False, _N.REPLICATION),
        ("replica.high.watermark.checkpoint.interval.ms", _LONG, "5000", False, _N.REPLICATION),
        ("replica.lag.time.max.ms", _LONG, "30000", False, _N.REPLICATION),
        ("replica.selector.class", ConfigType.STRING, None, False, _N.REPLICATION),
        ("replica.socket.receive.buffer.bytes", _INT, "65536", False, _N.REPLICATION),
        ("replica.socket.timeout.ms", _INT, "30000", False, _N.REPLICATION),
        ("replication.quota.window.num", _INT, "11", False, _N.REPLICATION),
        ("replication.quota.window.size.seconds", _INT, "1", False, _N.REPLICATION),
        ("request.timeout.ms", _INT, "30000", False, _N.SOCKETS),
        ("sasl.client.callback.handler.class", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("sasl.jaas.config", ConfigType.PASSWORD, None, True, _N.JAAS),
        ("sasl.kerberos.kinit.cmd", ConfigType.STRING, "/usr/bin/kinit", True, _N.JAAS),
        ("sasl.kerberos.min.time.before.relogin", _LONG, "60000", True, _N.JAAS),
        ("sasl.kerberos.principal.to.local.rules", _LIST, "DEFAULT", True, _N.JAAS),
        ("sasl.kerberos.service.name", ConfigType.STRING, None, True, _N.JAAS),
        ("sasl.kerberos.ticket.renew.jitter", ConfigType.DOUBLE, "0.05", True, _N.JAAS),
        ("sasl.kerberos.ticket.renew.window.factor", ConfigType.DOUBLE, "0.8", True, _N.JAAS),
        ("sasl.login.callback.handler.class", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("sasl.login.class", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("sasl.login.connect.timeout.ms", _INT, None, False, _N.JAAS),
        ("sasl.login.read.timeout.ms", _INT, None, False, _N.JAAS),
        ("sasl.login.refresh.buffer.seconds", ConfigType.SHORT, "300", True, _N.JAAS),
        ("sasl.login.refresh.min.period.seconds", ConfigType.SHORT, "60", True, _N.JAAS),
        ("sasl.login.refresh.window.factor", ConfigType.DOUBLE, "0.8", True, _N.JAAS),
        ("sasl.login.refresh.window.jitter", ConfigType.DOUBLE, "0.05", True, _N.JAAS),
        ("sasl.login.retry.backoff.max.ms", _LONG, "10000", False, _N.JAAS),
        ("sasl.login.retry.backoff.ms", _LONG, "100", False, _N.JAAS),
        ("sasl.mechanism.controller.protocol", ConfigType.STRING, "GSSAPI", False, _N.KRAFT),
        ("sasl.mechanism.inter.broker.protocol", ConfigType.STRING, "GSSAPI", True, _N.KRAFT),
        ("sasl.oauthbearer.assertion.algorithm", ConfigType.STRING, "RS256", False, _N.JAAS),
        ("sasl.oauthbearer.assertion.claim.aud", ConfigType.STRING, None, False, _N.JAAS),
        ("sasl.oauthbearer.assertion.claim.exp.seconds", _INT, "300", False, _N.JAAS),
        ("sasl.oauthbearer.assertion.claim.iss", ConfigType.STRING, None, False, _N.JAAS),
        (
            "sasl.oauthbearer.assertion.claim.jti.include",
            ConfigType.BOOLEAN,
            "false",
            False,
            _N.JAAS,
        ),
        ("sasl.oauthbearer.assertion.claim.nbf.seconds", _INT, "60", False, _N.JAAS),
        ("sasl.oauthbearer.assertion.claim.sub", ConfigType.STRING, None, False, _N.JAAS),
        ("sasl.oauthbearer.assertion.file", ConfigType.STRING, None, False, _N.JAAS),
        ("sasl.oauthbearer.assertion.private.key.file", ConfigType.STRING, None, False, _N.JAAS),
        (
            "sasl.oauthbearer.assertion.private.key.passphrase",
            ConfigType.PASSWORD,
            None,
            False,
            _N.JAAS,
        ),
        ("sasl.oauthbearer.assertion.template.file", ConfigType.STRING, None, False, _N.JAAS),
        ("sasl.oauthbearer.client.credentials.client.id", ConfigType.STRING, None, False, _N.JAAS),
        (
            "sasl.oauthbearer.client.credentials.client.secret",
            ConfigType.PASSWORD,
            None,
            False,
            _N.JAAS,
        ),
        ("sasl.oauthbearer.jwks.endpoint.refresh.ms", _LONG, "3600000", False, _N.JAAS),
        ("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", _LONG, "10000", False, _N.JAAS),
        ("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _LONG, "100", False, _N.JAAS),
        (
            "sasl.oauthbearer.jwt.retriever.class",
            ConfigType.CLASS,
            "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
            False,
            _N.PLUGINS,
        ),
        (
            "sasl.oauthbearer.jwt.validator.class",
            ConfigType.CLASS,
            "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
            False,
            _N.PLUGINS,
        ),
        ("sasl.oauthbearer.scope", ConfigType.STRING, None, False, _N.JAAS),
        ("sasl.oauthbearer.token.endpoint.url", ConfigType.STRING, None, False, _N.JAAS),
        ("sasl.server.callback.handler.class", ConfigType.CLASS, None, False, _N.PLUGINS),
        ("security.inter.broker.protocol", ConfigType.STRING, "PLAINTEXT", False, _N.KRAFT),
        ("security.providers", ConfigType.STRING, None, False, _N.PLUGINS),
        ("socket.connection.setup.timeout.max.ms", _LONG, "30000", False, _N.SOCKETS),
        ("socket.connection.setup.timeout.ms", _LONG, "10000", False, _N.SOCKETS),
        ("socket.listen.backlog.size", _INT, "50", False, _N.SOCKETS),
        ("socket.receive.buffer.bytes", _INT, "102400", False, _N.SOCKETS),
        ("socket.send.buffer.bytes", _INT, "102400", False, _N.SOCKETS),
        ("ssl.allow.dn.changes", ConfigType.BOOLEAN, "false", False, _N.JSSE),
        ("ssl.allow.san.changes", ConfigType.BOOLEAN, "false", False, _N.JSSE),
        ("ssl.endpoint.identification.algorithm", ConfigType.STRING, "https", True, _N.JSSE),
        ("ssl.engine.factory.class", ConfigType.CLASS, None, True, _N.PLUGINS),
        ("ssl.keymanager.algorithm", ConfigType.STRING, "SunX509", True, _N.JSSE),
        ("ssl.keystore.password", ConfigType.PASSWORD, None, True, _N.JSSE),
        ("ssl.protocol", ConfigType.STRING, "TLSv1.3", True, _N.JSSE),
        ("ssl.provider", ConfigType.STRING, None, True, _N.JSSE),
        ("ssl.secure.random.implementation", ConfigType.STRING, None, True, _N.JSSE),
        ("ssl.trustmanager.algorithm", ConfigType.STRING, "PKIX", True, _N.JSSE),
        ("ssl.truststore.password", ConfigType.PASSWORD, None, True, _N.JSSE),
        ("telemetry.max.bytes", _INT, "1048576", False, _N.TELEMETRY),
        ("transaction.state.log.min.isr", _INT, "2", False, _N.REPLICATION),
        ("transaction.state.log.replication.factor", ConfigType.SHORT, "3", False, _N.REPLICATION),
        ("transaction.two.phase.commit.enable", ConfigType.BOOLEAN, "false", False, _N.UNCHECKED),
        ("unclean.leader.election.enable", ConfigType.BOOLEAN, "false", True, _N.REPLICATION),
    ],
    minimums=KAFKA_MINIMUMS,
)

DEFINITIONS = _declare.definitions
"""Every broker key's definition, in declaration order."""
