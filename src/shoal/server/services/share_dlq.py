"""Dead-letter queue copies for share groups (KIP-1191): the shell side.

The share-partition core moves undeliverable records (REJECTed, or at the delivery
limit) to ARCHIVING and hands them out as `DlqCopy` effects once that state is
persisted; `DlqWriter.perform` writes the copies and reports each back with
`SharePartitionManager.dlq_done` (ARCHIVING -> ARCHIVED, persisted). Order, per copy:
ARCHIVING persisted -> DLQ record appended -> ARCHIVED persisted. (With the share
coordinator's append linger on, the staged state writes are flushed to the log before
a copy is appended: `flush_state`.)

- **Checks** (Kafka's, in Kafka's order, re-read at every copy so config changes
  apply at once): the group's `errors.deadletterqueue.topic.name` is set, does not
  start with `__`, names a topic whose `errors.deadletterqueue.group.enable` is true,
  starts with the broker's `errors.deadletterqueue.topic.name.prefix` (default
  `dlq.`; empty allows any) and exists (Shoal never creates it). A failed check is
  logged with Kafka's reason and the records are archived without a copy, as Kafka
  does when a DLQ write fails.
- **The record**: one per source offset, on DLQ partition = source partition modulo
  the DLQ topic's partition count, stamped with the wall clock, with the context
  headers `__dlq.errors.topic`, `.partition`, `.offset`, `.group`,
  `.delivery.count` and `.message` (the reason). With the group's
  `errors.deadletterqueue.copy.record.enable` the original key, value and headers
  come first (inflated from a compressed source batch; a source record no longer in
  the log is copied as headers only, logged). Appended through `PartitionLog.append`, the path
  producers use, in batches within the DLQ topic's `max.message.bytes`.
- **Exactly once across crashes**: a crash after the append but before the ARCHIVED
  write reloads the record as ARCHIVING and it is handed out again, marked
  `recovered`. For recovered copies the DLQ partition is searched once for records
  this broker wrote (uncompressed batches without a producer id) carrying the same
  group, source topic, partition and offset headers; offsets found are not copied
  again. A fresh ARCHIVING record was never copied (its copy starts only after its
  state was persisted), so only recovered ones need the search. It reads the DLQ
  partition from its end backwards (a crash leaves its copies near the end), in
  chunks of `_SCAN_CHUNK_OFFSETS`, stops as soon as every recovered offset is found,
  and covers at most `limits.DLQ_DEDUPE_SCAN_RECORDS_MAX` offsets. When that limit
  stops it with older offsets unread, a recovered copy it did not find is written
  (never lost) and a warning names the group, the source offsets and the DLQ offsets
  searched: such a copy may duplicate one further back (its `__dlq.errors.offset`
  header tells them apart).
- **Counts**: `written` / `refused` / `failed` per group since start, also reported
  to `counted` (the `shoal_share_dlq_records` metric).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kio.records.readers import read_batch
from kio.records.schema import Record, RecordHeader
from kio.serial.errors import SerialError
from kio.static.primitive import TZAwareMicros, i8, i64

from shoal import limits
from shoal.clock import Clock
from shoal.config import BrokerConfig, broker_keys
from shoal.log.api import LogError
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import HEADER_SIZE, BatchError, encode_batch, validate_produced
from shoal.protocol.records import inflated
from shoal.share.dlq import DlqCopy
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.manager import NO_EFFECTS, Effects, SharePartitionManager
from shoal.share.persister import SharePartitionKey

log = logging.getLogger(__name__)

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"
"""KIP-1191 context headers (Kafka's ShareGroupDLQRecordHelper names)."""

TOPIC_ENABLE_KEY = "errors.deadletterqueue.group.enable"
PREFIX_KEY = "errors.deadletterqueue.topic.name.prefix"

_SCAN_READ_BYTES = 1 << 20
"""Bytes per log read while scanning a DLQ partition for earlier copies."""
_SCAN_CHUNK_OFFSETS = 1_000
"""Offsets of the DLQ partition read forward at a time while searching it backwards."""
_SOURCE_READ_BYTES = 1 << 20
"""Bytes per log read of a source record to copy (Kafka's DLQ fetch size)."""
_NO_PRODUCER = -1
_LEADER_EPOCH = 0


@dataclass(slots=True)
class DlqCounts:
    """DLQ outcomes of one group since the broker started."""

    written: int = 0
    refused: int = 0
    """Records archived without a copy because a check failed."""
    failed: int = 0
    """Records archived without a copy because the append failed."""


@dataclass(slots=True)
class DlqWriter:
    """Writes the DLQ copies the share-partition manager asks for (module docstring)."""

    clock: Clock
    config: Callable[[], BrokerConfig]
    logs: LogManager
    partitions: SharePartitionManager
    settings_for: Callable[[str], SharePartitionConfig]
    counted: Callable[[str, str, int], None] = lambda _group, _outcome, _records: None
    """Told (group, "written" | "refused" | "failed", records) after each copy (metrics)."""
    flush_state: Callable[[], None] = lambda: None
    """Writes share state staged by the append linger to the log: called before any
    copy, so an ARCHIVING state is in the log before its copy is."""
    counts: dict[str, DlqCounts] = field(default_factory=dict)
    scan_records_max: int = limits.DLQ_DEDUPE_SCAN_RECORDS_MAX
    """How many offsets of a DLQ partition the dedupe search covers at most."""

    def perform(self, key: SharePartitionKey) -> Effects:
        """Copy what `key` hands out, then archive it; returns the effects (the
        ARCHIVED state writes among them, for the caller to make)."""
        sp = self.partitions.get(key)
        if sp is None:
            return NO_EFFECTS
        copies = sp.dlq_copies()
        if not copies:
            return NO_EFFECTS
        self.flush_state()
        counts = self.counts.setdefault(key.group_id, DlqCounts())
        records = sum(c.last_offset - c.first_offset + 1 for c in copies)
        target = self._check(key.group_id)
        if isinstance(target, str):
            counts.refused += records
            self.counted(key.group_id, "refused", records)
            log.warning(
                "share group %s: %d records of %s-%d archived without a DLQ copy: %s",
                key.group_id,
                records,
                key.topic_id,
                key.partition,
                target,
            )
        else:
            try:
                written = self._copy(key, copies, target)
                counts.written += written
                self.counted(key.group_id, "written", written)
            except (LogError, BatchError) as exc:
                counts.failed += records
                self.counted(key.group_id, "failed", records)
                log.warning(
                    "share group %s: DLQ append of %d records of %s-%d failed, archived "
                    "without a copy: %s",
                    key.group_id,
                    records,
                    key.topic_id,
                    key.partition,
                    exc,
                )
        effects = NO_EFFECTS
        settings = self.settings_for(key.group_id)
        for copy in copies:
            effects |= self.partitions.dlq_done(
                key,
                first_offset=copy.first_offset,
                last_offset=copy.last_offset,
                settings=settings,
            )
        return effects

    # ---- checks

    def _check(self, group_id: str) -> str | tuple[str, int]:
        """(DLQ topic, partition count), or why no copy can be written."""
        topic = self.settings_for(group_id).dlq_topic
        if not topic:
            return f"Configured DLQ topic name in share group: {group_id} is empty."
        if topic.startswith("__"):
            return (
                f"Configured DLQ topic name in share group: {group_id} cannot start with __, "
                f"topic: {topic}."
            )
        info = self.logs.topic(topic)
        if info is not None and not info.configs.get(TOPIC_ENABLE_KEY, False):
            return (
                f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, "
                f"topic: {topic} (set the topic config {TOPIC_ENABLE_KEY}=true)"
            )
        prefix = str(self.config()[PREFIX_KEY] or "")
        if prefix and not topic.startswith(prefix):
            return (
                "Configured DLQ topic name does not comply with the DLQ topic prefix in share "
                f"group: {group_id}, topic: {topic}, prefix: {prefix}"
            )
        if info is None:
            return (
                f"DLQ topic does not exist and auto create is disabled on cluster for share "
                f"group: {group_id}, topic: {topic}."
            )
        return topic, info.partitions

    # ---- copying

    def _copy(
        self, key: SharePartitionKey, copies: tuple[DlqCopy, ...], target: tuple[str, int]
    ) -> int:
        topic, partition_count = target
        dlq_partition = key.partition % partition_count
        dlq_log = self.logs.partition(topic, dlq_partition)
        if dlq_log is None:
            raise LogError(
                ErrorCode.unknown_topic_or_partition, f"no DLQ partition {topic}-{dlq_partition}"
            )
        source_info = self.logs.topic_by_id(key.topic_id)
        source_topic = str(key.topic_id) if source_info is None else source_info.name
        source_log = None
        if source_info is not None:
            source_log = self.logs.partition(source_info.name, key.partition)
        copy_record = self.settings_for(key.group_id).dlq_copy_record
        recovered = {
            offset
            for c in copies
            if c.recovered
            for offset in range(c.first_offset, c.last_offset + 1)
        }
        scan = ScanResult(frozenset(), dlq_log.log_end_offset, complete=True)
        if recovered:
            scan = copied_offsets(
                dlq_log,
                group_id=key.group_id,
                topic=source_topic,
                partition=key.partition,
                wanted=recovered,
                max_offsets=self.scan_records_max,
            )
            unverified = sorted(recovered - scan.found)
            if unverified and not scan.complete:
                log.warning(
                    "share group %s: DLQ dedupe search of %s-%d stopped at its limit of %d "
                    "offsets (searched %d-%d, not %d-%d); %d recovered "
                    "copies of %s-%d (offsets %d to %d) not found there are written and may "
                    "duplicate copies further back",
                    key.group_id,
                    topic,
                    dlq_partition,
                    self.scan_records_max,
                    scan.searched_from,
                    dlq_log.log_end_offset - 1,
                    dlq_log.log_start_offset,
                    scan.searched_from - 1,
                    len(unverified),
                    source_topic,
                    key.partition,
                    unverified[0],
                    unverified[-1],
                )
        now = self.clock.wall_ms()
        records: list[Record] = []
        for copy in copies:
            for offset in range(copy.first_offset, copy.last_offset + 1):
                if copy.recovered and offset in scan.found:
                    log.info(
                        "share group %s: DLQ copy of %s-%d offset %d found in %s-%d after a "
                        "restart; not written again",
                        key.group_id,
                        source_topic,
                        key.partition,
                        offset,
                        topic,
                        dlq_partition,
                    )
                    continue
                original = None
                if copy_record and source_log is not None:
                    original = _source_record(source_log, offset)
                records.append(
                    dlq_record(
                        original,
                        index=len(records),
                        headers=(
                            (HEADER_TOPIC, source_topic),
                            (HEADER_PARTITION, str(key.partition)),
                            (HEADER_OFFSET, str(offset)),
                            (HEADER_GROUP, key.group_id),
                            (HEADER_DELIVERY_COUNT, str(copy.delivery_count)),
                            (HEADER_MESSAGE, copy.reason),
                        ),
                    )
                )
        info = self.logs.topic(topic)
        assert info is not None
        max_bytes = int(
            info.configs.get("max.message.bytes", self.config().get(broker_keys.MESSAGE_MAX_BYTES))
        )
        for data in dlq_batches(records, timestamp_ms=now, max_bytes=max_bytes):
            headers = validate_produced(data, max_batch_bytes=max(max_bytes, len(data)))
            dlq_log.append(data, headers, leader_epoch=_LEADER_EPOCH)
        return len(records)


def dlq_record(
    original: Record | None, *, index: int, headers: tuple[tuple[str, str], ...]
) -> Record:
    """The copy of `original` (None: headers only) with the context `headers` after
    its own. A kio `Record`, the type the source record is read as; `encode_batch`
    writes its key, value and headers, stamps the batch's time on every record and
    numbers them by their place in the batch (the timestamp and offset here are
    placeholders)."""
    context = tuple(RecordHeader(key=k.encode(), value=v.encode()) for k, v in headers)
    return Record(
        attributes=i8(0),
        timestamp=_PLACEHOLDER_TIME,
        offset=i64(index),
        key=None if original is None else original.key,
        value=None if original is None else original.value,
        headers=(() if original is None else original.headers) + context,
    )


_PLACEHOLDER_TIME = TZAwareMicros.parse(datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC))


def dlq_batches(records: list[Record], *, timestamp_ms: int, max_bytes: int) -> Iterator[bytes]:
    """Encode `records` as batches of at most `max_bytes` (a single record larger than
    that goes alone; the append refuses it). Linear: each record's size is measured
    once, alone in a batch, plus `_RECORD_SIZE_SLACK`, and each batch encoded once (a
    batch over the bound all the same is halved)."""
    pending: list[Record] = []
    size = HEADER_SIZE
    for record in records:
        grown = len(_encode([record], timestamp_ms)) - HEADER_SIZE + _RECORD_SIZE_SLACK
        if pending and size + grown > max_bytes:
            yield from _fitted(pending, timestamp_ms, max_bytes)
            pending, size = [], HEADER_SIZE
        pending.append(record)
        size += grown
    if pending:
        yield from _fitted(pending, timestamp_ms, max_bytes)


_RECORD_SIZE_SLACK = 8
"""Bytes a record may take in a batch beyond its size alone at offset delta 0: its
offset delta and length varints grow with its place in the batch (5 bytes each at
most, 1 at least)."""


def _fitted(records: list[Record], timestamp_ms: int, max_bytes: int) -> Iterator[bytes]:
    data = _encode(records, timestamp_ms)
    if len(data) <= max_bytes or len(records) == 1:
        yield data
        return
    half = len(records) // 2
    yield from _fitted(records[:half], timestamp_ms, max_bytes)
    yield from _fitted(records[half:], timestamp_ms, max_bytes)


def _encode(records: list[Record], timestamp_ms: int) -> bytes:
    return encode_batch(
        [(r.key, r.value) for r in records],
        timestamp_ms=timestamp_ms,
        producer_id=_NO_PRODUCER,
        partition_leader_epoch=_LEADER_EPOCH,
        headers=[[(h.key, h.value) for h in r.headers] for r in records],
    )


def _source_record(source: PartitionLog, offset: int) -> Record | None:
    """The record at `offset` of the source log (inflated from a compressed batch), or
    None when it is gone or undecodable."""
    try:
        read = source.read(offset, max_bytes=_SOURCE_READ_BYTES)
    except LogError as exc:
        log.info("DLQ copy of offset %d: source record unreadable (%s); headers only", offset, exc)
        return None
    for header in read.headers:
        if header.base_offset <= offset <= header.last_offset and not header.is_control:
            try:
                if header.compression:
                    end = header.position + header.size
                    plain = inflated(bytes(read.records[header.position : end]), header)
                    batch, _ = read_batch(plain, 0)
                else:
                    batch, _ = read_batch(read.records, header.position)
            except (ValueError, SerialError, BatchError) as exc:
                log.warning("DLQ copy of offset %d: undecodable source batch: %s", offset, exc)
                return None
            for record in batch.records:
                if int(record.offset) == offset:
                    return record
    return None


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What a dedupe search of a DLQ partition found."""

    found: frozenset[int]
    """Source offsets whose copy is on the DLQ partition."""
    searched_from: int
    """The first DLQ offset searched (offsets from there to the end were)."""
    complete: bool
    """Every wanted offset was found, or the whole partition was searched."""


def copied_offsets(
    dlq: PartitionLog,
    *,
    group_id: str,
    topic: str,
    partition: int,
    wanted: set[int],
    max_offsets: int,
) -> ScanResult:
    """Which of the `wanted` source offsets of `group_id`'s `topic`-`partition` this
    broker already copied to `dlq` (uncompressed batches without a producer id):
    chunks of offsets from the end backwards, stopping once all are found or
    `max_offsets` offsets were searched (see the module docstring)."""
    header_values = {
        HEADER_GROUP.encode(): group_id.encode(),
        HEADER_TOPIC.encode(): topic.encode(),
        HEADER_PARTITION.encode(): str(partition).encode(),
    }
    found: set[int] = set()
    high = dlq.log_end_offset
    budget = max_offsets
    while high > dlq.log_start_offset and budget > 0 and not wanted <= found:
        low = max(dlq.log_start_offset, high - min(_SCAN_CHUNK_OFFSETS, budget))
        found |= _copies_in(dlq, low, high, header_values) & wanted
        budget -= high - low
        high = low
    complete = high <= dlq.log_start_offset or wanted <= found
    return ScanResult(frozenset(found), high, complete=complete)


def _copies_in(
    dlq: PartitionLog, low: int, high: int, header_values: dict[bytes, bytes]
) -> set[int]:
    """`__dlq.errors.offset` of the records in the batches of `dlq` starting below
    `high` from the one holding `low` on, whose headers match `header_values`."""
    offset_key = HEADER_OFFSET.encode()
    found: set[int] = set()
    position = low
    while position < high:
        read = dlq.read(position, max_bytes=_SCAN_READ_BYTES, max_offset=high)
        if not read.headers:
            break
        for header in read.headers:
            if header.is_control or header.compression or header.producer_id != _NO_PRODUCER:
                continue
            try:
                batch, _ = read_batch(read.records, header.position)
            except (ValueError, SerialError) as exc:
                log.warning("DLQ scan of %s: undecodable batch skipped: %s", dlq, exc)
                continue
            for record in batch.records:
                values = {h.key: h.value for h in record.headers}
                if all(values.get(k) == v for k, v in header_values.items()):
                    raw = values.get(offset_key)
                    if raw is not None and raw.isdigit():
                        found.add(int(raw))
        position = read.headers[-1].next_offset
    return found
