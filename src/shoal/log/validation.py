"""What a topic's settings ask of a produced partition's batches beyond their headers:
the part of Kafka's LogValidator that Shoal serves. Sans-I/O.

The Produce handler calls `validate` once per partition, after the batch headers were
checked (protocol/record_batch.py `validate_produced`) and before the log appends.

- One batch per partition per request: Kafka refuses more (INVALID_RECORD, no
  message; "Compressed outer record has more than one batch" in its log) whatever the
  codecs. A header count, on every produce.
- Broker-side compression (compression.type other than `producer`): a batch whose
  codec is not the topic's is inflated and compressed again with the topic's codec at
  its level (compression.<codec>.level); `uncompressed` inflates. A batch already in
  the topic's codec is kept as it is, whatever level it was written at (Kafka
  compares codecs only). The batch stays one batch: producer id, epoch, base
  sequence, the transactional bit, timestamps and the records themselves are kept
  (shoal.protocol.records.recompressed), so idempotent and transactional producers'
  state is unaffected. A batch that grows past max.message.bytes by this is refused
  with MESSAGE_TOO_LARGE, as Kafka checks the size again after recompressing.
- Compacted topics (cleanup.policy holds compact): a record without a key refuses
  its batch with INVALID_RECORD; each such record is listed in the answer's record
  errors (Produce v8+: its index in the batch and Kafka's reason) and the answer's
  message is Kafka's summary of them (the first three).

Everything else is untouched bytes: with `producer` (or the same codec) on a topic
that does not compact, `validate` reads no record and copies nothing. When records
are read, the work is proportional to the batch; the caller decides where to run it
(`reads_records`, server/handlers/produce.py).
"""

from __future__ import annotations

from shoal.log.settings import LogConfig
from shoal.protocol.compression import Codec
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import HEADER_SIZE, BatchError, BatchHeader, parse_header
from shoal.protocol.records import decompressed, keyless_records, recompressed

MORE_THAN_ONE_BATCH = "Compressed outer record has more than one batch"
RECORD_ERRORS_SHOWN = 3
"""Record errors Kafka's summary message quotes (it lists them all in RecordErrors)."""


def recompresses(header: BatchHeader, settings: LogConfig) -> bool:
    """Whether the topic stores the batch in another codec than it came in."""
    target = settings.compression
    return target is not None and target != header.compression


def reads_records(headers: list[BatchHeader], settings: LogConfig) -> bool:
    """Whether `validate` must inflate and read the batch: to recompress it, or to
    check its keys on a compacted topic."""
    return len(headers) == 1 and (settings.compact_policy or recompresses(headers[0], settings))


def validate(
    records: bytes,
    headers: list[BatchHeader],
    settings: LogConfig,
    *,
    topic: str,
    partition: int,
    max_batch_bytes: int,
) -> tuple[bytes, list[BatchHeader]]:
    """The batches to append for `records` (`headers` from validate_produced): the
    same objects when nothing is to change, else the recompressed batch and its
    header. Raises BatchError as Kafka refuses them (module docstring)."""
    if len(headers) > 1:
        raise BatchError(ErrorCode.invalid_record, MORE_THAN_ONE_BATCH)
    if not reads_records(headers, settings):
        return records, headers
    (header,) = headers
    payload = decompressed(records[HEADER_SIZE : header.size], header)
    if settings.compact_policy:
        _check_keys(payload, header, topic=topic, partition=partition)
    if not recompresses(header, settings):
        return records, headers
    target = settings.compression
    assert target is not None
    level = settings.compression_level
    batch = recompressed(records, header, target, level, inflated_records=payload)
    if len(batch) > max_batch_bytes:
        raise BatchError(
            ErrorCode.message_too_large,
            f"batch of {len(batch)} bytes once compressed with {Codec(target).name.lower()} "
            f"exceeds max.message.bytes {max_batch_bytes}",
        )
    return batch, [parse_header(batch)]


def _check_keys(payload: bytes, header: BatchHeader, *, topic: str, partition: int) -> None:
    keyless = keyless_records(payload, header.records_count)
    if not keyless:
        return
    reason = (
        f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
    )
    shown = ", ".join(
        f"RecordError(batchIndex={index}, message='{reason}')"
        for index in keyless[:RECORD_ERRORS_SHOWN]
    )
    raise BatchError(
        ErrorCode.invalid_record,
        f"One or more records have been rejected due to {len(keyless)} record errors in "
        f"total, and only showing the first three errors at most: [{shown}]",
        answered=True,
        record_errors=tuple((index, reason) for index in keyless),
    )
