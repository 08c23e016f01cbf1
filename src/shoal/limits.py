"""Every hard bound in Shoal, named in one place.

Settings a user may change are config keys (see `config.py`); the values here are
the fixed ceilings and internal bounds. Each one has a test showing what a client
sees when it is hit. Units are last in names.
"""

from __future__ import annotations

from typing import Final

# Connections
CONNECTIONS_MAX_DEFAULT: Final = 1_000
"""Default for `max.connections`: accepted sockets beyond this are closed at once."""
CONNECTION_TURN_MS: Final = 2
"""A connection serving requests already in its buffer (nothing suspends between
them) lets the event loop run others once it has served for this long (so
a producer's pipelined requests no longer hold woken share fetches for 100s of ms)."""
# idle, slow and non-reading connections
CONNECTIONS_MAX_IDLE_MS_DEFAULT: Final = 600_000
"""Default for `connections.max.idle.ms` (Kafka's broker default): a connection with
no request in hand and none written for this long is closed; so is one whose client
has not taken a written response for this long (it never reads)."""
REQUEST_READ_TIMEOUT_MS_DEFAULT: Final = 30_000
"""Default for `shoal.request.read.timeout.ms`: a request frame whose size has been
read must arrive whole within this, or the connection closes (a slowloris client
sending a byte a second); until then it holds at most `socket.request.max.bytes`."""
CONNECTION_SWEEP_INTERVAL_MS_MAX: Final = 1_000
"""The broker checks connections' idle and frame deadlines at least this often (more
often when a deadline is shorter: a tenth of it, at least every 10 ms)."""
REFUSED_CONNECTIONS_LOG_INTERVAL_MS: Final = 10_000
"""Connections refused by `max.connections` are logged one by one at most this often;
the ones between are counted and the count logged with the next line (a connection
flood does not flood the log)."""
FD_HEADROOM: Final = 1_000
"""File descriptors kept beyond `max.connections` (log segments, indexes, pipes): at
start the broker raises its soft RLIMIT_NOFILE to `max.connections` plus this (up to
the hard limit) and warns if the hard limit is lower."""
LISTEN_BACKLOG: Final = 1_024
"""Listen backlog of every listener socket: connections the kernel completes before the
broker accepts them (asyncio's 100 made a burst of 10k connects wait on SYN retries)."""
CONNECTION_WRITE_BUFFER_HIGH_BYTES: Final = 256 * 1024
"""Write buffer high-water mark per connection: above it the connection waits for the
client to read before it reads the client's next request (Kafka's muting), so a
client that never reads holds at most one response plus this much."""
ADMIN_CHANGES_PENDING_MAX: Final = 10_000
"""Admin changes (server/services/disk_io.py `ChangeLane`) started and not yet ended. A change
runs to its end even when its requester goes away, so only abandoned requests can
queue past one per connection; at this bound a new change is refused and its
connection closed with the reason logged."""
CONNECTION_HELD_RESPONSE_BYTES_MAX: Final = 256 * 1024
"""Responses held back per connection to leave in one write: while the next request
of a client's pipeline is already whole in hand, a response waits for the next ones
(server/net/connection.py) until their bytes reach this much."""

# Topics and partitions
TOPICS_MAX_DEFAULT: Final = 10_000
"""Default for `shoal.max.topics`: a CreateTopics that would exceed it gets
POLICY_VIOLATION with a message naming `shoal.max.topics`. Internal topics count
towards it but their creation is never refused by it."""
PARTITIONS_PER_TOPIC_MAX: Final = 10_000
"""A topic may have at most this many partitions (INVALID_PARTITIONS beyond)."""
PARTITIONS_PER_CREATE_TOPICS_MAX: Final = 10_000
"""Kafka's controller limit on the partitions one CreateTopics asks for, all its topics
together (ReplicationControlManager.validateTotalNumberOfPartitions, its
MAX_PARTITIONS_PER_BATCH): beyond it every topic of the request gets POLICY_VIOLATION
"Excessively large number of partitions per request.", before any other check."""
PARTITIONS_MAX_DEFAULT: Final = 100_000
"""Default for `shoal.max.partitions`, across all topics: a CreateTopics or
CreatePartitions that would exceed it gets INVALID_PARTITIONS with a message naming
`shoal.max.partitions`. Internal topics count towards it but their creation is never
refused by it."""
TOPIC_NAME_LENGTH_MAX: Final = 249
"""Kafka's limit on a topic name's length (INVALID_TOPIC_EXCEPTION beyond)."""
DESCRIBE_TOPIC_PARTITIONS_MAX: Final = 2_000
"""DescribeTopicPartitions answers at most this many partitions per response, whatever
the request's ResponsePartitionLimit (Kafka's `max.request.partition.size.limit`
default); past it the response's NextCursor says where the next page starts."""

# Partition logs
PRODUCER_BATCHES_RETAINED: Final = 5
"""Batches remembered per idempotent producer for duplicate detection (Kafka keeps 5,
matching max.in.flight.requests.per.connection=5); an older retry gets
OUT_OF_ORDER_SEQUENCE_NUMBER."""
PRODUCER_ID_BLOCK_SIZE: Final = 1_000
"""Producer ids reserved on disk at a time; a crash skips at most this many ids."""
READ_POSITIONS_CACHED: Final = 16
"""Per partition log: remembered (offset -> file position) ends of recent reads, and
as many starts of recent appends (kept apart: appends do not push out read ends), so a
sequential consumer's next read needs no index lookup."""
PRODUCER_SNAPSHOTS_KEPT: Final = 2
"""Producer-state snapshot files kept per partition (older ones are deleted)."""
LOG_UNFLUSHED_BYTES_MAX: Final = 64 * 1024 * 1024
"""Per partition log: bytes appended since the last fsync beyond which a flush is due
whatever flush.ms says. The flusher runs it off the event loop, so a segment roll
(which fsyncs the sealed segment on the appending thread) finds little left to write;
see docs/design/disk-io.md."""
DISK_IO_THREADS_MAX: Final = 4
"""Worker threads the broker runs the logs' blocking disk work in (fsyncs of flush
plans, removal of deleted segments and topic directories): at most this many run at
once, the rest wait their turn in order (server/services/disk_io.py)."""
PRODUCE_RECORDS_ON_LOOP_BYTES_MAX: Final = 16 * 1024
"""A produced batch whose records must be read (recompressed for compression.type, or
keys checked on a compacted topic: log/validation.py) is read on the event loop up to
this size, in a worker thread beyond it (server/handlers/produce.py). At this size the
dearest work, gzip, holds the loop about half a millisecond; the thread hop costs
tens of microseconds (figures in docs/design/compression.md)."""

# Share fetch
SHARE_FETCH_PROBE_BYTES: Final = 64 * 1024
"""A share-partition's acquisition first reads this much of the log to learn the
record size, then reads only what MaxRecords can use (plus one batch), not the whole
MaxBytes: librdkafka asks for 50 MiB per ShareFetch while a share-partition hands out
at most MaxRecords and its in-flight window per request."""

TOPIC_IDS_INTERNED_MAX: Final = 100_000
"""Topic ids kept by the share path's interning table (share/topic_ids.py); past it the
table starts afresh, so topic churn cannot grow it without bound."""

# Fetch
FETCH_WAIT_MS_MAX: Final = 60_000
"""A Fetch's MaxWaitMs is clamped to this so a parked request never outlives the
client's socket timeout (librdkafka closes a connection at 60 s)."""

# Shutdown
SHUTDOWN_DRAIN_MS: Final = 5_000
"""How long graceful shutdown waits for in-flight requests before closing."""

# Coordinators
COORDINATOR_RECORDS_IN_MEMORY_MAX: Final = 250_000
"""Records the in-memory coordinator log (coordinator/runtime.py `InMemoryRecordSink`)
keeps before it refuses writes: a write beyond it fails as a whole, nothing is
replayed, and the group coordinator answers COORDINATOR_NOT_AVAILABLE. Steady
heartbeats write nothing; joins, leaves, expiries and topic changes write a few
records each."""
COORDINATOR_BATCH_BYTES_MAX: Final = 1_048_588
"""Bytes of the one record batch a coordinator append becomes on its internal topic
(coordinator/log_sink.py), Kafka's default `max.message.bytes`: Kafka writes a
coordinator operation's records atomically in one batch bounded by that size. An
append beyond it raises `CoordinatorBatchTooLarge` (a `RecordSinkFull`): nothing is
written or replayed and the caller answers as for a full sink."""
GROUP_LOG_REWRITE_RECORDS_PER_PASS_MAX: Final = 50_000
"""Records one `__consumer_offsets` maintenance pass re-appends at most (whole groups,
at least one: group/log_bound.py); old keys beyond it wait for the next pass, and the
log stays pinned until then."""
COORDINATOR_REWRITE_RECORDS_PER_APPEND: Final = 200
"""Records of a maintenance re-write appended together (one batch per partition);
a chunk whose batch would pass `COORDINATOR_BATCH_BYTES_MAX` is halved."""
COORDINATOR_KEY_BYTES_KEPT: Final = 65_536
"""Record keys whose encoded bytes each coordinator record codec keeps
(coordinator/records.py, `RecordCodec.encode`): the keys a coordinator writes most
(a share-partition's state updates, a group's offset commits) are encoded once;
past it the oldest is dropped and encoded again when next written."""
SHARE_STATE_PLACEMENTS_KEPT: Final = 65_536
"""Share-partition keys whose `__share_group_state` partition the share coordinator
keeps computed (share_coordinator/coordinator.py, `partition_of`); past it the oldest
is dropped and computed again when next asked."""
SHARE_PARTITION_IDLE_UNLOAD_MS: Final = 600_000
"""Default of `shoal.share.partition.idle.unload.ms`: how long a loaded share-partition
may sit unused (nothing acquired) before it is unloaded, so memory follows the
share-partitions in use rather than every one ever touched."""

DLQ_DEDUPE_SCAN_RECORDS_MAX: Final = 10_000
"""Offsets of a dead-letter queue partition searched at most, after a restart, for
copies of records reloaded as ARCHIVING (a crash between a DLQ copy and its ARCHIVED
write leaves the copy behind; server/services/share_dlq.py). The search goes from the DLQ
partition's end backwards and stops once every such record's copy is found, so this
bounds only a search that does not find them all. When it stops at this limit with
older offsets unread, the copies not found are written anyway (never lost) and a
warning names the group, the source partition and offsets and the DLQ offsets
searched: those copies may duplicate one further back (the `__dlq.errors.offset`
header tells them apart). The search runs on the event loop: 10,000 headers-only DLQ
records took 1.3 s at load 10-12 on the 2-core machine (100,000 took 12 s), and
finding copies in the newest chunk about 0.1-0.2 s."""

SHARE_KEY_ORDER_SCAN_MAX_RECORDS: Final = 5_000
"""Key-ordered share groups (`shoal.share.delivery.order=key`): a share-partition holds
back at most this many new records by their key (an earlier record of the key in
flight). They hold no lock and do not count towards `share.partition.max.record.locks`;
at the limit, acquisition takes no new records from the log until some go (a hot key
whose in-flight record is slow stops there). One acquisition also passes over at most
this many held-back records before it stops with what it took (docs/design/key-order.md)."""
SHARE_WINDOW_SPAN_MAX_OFFSETS: Final = 1_000_000
"""Key order or scheduled delivery on: a share-partition's window (start offset to end
offset) spans at most this many offsets. A record waiting for its time, or held back,
pins the start offset while the records behind it are done; the in-flight limit then
counts only the records not done, and this bounds the rest (the done records' state is
kept in memory and in the share-group state). At the limit no new record is taken from
the log until the start offset moves (docs/design/scheduled-delivery.md)."""
SHARE_FETCH_READS_MAX: Final = 4
"""Key order or scheduled delivery on: one ShareFetch reads a share-partition's log at
most this many times. A read that ends among records waiting for their time or held
back by their key is followed by one from the next record that may be taken (records
that came due lie scattered through the window), then by one of the new records past
the window; each read is sized by the records still wanted."""
SHARE_SCHEDULED_RECORDS_MAX: Final = 20_000
"""Scheduled delivery (`shoal.deliver.at`): a share-partition holds at most this many
records waiting for their time. They hold no lock and do not count towards
`share.partition.max.record.locks`; at the limit, acquisition stops at the first new
record that would wait, which with those behind it stays in the log until some come
due (nothing is skipped or lost; docs/design/scheduled-delivery.md)."""
SHARE_BROWSE_ENTRIES_MAX: Final = 1_000
"""Default of `shoal.share.browse.max.entries`: in-flight entries per share-partition one
ShareGroupBrowse (the Shoal extension API) answers at most, whatever it asks for; the
rest is flagged truncated."""
SHARE_BROWSE_ENTRIES_DEFAULT: Final = 100
"""`shoal share-groups --browse`'s `--max` default: entries asked for per partition."""
SHARE_BLOCKED_KEYS_SHOWN: Final = 5
"""Keys holding back the most records that ShareGroupBrowse (so `shoal share-groups
--describe` and `--browse`) and the web console show per key-ordered share-partition
(`SharePartition.delivery_holds(top=...)`); the counts cover every key."""

# Classic groups
OFFSET_METADATA_BYTES_MAX: Final = 4_096
"""Kafka's `offset.metadata.max.bytes` default: longer committed metadata is refused
with OFFSET_METADATA_TOO_LARGE for that partition (group/committed_offsets.py)."""

# ---- web console (server/observability/console/)
CONSOLE_INFLIGHT_ENTRIES_MAX: Final = 1_000
"""Default of `console.inflight.max.records`: in-flight entries per share-partition view."""
CONSOLE_HISTORY_SAMPLES_MAX: Final = 720
"""Chart samples the console keeps (an hour at one every 5 s)."""
CONSOLE_SAMPLE_INTERVAL_MS: Final = 5_000
"""How often the console samples `BrokerMetrics.chart_series` and the lag."""
CONSOLE_EVENT_INTERVAL_MS: Final = 1_000
"""How often a share group's server-sent event stream pushes a new picture."""
CONSOLE_EVENT_STREAMS_MAX: Final = 64
"""Open server-sent event streams at once; one more is answered 503."""

# ---- authorization (security/authorizer.py, server/metadata/acl_store.py)
ACLS_MAX: Final = 100_000
"""ACL bindings the broker keeps at most; a CreateAcls that would pass it gets
INVALID_REQUEST for the bindings beyond it (Kafka bounds ACL changes by its metadata
record limits; Shoal bounds the set, which it rewrites whole on each change)."""
ACL_FILE_BYTES_MAX: Final = 64 << 20
"""An old `acls.json` larger than this is refused by the start-up migration
(server/metadata/migration.py: corrupt or not ours)."""

# SASL (frames before authentication: `sasl.server.max.receive.size`)
SCRAM_MESSAGE_BYTES_MAX: Final = 4_096
"""A SCRAM message longer than this fails the exchange (real ones are a few dozen
bytes): security/scram.py."""
OAUTHBEARER_MESSAGE_BYTES_MAX: Final = 64 * 1024
"""An OAUTHBEARER client message (the token and its framing) longer than this fails
the exchange before the token is parsed: security/oauth.py."""

# Listeners and TLS
SSL_RELOAD_CHECK_INTERVAL_MS_DEFAULT: Final = 5_000
"""Default for `shoal.ssl.reload.check.interval.ms`: how often the broker looks at the
key and trust store files' modification times; a change builds a new SSLContext for the
connections accepted after it."""
SSL_HANDSHAKE_TIMEOUT_MS_DEFAULT: Final = 10_000
"""Default for `shoal.ssl.handshake.timeout.ms`: a TLS handshake not finished within
this closes the connection (logged)."""

# ---- client quotas (security/quota.py, server/metadata/quota_store.py)
QUOTA_ENTITIES_MAX: Final = 10_000
"""Quota entities (user / client-id combinations) the broker keeps at most; an
AlterClientQuotas that would add one more gets INVALID_REQUEST for that entity."""
QUOTA_SENSORS_MAX: Final = 100_000
"""Live rate sensors per quota type; past this the idle ones (no bytes within the
whole quota window, so a rate of 0) are dropped, and the oldest if none is idle."""
QUOTA_FILE_BYTES_MAX: Final = 16 << 20
"""An old `client-quotas.json` larger than this is refused by the start-up migration
(server/metadata/migration.py: corrupt or not ours)."""
METADATA_FILE_BYTES_MAX: Final = 16 << 20
"""An old `scram-credentials.json`, `group-configs.json` or `client-metrics-configs.json`
larger than this is refused by the start-up migration (server/metadata/migration.py:
corrupt or not ours)."""
METADATA_STARTUP_BATCH_BYTES: Final = 512 * 1024
"""The metadata log's start-up writes (an old file migrated, a snapshot) go in appends
of at most about this many bytes (half of `COORDINATOR_BATCH_BYTES_MAX`, so that an
estimate a little short never makes a batch the log refuses)."""
METADATA_COMPACT_RECORDS_MIN: Final = 100_000
"""The metadata log is compacted at start-up (server/metadata/metadata_log.py: the state's
snapshot appended, the history below it deleted) once it holds at least this many
records and more than twice as many as the snapshot."""
