"""`format("shoal")` as a sink: `df.write` and `writeStream` produce rows as records.

Columns, as Spark's Kafka sink takes them: `value` (binary or string, required), and
optionally `key` (binary or string), `headers` (array<struct<key string, value
binary>>), `partition` (int; null lets the producer choose) and `topic` (string, used
when the `topic` option is not given). Other columns are ignored. The schema and the
options are checked on the driver (`create`), so a mistake fails before any task.

Each task produces its Arrow batches through its worker process's confluent-kafka
Producer (idempotent, acks=all; cached per process and options, since Spark reuses
Python workers), flushes at the end and raises if any record's delivery failed or did
not complete within `deliveryTimeoutMs`: the task fails and Spark retries it. A retry
produces its rows again, so the sink is at least once. Streaming writes add the
headers `spark.queryId`, `spark.batchId` and `spark.partition` so that consumers can
drop the duplicates of a replayed micro-batch; `commit()` has nothing to do.

`exactlyOnce=true` (opt in) writes each task's rows in one Kafka transaction, with a
`transactional.id` of `shoal-spark-<query id>-<partition>` for a stream
(`shoal-spark-<write id>-<partition>` for `df.write`, the write id drawn once on the
driver): the task calls `init_transactions` (which fences any earlier attempt of the
same task and aborts its open transaction), produces, and commits the transaction at
the end of `write()`. A read_committed consumer therefore sees a task's rows all at
once or not at all: a task that fails, or an attempt fenced by its retry (a zombie
executor, a speculative copy), leaves nothing visible.

What it cannot do: commit the transactions when Spark commits the epoch. Spark's
Python writer API runs `write()` on executors and `commit(messages, batchId)` on the
driver in another process with a fresh writer; a Kafka transaction is committed only
by the producer that holds its producer id and epoch, and Kafka has no "commit another
producer's transaction" short of KIP-939's two-phase commit (`InitProducerId` with
`keepPreparedTxn`), which Shoal does not serve. So the guarantee is per task, not per
epoch. A stream task therefore also commits, in its transaction, a marker that its
batch is written, and a replayed batch's task that finds the marker writes nothing
(`sink_transactions`, which says what that needs: the same rows per task on replay).
Producing the rows of one Arrow batch (`sink_produce`) is shared by both paths.
The `spark.queryId` / `spark.batchId` / `spark.partition` headers still identify the
origin of every record.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
from confluent_kafka import Producer
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from shoal.client.security import ClientSecurity
from shoal.config import broker_keys
from shoal.spark.options import (
    BOOTSTRAP_SERVERS,
    OptionError,
    OptionSpec,
    int_parser,
    parse_bool,
    parse_options,
    parse_topic,
    require_reachable,
)
from shoal.spark.sink_produce import (
    FLUSH_MARGIN_S,
    TRANSACTION_TIMEOUT_MS_DEFAULT,
    Deliveries,
    SinkError,
    SinkPlan,
    produce_batch,
)
from shoal.spark.sink_transactions import produce_in_transaction

log = logging.getLogger(__name__)

NAME: Final = "shoal"
DELIVERY_TIMEOUT_MS_DEFAULT: Final = 120_000
"""Default of `deliveryTimeoutMs` (librdkafka's `message.timeout.ms`): a record not
acknowledged by then fails its task."""
TRANSACTIONAL_ID_PREFIX: Final = "shoal-spark-"

TOPIC: Final = OptionSpec[str | None]("topic", parse_topic, None, help="one topic name")
DELIVERY_TIMEOUT_MS: Final = OptionSpec(
    "deliveryTimeoutMs",
    int_parser(1, 3_600_000),
    DELIVERY_TIMEOUT_MS_DEFAULT,
    help="milliseconds, at most 3600000",
)
EXACTLY_ONCE: Final = OptionSpec(
    "exactlyOnce",
    parse_bool,
    False,
    help="true (one transaction per task, see the module docstring) or false",
)
_TRANSACTION_TIMEOUT_MS_MAX = broker_keys.TRANSACTION_MAX_TIMEOUT_MS.default
TRANSACTION_TIMEOUT_MS: Final = OptionSpec(
    "transactionTimeoutMs",
    int_parser(1_000, _TRANSACTION_TIMEOUT_MS_MAX),
    TRANSACTION_TIMEOUT_MS_DEFAULT,
    help=f"milliseconds between 1000 and {_TRANSACTION_TIMEOUT_MS_MAX} (the broker's "
    "default transaction.max.timeout.ms)",
)
WRITE_OPTIONS: Final = (
    BOOTSTRAP_SERVERS,
    TOPIC,
    DELIVERY_TIMEOUT_MS,
    EXACTLY_ONCE,
    TRANSACTION_TIMEOUT_MS,
)


@dataclass(frozen=True)
class SinkCommit(WriterCommitMessage):
    """What one task wrote."""

    records: int


def plan_write(raw: Mapping[str, str], schema: StructType) -> SinkPlan:
    options = parse_options(raw, WRITE_OPTIONS, source=NAME)
    types: dict[str, DataType] = {field.name: field.dataType for field in schema.fields}
    _check_column(types, "value", (BinaryType, StringType), required=True)
    _check_column(types, "key", (BinaryType, StringType))
    _check_column(types, "partition", (IntegerType,))
    _check_column(types, "topic", (StringType,))
    if "headers" in types and not _is_headers_type(types["headers"]):
        raise OptionError(
            f"column 'headers' is {types['headers'].simpleString()}; the sink needs "
            "array<struct<key:string,value:binary>>"
        )
    topic = options.value(TOPIC)
    if topic is None and "topic" not in types:
        raise OptionError(
            f"option 'topic' is required by format(\"{NAME}\") when the data has no 'topic' column"
        )
    bootstrap = options.value(BOOTSTRAP_SERVERS)
    require_reachable(bootstrap, security=options.security)
    used = {"value", "key", "partition", "headers"} | ({"topic"} if not topic else set())
    return SinkPlan(
        bootstrap=bootstrap,
        security=options.security,
        topic=topic,
        delivery_timeout_ms=options.value(DELIVERY_TIMEOUT_MS),
        columns=frozenset(used & set(types)),
        exactly_once=options.value(EXACTLY_ONCE),
        transaction_timeout_ms=options.value(TRANSACTION_TIMEOUT_MS),
        write_id=uuid.uuid4().hex,
    )


def _check_column(
    types: Mapping[str, DataType], name: str, allowed: tuple[type, ...], *, required: bool = False
) -> None:
    if name not in types:
        if required:
            raise OptionError(
                f"the data written to format(\"{NAME}\") needs a '{name}' column; it has "
                + ", ".join(repr(n) for n in types)
            )
        return
    if not isinstance(types[name], allowed):
        expected = " or ".join(t().simpleString() for t in allowed)
        raise OptionError(
            f"column '{name}' is {types[name].simpleString()}; the sink needs {expected}"
        )


def _is_headers_type(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = {f.name: f.dataType for f in data_type.elementType.fields}
    return (
        set(fields) == {"key", "value"}
        and isinstance(fields["key"], StringType)
        and isinstance(fields["value"], BinaryType)
    )


class ShoalBatchWriter(DataSourceArrowWriter):
    """`df.write.format("shoal")`: each task produces its rows."""

    def __init__(self, plan: SinkPlan) -> None:
        self._plan = plan

    @classmethod
    def create(cls, raw: Mapping[str, str], schema: StructType) -> ShoalBatchWriter:
        return cls(plan_write(raw, schema))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        transactional_id = _transactional_id(self._plan, stream=False)
        return SinkCommit(
            records=produce_batches(self._plan, iterator, (), transactional_id=transactional_id)
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("wrote %d records", sum(m.records for m in messages if isinstance(m, SinkCommit)))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("write aborted; records of finished tasks stay in their topics")


class ShoalStreamWriter(DataSourceStreamArrowWriter):
    """`writeStream.format("shoal")`: each micro-batch's tasks produce their rows, with
    headers identifying the query, batch and partition."""

    def __init__(self, plan: SinkPlan) -> None:
        self._plan = plan

    @classmethod
    def create(cls, raw: Mapping[str, str], schema: StructType) -> ShoalStreamWriter:
        return cls(plan_write(raw, schema))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        transactional_id = _transactional_id(self._plan, stream=True)
        return SinkCommit(
            records=produce_batches(
                self._plan,
                iterator,
                _stream_headers(),
                transactional_id=transactional_id,
                batch_id=_stream_batch_id(),
            )
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total = sum(m.records for m in messages if isinstance(m, SinkCommit))
        log.info("micro-batch %d: wrote %d records", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("micro-batch %d aborted; it is written again when replayed", batchId)


def _stream_batch_id() -> int | None:
    from pyspark import TaskContext

    context = TaskContext.get()
    batch_id = None if context is None else context.getLocalProperty("streaming.sql.batchId")
    return int(batch_id) if batch_id else None


def _stream_headers() -> tuple[tuple[str, bytes], ...]:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return ()
    return (
        ("spark.queryId", (context.getLocalProperty("sql.streaming.queryId") or "").encode()),
        ("spark.batchId", (context.getLocalProperty("streaming.sql.batchId") or "").encode()),
        ("spark.partition", str(context.partitionId()).encode()),
    )


def _transactional_id(plan: SinkPlan, *, stream: bool) -> str | None:
    """The task's transactional.id in exactlyOnce mode (None otherwise): the same for
    every attempt of a task, so a retry fences the attempt before it."""
    if not plan.exactly_once:
        return None
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise SinkError("exactlyOnce needs a Spark task context (write() runs in a task)")
    owner = (context.getLocalProperty("sql.streaming.queryId") or "") if stream else ""
    return f"{TRANSACTIONAL_ID_PREFIX}{owner or plan.write_id}-{context.partitionId()}"


# ---- producing

_PRODUCERS: dict[tuple[int, str, int, ClientSecurity], Producer] = {}
_PRODUCERS_LOCK = threading.Lock()


def _producer(plan: SinkPlan) -> Producer:
    # never a parent's producer
    key = (os.getpid(), plan.bootstrap, plan.delivery_timeout_ms, plan.security)
    with _PRODUCERS_LOCK:
        producer = _PRODUCERS.get(key)
        if producer is None:
            producer = _PRODUCERS[key] = Producer(
                {
                    "bootstrap.servers": plan.bootstrap,
                    "enable.idempotence": True,
                    "acks": "all",
                    "message.timeout.ms": plan.delivery_timeout_ms,
                    "linger.ms": 5,
                    "delivery.report.only.error": True,
                    "client.id": "shoal-spark-sink",
                    **plan.security.librdkafka_config(),
                }
            )
        return producer


def _discard_producer(plan: SinkPlan) -> None:
    """After a failure the producer may be fatally errored (idempotence): drop it."""
    with _PRODUCERS_LOCK:
        _PRODUCERS.pop((os.getpid(), plan.bootstrap, plan.delivery_timeout_ms, plan.security), None)


def produce_batches(
    plan: SinkPlan,
    batches: Iterator[pa.RecordBatch],
    extra_headers: tuple[tuple[str, bytes], ...],
    *,
    transactional_id: str | None = None,
    batch_id: int | None = None,
) -> int:
    """Produce every row, wait for all deliveries; the number of records, or SinkError.
    With a `transactional_id`, in one transaction committed at the end (and, with the
    stream's `batch_id`, skipped when that batch's task already committed:
    `sink_transactions`)."""
    if transactional_id is not None:
        return produce_in_transaction(
            plan, batches, extra_headers, transactional_id=transactional_id, batch_id=batch_id
        )
    producer = _producer(plan)
    deliveries = Deliveries()
    produced = 0
    try:
        for batch in batches:
            produced += produce_batch(producer, plan, batch, extra_headers, deliveries)
            if deliveries.failed:
                break  # the task fails anyway: stop producing, report what failed
    except (BufferError, TypeError, ValueError) as exc:  # e.g. a null topic
        _discard_producer(plan)
        producer.flush(plan.delivery_timeout_ms / 1000 + FLUSH_MARGIN_S)
        raise SinkError(
            f"producing to {plan.bootstrap} failed after {produced} records: {exc}"
        ) from exc
    undelivered = producer.flush(plan.delivery_timeout_ms / 1000 + FLUSH_MARGIN_S)
    if deliveries.failed or undelivered:
        _discard_producer(plan)
        unacknowledged = (
            f", {undelivered} not acknowledged within deliveryTimeoutMs "
            f"{plan.delivery_timeout_ms} + {FLUSH_MARGIN_S:.0f} s"
            if undelivered
            else ""
        )
        raise SinkError(
            f"{deliveries.failed} of {produced} records failed{unacknowledged} "
            f"(deliveryTimeoutMs {plan.delivery_timeout_ms}); first error: "
            f"{deliveries.first_error}"
        )
    return produced
