"""`readStream.format("shoal")` end to end: a real broker, the shared local[2] Spark
session, Parquet output.

What is checked: an AvailableNow stream with `maxOffsetsPerTrigger` copies a topic in
limited batches, each record once, and a second run from the checkpoint copies only
what came since, a new partition from its start; `commitToGroup` leaves the group's lag
at 0 (`shoal consumer-groups --describe`) after each run; `startingOffsets` (JSON and
latest) and `includeHeaders`; records deleted before the stream read them fail the
query (`failOnDataLoss`, default) or are skipped; option mistakes are named; and the
kill test: a query killed (SIGKILL) in the middle of a batch and restarted from
its checkpoint writes every record exactly once, and the group's lag reads 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from shoal.client import requests
from tests.spark.stream_child import kill_in_a_batch
from tests.support.broker import BrokerProcess
from tests.support.cli import rows, shoal
from tests.support.clients import consumer, create_topic, flush_all, make_records, producer
from tests.support.share_wire import produce_values
from tests.support.topics import topic_name
from tests.support.wire import call1

QUERY_TIMEOUT_S = 240


def _stream(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    return (
        spark.readStream.format("shoal")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .options(**options)
        .load()
    )


def _run_available_now(stream: Any, out: Path, checkpoint: Path) -> Any:
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    return query


def _copied(spark: Any, out: Path) -> Counter[tuple[int, int]]:
    """How often each (partition, offset) is in the committed output."""
    rows_ = spark.read.parquet(str(out)).select("partition", "offset").collect()
    return Counter((r.partition, r.offset) for r in rows_)


def _offsets(ends: dict[int, int], starts: dict[int, int] | None = None) -> set[tuple[int, int]]:
    starts = starts or {}
    return {(p, o) for p, end in ends.items() for o in range(starts.get(p, 0), end)}


def _lag(bootstrap: str, group: str) -> dict[int, tuple[str, str, str]]:
    """CURRENT-OFFSET, LOG-END-OFFSET and LAG per partition, from the CLI."""
    done = shoal("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    assert done.returncode == 0, done.stderr
    return {
        int(r["PARTITION"]): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"])
        for r in rows(done.stdout)
        if r.get("GROUP") == group
    }


def _at_end(ends: dict[int, int]) -> dict[int, tuple[str, str, str]]:
    return {p: (str(end), str(end), "0") for p, end in ends.items()}


def _batch_sizes(query: Any) -> list[int]:
    return [int(p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]]


def _delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, partition, before)]).values():
        future.result(timeout=30)


# ---- the tests


def test_available_now_copies_in_limited_batches_then_what_came_since(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("topic-stream")
    create_topic(bootstrap, topic, partitions=2)
    produce_values(bootstrap, topic, 200, 100, partition=0)
    produce_values(bootstrap, topic, 100, partition=1)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "120",
        "commitToGroup": "copier",
    }
    query = _run_available_now(_stream(spark, bootstrap, topic, **options), out, checkpoint)
    sizes = _batch_sizes(query)
    assert sum(sizes) == 400 and len(sizes) >= 4
    assert max(sizes) <= 120 + 2  # each partition with a backlog gets at least one
    ends = {0: 300, 1: 100}
    copied = _copied(spark, out)
    assert set(copied) == _offsets(ends) and set(copied.values()) == {1}
    assert _lag(bootstrap, "copier") == _at_end(ends)

    # more records, and a partition created since: the next run reads only those
    produce_values(bootstrap, topic, 30, partition=1)
    response = call1(bootstrap, requests.create_partitions({topic: 3}))
    assert all(r.error_code == 0 for r in response.results), response
    produce_values(bootstrap, topic, 25, partition=2)
    query = _run_available_now(_stream(spark, bootstrap, topic, **options), out, checkpoint)
    assert sum(_batch_sizes(query)) == 55
    ends = {0: 300, 1: 130, 2: 25}
    copied = _copied(spark, out)
    assert set(copied) == _offsets(ends) and set(copied.values()) == {1}
    assert _lag(bootstrap, "copier") == _at_end(ends)


def test_starting_offsets_and_include_headers(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("topic-stream-start")
    create_topic(bootstrap, topic, partitions=2)
    sent = make_records(40, seed=3)
    p = producer(bootstrap)
    for i, r in enumerate(sent):
        p.produce(topic, value=r.value, key=r.key, headers=r.headers, partition=i % 2)
    flush_all(p)

    json_start = json.dumps({topic: {"0": 15, "1": -2}})
    stream = _stream(spark, bootstrap, topic, startingOffsets=json_start)
    assert "headers" in stream.columns
    _run_available_now(stream, tmp_path / "json", tmp_path / "json-cp")
    rows_ = spark.read.parquet(str(tmp_path / "json")).collect()
    assert {(r.partition, r.offset) for r in rows_} == _offsets({0: 20, 1: 20}, {0: 15})
    by_offset = {(r.partition, r.offset): r for r in rows_}
    for i, r in enumerate(sent):
        if (i % 2, i // 2) in by_offset:
            row = by_offset[(i % 2, i // 2)]
            assert (row.key, row.value) == (r.key, r.value)
            got = [(h.key, None if h.value is None else bytes(h.value)) for h in row.headers or []]
            assert got == list(r.headers or [])

    stream = _stream(spark, bootstrap, topic, includeHeaders="false")  # latest by default
    assert "headers" not in stream.columns
    query = _run_available_now(stream, tmp_path / "latest", tmp_path / "latest-cp")
    assert _batch_sizes(query) == []


@pytest.mark.parametrize("fail", [True, False], ids=["fail", "skip"])
def test_records_deleted_before_they_were_read(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path, fail: bool
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("topic-stream-loss")
    create_topic(bootstrap, topic)
    produce_values(bootstrap, topic, 50)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {"startingOffsets": "earliest", "failOnDataLoss": str(fail).lower()}
    _run_available_now(_stream(spark, bootstrap, topic, **options), out, checkpoint)
    produce_values(bootstrap, topic, 50)
    _delete_records(bootstrap, topic, 0, 80)  # offsets 50..79 were never read

    query = (
        _stream(spark, bootstrap, topic, **options)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    if fail:
        with contextlib.suppress(Exception):
            query.awaitTermination(QUERY_TIMEOUT_S)
        message = str(query.exception())
        assert "data loss" in message and "[50, 80)" in message, message
        assert "failOnDataLoss=false" in message
        assert set(_copied(spark, out)) == _offsets({0: 50})
    else:
        assert query.awaitTermination(QUERY_TIMEOUT_S)
        assert query.exception() is None, query.exception()
        copied = _copied(spark, out)
        assert set(copied) == _offsets({0: 50}) | _offsets({0: 100}, {0: 80})
        assert set(copied.values()) == {1}


def test_option_mistakes_are_named(spark: Any, spark_broker: BrokerProcess) -> None:
    bootstrap = spark_broker.bootstrap
    with pytest.raises(Exception, match="did you mean 'maxOffsetsPerTrigger'"):
        _stream(spark, bootstrap, "t", maxOffsetPerTrigger="10")
    topic = topic_name("topic-stream-options")
    create_topic(bootstrap, topic)
    query = (
        _stream(spark, bootstrap, topic, endingOffsets="latest")
        .writeStream.format("noop")
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(Exception):
        query.awaitTermination(QUERY_TIMEOUT_S)
    assert "'endingOffsets' is not valid in streaming queries" in str(query.exception())


@pytest.mark.timeout(600)  # two Spark sessions at once; minutes on a loaded machine
def test_a_query_killed_in_a_batch_restarts_exactly_once_with_lag_zero(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("topic-stream-kill")
    create_topic(bootstrap, topic, partitions=2)
    for partition in (0, 1):
        produce_values(bootstrap, topic, *([100] * 4), partition=partition)
    ends = {0: 400, 1: 400}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "150",
        "commitToGroup": "killed-copier",
    }
    interrupted = kill_in_a_batch(
        "shoal",
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **options},
        out=out,
        checkpoint=checkpoint,
        sleep_s=0.5,
        log_path=tmp_path / "child.log",
        timeout_s=QUERY_TIMEOUT_S,
    )
    before = _copied(spark, out)
    assert before and len(before) < 800, f"batch {interrupted} in flight, {len(before)} copied"
    # the group has the batches Spark committed before the kill (the sink may also
    # hold the batch in flight, if the kill came after its files were committed)
    lag = sum(int(lag) for _, _, lag in _lag(bootstrap, "killed-copier").values())
    assert 800 - len(before) <= lag < 800

    _run_available_now(_stream(spark, bootstrap, topic, **options), out, checkpoint)
    copied = _copied(spark, out)
    assert set(copied) == _offsets(ends)  # nothing lost
    assert set(copied.values()) == {1}  # nothing twice
    assert _lag(bootstrap, "killed-copier") == _at_end(ends)


def test_commit_to_a_group_with_active_members_is_logged_not_fatal(
    spark_broker: BrokerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """The source's own commit path (no Spark session needed): an active consumer
    group refuses an outside commit; the stream must go on, with a warning."""
    from shoal.spark.topic_stream import TopicStreamReader
    from shoal.spark.topic_stream_options import StreamOptions

    bootstrap = spark_broker.bootstrap
    topic = topic_name("topic-stream-busy")
    create_topic(bootstrap, topic)
    produce_values(bootstrap, topic, 5)
    member = consumer(
        bootstrap,
        group_id="busy",
        group_protocol="classic",
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
    )
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 60
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment(), "the consumer never joined"
        reader = TopicStreamReader(
            StreamOptions(bootstrap=bootstrap, topics=(topic,), commit_group="busy")
        )
        with caplog.at_level(logging.WARNING, logger="shoal.spark.topic_stream"):
            reader.commit({topic: {"0": 5}})  # no exception
        assert "could not commit" in caplog.text and "'busy'" in caplog.text
        assert "UNKNOWN_MEMBER_ID" in caplog.text or "ILLEGAL_GENERATION" in caplog.text
        assert _lag(bootstrap, "busy").get(0, ("-",))[0] in ("-", "")  # nothing committed
    finally:
        member.close()
