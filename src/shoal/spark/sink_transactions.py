"""The sink's `exactlyOnce` mode: one Kafka transaction per Spark task, and a guard
against writing a replayed micro-batch twice.

A task's transactional.id is the same for every attempt of the task
(`shoal-spark-<query id>-<partition>`, `sink._transactional_id`), so
`init_transactions` fences an earlier attempt still running (a zombie) and aborts its
open transaction; the task then produces its rows and commits at the end of `write()`.

Spark commits an epoch on the driver (`commit(messages, batchId)`), in another process
than the tasks' producers, and only the producer holding a transaction can commit it
(Kafka's way around that, KIP-939 two-phase commit, is not served by Shoal). So the
transactions cannot wait for the epoch commit. Instead a stream task records, in the
same transaction, that its batch is written: a transactional offset commit
(TxnOffsetCommit, as `send_offsets_to_transaction` sends it) of offset `batchId + 1`
for the group named after the transactional.id, on partition 0 of the first output
topic (any existing partition does; the offset is a marker, not a read position).
Before writing, a task reads that group's stable committed offset (OffsetFetch with
require_stable, after `init_transactions` has settled any earlier attempt); if it is
already past `batchId`, the batch's output for this task is committed and the task
writes nothing. A micro-batch Spark replays after a crash (tasks committed, `commits/N`
not yet written) therefore adds no duplicates.

What must hold for that: a replayed batch gives each task (partition id) the same rows
as the first run, which Spark's deterministic replay of offset-based sources gives for
plans without non-deterministic repartitioning; the output topic (or the first row's
`topic`) must exist. Batch writes (`df.write`) have no batch id: each write is its own
transactions, no replay guard.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final

import pyarrow as pa
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from shoal.spark.sink_produce import (
    FLUSH_MARGIN_S,
    Deliveries,
    SinkError,
    SinkPlan,
    produce_batch,
)

log = logging.getLogger(__name__)

MARKER_PARTITION: Final = 0
"""Partition of the output topic the written-batch marker offset is committed on."""


def produce_in_transaction(
    plan: SinkPlan,
    batches: Iterator[pa.RecordBatch],
    extra_headers: tuple[tuple[str, bytes], ...],
    *,
    transactional_id: str,
    batch_id: int | None,
) -> int:
    """One transaction for the task: fence earlier attempts, skip a batch already
    written (stream), produce, commit; records written, or SinkError after aborting."""
    timeout_s = plan.delivery_timeout_ms / 1000 + FLUSH_MARGIN_S
    producer = Producer(
        {
            "bootstrap.servers": plan.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": plan.transaction_timeout_ms,
            "message.timeout.ms": min(plan.delivery_timeout_ms, plan.transaction_timeout_ms),
            "linger.ms": 5,
            "delivery.report.only.error": True,
            "client.id": "shoal-spark-sink",
            **plan.security.librdkafka_config(),
        }
    )
    deliveries = Deliveries()
    produced = 0
    marker = None if batch_id is None else _Marker(plan, transactional_id)
    try:
        producer.init_transactions(timeout_s)
        first = next(batches, None)
        if first is None:
            return 0
        if marker is not None:
            assert batch_id is not None
            marker.topic = plan.topic or str(first.column("topic")[0].as_py())
            if marker.written_through(timeout_s) > batch_id:
                log.info(
                    "transaction %s: batch %d was already committed; replay writes nothing",
                    transactional_id,
                    batch_id,
                )
                return 0
        producer.begin_transaction()
        for batch in _chain(first, batches):
            produced += produce_batch(producer, plan, batch, extra_headers, deliveries)
            if deliveries.failed:
                break
        if producer.flush(timeout_s) or deliveries.failed:
            raise SinkError(
                f"{deliveries.failed} of {produced} records failed in transaction "
                f"{transactional_id}; first error: {deliveries.first_error}"
            )
        if marker is not None:
            assert batch_id is not None
            marker.record(producer, batch_id, timeout_s)
        producer.commit_transaction(timeout_s)
    except (KafkaException, SinkError, BufferError, TypeError, ValueError) as exc:
        _abort_quietly(producer, transactional_id, timeout_s)
        raise SinkError(
            f"transaction {transactional_id} to {plan.bootstrap} failed after {produced} "
            f"records: {exc}"
        ) from exc
    finally:
        producer.close()
        if marker is not None:
            marker.close()
    log.info("transaction %s committed %d records", transactional_id, produced)
    return produced


def _chain(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


class _Marker:
    """The group `transactional_id` whose committed offset on (topic, 0) is the next
    batch id this task has not written."""

    def __init__(self, plan: SinkPlan, group: str) -> None:
        self.group = group
        self.topic = plan.topic or ""
        self._consumer = Consumer(
            {
                "bootstrap.servers": plan.bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",  # OffsetFetch require_stable
                "client.id": "shoal-spark-sink",
                **plan.security.librdkafka_config(),
            }
        )

    def written_through(self, timeout_s: float) -> int:
        """The committed marker offset (batches below it are written), 0 when none."""
        (found,) = self._consumer.committed(
            [TopicPartition(self.topic, MARKER_PARTITION)], timeout=timeout_s
        )
        if found.error is not None:
            raise KafkaException(found.error)
        return max(int(found.offset), 0)

    def record(self, producer: Producer, batch_id: int, timeout_s: float) -> None:
        """Commit `batch_id + 1` in the producer's open transaction."""
        producer.send_offsets_to_transaction(
            [TopicPartition(self.topic, MARKER_PARTITION, batch_id + 1)],
            self._consumer.consumer_group_metadata(),
            timeout_s,
        )

    def close(self) -> None:
        self._consumer.close()


def _abort_quietly(producer: Producer, transactional_id: str, timeout_s: float) -> None:
    """Abort after a failure; a fenced or fatally failed producer cannot, and then the
    next attempt's init_transactions or the transaction timeout aborts it."""
    try:
        producer.abort_transaction(timeout_s)
    except KafkaException as exc:
        log.warning(
            "could not abort transaction %s (left to fencing or its timeout): %s",
            transactional_id,
            exc,
        )
