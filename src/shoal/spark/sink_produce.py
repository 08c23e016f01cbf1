"""Producing a sink task's rows: what every task of a write needs (`SinkPlan`, checked
on the driver by `sink.plan_write`), the count of its failed deliveries
(`Deliveries`), and one Arrow batch produced row by row (`produce_batch`).

Shared by the sink's at-least-once path (sink.py) and its transactional one
(sink_transactions.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from shoal.client.security import ClientSecurity

FLUSH_MARGIN_S: Final = 30.0
"""Flush waits this much beyond the delivery timeout (librdkafka fails every record by
then) before giving up on the producer."""
POLL_EVERY_ROWS: Final = 1_000
"""Rows produced between serving delivery callbacks."""
TRANSACTION_TIMEOUT_MS_DEFAULT: Final = 60_000
"""Default of `transactionTimeoutMs` (the producer's `transaction.timeout.ms`): the
coordinator aborts a task's transaction left open longer (a task that died)."""


class SinkError(RuntimeError):
    """Records of a task were not all delivered."""


@dataclass(frozen=True)
class SinkPlan:
    """What every task of a write needs, checked on the driver (`sink.plan_write`)."""

    bootstrap: str
    topic: str | None
    delivery_timeout_ms: int
    columns: frozenset[str]
    exactly_once: bool = False
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS_DEFAULT
    write_id: str = ""
    """Names a batch write's transactional ids (a stream uses its query id)."""
    security: ClientSecurity = field(default_factory=ClientSecurity)
    """From the `kafka.`-prefixed security options."""


class Deliveries:
    """Counts one task's failed records. The producer reports failures only
    (`delivery.report.only.error`), in poll()/flush(); a record whose flush() completed
    without a report was acknowledged."""

    def __init__(self) -> None:
        self.failed = 0
        self.first_error: str | None = None

    def report(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.refused(error, message.topic(), message.partition())

    def refused(self, error: KafkaError, topic: str | None, partition: int | None) -> None:
        """A record failed: in its delivery report, or refused by produce() itself
        (which librdkafka does when it already knows, e.g. of a missing partition)."""
        self.failed += 1
        if self.first_error is None:
            self.first_error = f"{topic}-{partition}: {error.str()} ({error.name()})"


def produce_batch(
    producer: Producer,
    plan: SinkPlan,
    batch: pa.RecordBatch,
    extra_headers: tuple[tuple[str, bytes], ...],
    deliveries: Deliveries,
) -> int:
    rows = int(batch.num_rows)
    names = set(batch.schema.names)
    values = batch.column("value").to_pylist()
    keys = _column(batch, "key", names, plan.columns, rows)
    partitions = _column(batch, "partition", names, plan.columns, rows)
    topics = [plan.topic] * rows if plan.topic else batch.column("topic").to_pylist()
    headers = _headers(batch, names, plan.columns, rows, extra_headers)
    report = deliveries.report
    produce = producer.produce
    for i in range(rows):
        partition = partitions[i]
        while True:
            try:
                produce(
                    topics[i],
                    values[i],
                    keys[i],
                    partition=-1 if partition is None else partition,
                    headers=headers[i],
                    on_delivery=report,
                )
                break
            except BufferError:
                producer.poll(0.1)  # the local queue is full: let deliveries drain it
            except KafkaException as exc:
                deliveries.refused(exc.args[0], topics[i], partition)
                return i + 1
        if i % POLL_EVERY_ROWS == 0:
            producer.poll(0)
    return rows


def _column(
    batch: pa.RecordBatch, name: str, names: set[str], used: frozenset[str], rows: int
) -> list[Any]:
    if name in used and name in names:
        return list(batch.column(name).to_pylist())
    return [None] * rows


def _headers(
    batch: pa.RecordBatch,
    names: set[str],
    used: frozenset[str],
    rows: int,
    extra: tuple[tuple[str, bytes], ...],
) -> list[Any]:
    if "headers" not in used or "headers" not in names:
        return [list(extra) if extra else None] * rows
    result: list[Any] = []
    for row in batch.column("headers").to_pylist():
        pairs = [(h["key"], h["value"]) for h in row] if row else []
        result.append(pairs + list(extra) if pairs or extra else None)
    return result
