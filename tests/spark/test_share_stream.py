"""`readStream.format("shoal-share")` end to end: a real broker, the shared local[2]
Spark session, Parquet output.

What is checked: an AvailableNow stream copies every record and leaves the group's
start offset at the end; a batch runs more tasks than the topic has partitions; a
second group reads everything again on its own; a query killed in the middle of a batch
and restarted from its checkpoint loses nothing, duplicates only that batch and rejoins
as the member it was (no ghost member); a query
stopped after Spark committed a batch, before the next trigger, has acknowledged it
when the source is given the checkpoint; a
poison record among 2,000 is archived alone (the failing batch split by delivery count)
and counted; mistakes are
reported, naming the option, before any task runs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoal.client.share_requests import share_acknowledge, share_fetch
from shoal.spark.share_checkpoint import member_id_path
from tests.support.batches import build_batch
from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.cli import rows as rows_of
from tests.support.cli import shoal
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES
from tests.support.share_groups import describe_one, new_member_id
from tests.support.share_wire import acquired, produce_values
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import log_end_offset, with_connection

ROOT = Path(__file__).resolve().parents[2]
QUERY_TIMEOUT_S = 240
GROUP_SETTINGS = {
    "share.auto.offset.reset": "earliest",
    # a killed driver's member leaves the group 2 s after its last heartbeat; the
    # interval must be set too: Kafka's check assumes 5000 ms for an unset one
    # (docs/reference/configs.md, "Group configs")
    "share.session.timeout.ms": "2000",
    "share.heartbeat.interval.ms": "500",
}
GHOST_SESSION_TIMEOUT_MS = 60_000
"""A killed query's member stays this long (the broker's maximum by default)."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker of this module's own: short share-group session timeouts allowed."""
    yield from running(
        tmp_path_factory.mktemp("share-stream") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


@pytest.fixture(scope="module")
def orders(broker: BrokerProcess) -> tuple[str, uuid.UUID, dict[int, int]]:
    """A two-partition topic with 1200 records (tests add more): (name, topic id, end
    offsets at creation)."""
    name = topic_name("share-stream")
    topic_id = create_topic(broker.bootstrap, name, partitions=2)
    produce_values(broker.bootstrap, name, 400, 300, partition=0)
    produce_values(broker.bootstrap, name, 500, partition=1)
    return name, topic_id, {0: 700, 1: 500}


def _source(spark: Any, bootstrap: str, topic: str, group: str, **options: str) -> Any:
    return (
        spark.readStream.format("shoal-share")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("group.id", group)
        .options(**GROUP_SETTINGS)
        .options(**options)
        .load()
    )


def _run_available_now(stream: Any, tmp: Path, name: str) -> Any:
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(tmp / name / "out"))
        .option("checkpointLocation", str(tmp / name / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    return query


def _output(spark: Any, path: Path) -> list[tuple[int, int, int]]:
    """(partition, offset, delivery_count) of every committed output row."""
    rows = spark.read.parquet(str(path)).select("partition", "offset", "delivery_count")
    return [(r.partition, r.offset, r.delivery_count) for r in rows.collect()]


def _all_offsets(ends: dict[int, int]) -> list[tuple[int, int]]:
    return [(p, o) for p, end in sorted(ends.items()) for o in range(end)]


def _tasks_per_job(spark: Any, query: Any) -> list[int]:
    """Tasks of each job the query ran (one job per micro-batch for this plan)."""
    tracker = spark.sparkContext.statusTracker()
    tasks = []
    for job_id in sorted(tracker.getJobIdsForGroup(str(query.runId))):
        job = tracker.getJobInfo(job_id)
        tasks.append(sum(tracker.getStageInfo(s).numTasks for s in job.stageIds))
    return tasks


def _next_deliveries(bootstrap: str, group: str, topic_id: uuid.UUID, partitions: int) -> list[Any]:
    """Offsets a new member of `group` acquires now (then releases and leaves)."""

    async def go(conn: Any) -> list[Any]:
        member_id = new_member_id()  # share requests need no membership
        tps = [(topic_id, p) for p in range(partitions)]
        response = await conn.request(
            share_fetch(
                group_id=group,
                member_id=member_id,
                session_epoch=0,
                partitions=tps,
                max_wait_ms=1000,
                max_records=500,
            ).build(1)
        )
        got = acquired(response)
        await conn.request(
            share_acknowledge(group_id=group, member_id=member_id, session_epoch=-1).build(1)
        )
        return sorted((tp[1], first, last) for tp, spans in got.items() for first, last, _ in spans)

    return with_connection(bootstrap, go)


def _assert_groups_at_end(
    bootstrap: str, groups: list[str], topic: str, topic_id: uuid.UUID, ends: dict[int, int]
) -> None:
    """Each group's start offset is each partition's end: nothing is left to deliver, and
    the next record produced is the next one delivered."""
    for group in groups:
        assert _next_deliveries(bootstrap, group, topic_id, len(ends)) == [], group
    for partition in ends:
        produce_values(bootstrap, topic, 1, partition=partition)
    expected = sorted((p, end, end) for p, end in ends.items())
    for group in groups:
        assert _next_deliveries(bootstrap, group, topic_id, len(ends)) == expected, group


def _await_failure(query: Any) -> None:
    """Wait for a query expected to fail (its error is read from exception())."""
    from pyspark.errors import StreamingQueryException

    with contextlib.suppress(StreamingQueryException):
        query.awaitTermination(QUERY_TIMEOUT_S)


def _wait_group_empty(bootstrap: str, group: str) -> None:
    def empty() -> bool:
        described = with_connection(bootstrap, lambda conn: describe_one(conn, group))
        return not described.members

    assert wait_until(empty, timeout_s=30, interval_s=0.2), f"group {group} still has members"


# ---- the tests


def test_available_now_copies_every_record_with_more_tasks_than_partitions(
    spark: Any, broker: BrokerProcess, orders: tuple[str, uuid.UUID, dict[int, int]], tmp_path: Path
) -> None:
    topic, topic_id, _ = orders
    ends = {p: log_end_offset(broker.bootstrap, topic, p) for p in (0, 1)}
    stream = _source(
        spark, broker.bootstrap, topic, "copy", maxRecordsPerBatch="500", numPartitions="6"
    )
    query = _run_available_now(stream, tmp_path, "copy")

    rows = _output(spark, tmp_path / "copy" / "out")
    assert sorted((p, o) for p, o, _ in rows) == _all_offsets(ends)  # all, exactly once
    assert {count for _, _, count in rows} == {1}
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 1200 and max(sizes) <= 500
    tasks = _tasks_per_job(spark, query)
    assert len(tasks) >= 3 and all(t == 6 for t in tasks), tasks  # 6 tasks, 2 partitions
    _assert_groups_at_end(broker.bootstrap, ["copy"], topic, topic_id, ends)


def test_a_second_group_reads_everything_on_its_own(
    spark: Any, broker: BrokerProcess, orders: tuple[str, uuid.UUID, dict[int, int]], tmp_path: Path
) -> None:
    topic, topic_id, _ = orders
    ends = {p: log_end_offset(broker.bootstrap, topic, p) for p in (0, 1)}
    for group in ("first", "second"):
        _run_available_now(_source(spark, broker.bootstrap, topic, group), tmp_path, group)
    for group in ("first", "second"):
        offsets = sorted((p, o) for p, o, _ in _output(spark, tmp_path / group / "out"))
        assert offsets == _all_offsets(ends), group
    _assert_groups_at_end(broker.bootstrap, ["first", "second"], topic, topic_id, ends)


def test_a_killed_query_restarts_without_loss_as_the_member_it_was(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    """SIGKILL in the middle of a batch: the member never leaves, so it stays in the
    group until its session (60 s here) times out. The restarted query rejoins with the
    member id kept in its checkpoint: the group shows one member, not a ghost beside a
    new one, and the replayed batch is the only one delivered twice."""
    topic = topic_name("share-kill")
    create_topic(broker.bootstrap, topic, partitions=2)
    for partition in (0, 1):
        produce_values(broker.bootstrap, topic, *([100] * 4), partition=partition)
    ends = {0: 400, 1: 400}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {
        "bootstrap.servers": broker.bootstrap,
        "topic": topic,
        "group.id": "killed",
        "maxRecordsPerBatch": "150",
        "numPartitions": "3",
        "checkpointLocation": str(checkpoint),
        **GROUP_SETTINGS,
        "share.session.timeout.ms": str(GHOST_SESSION_TIMEOUT_MS),
    }
    log_path = tmp_path / "child.log"
    child_log = log_path.open("wb")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.spark.share_stream_child",
            json.dumps(options),
            str(out),
            str(checkpoint),
            "0.5",
        ],
        cwd=ROOT,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": _child_path()},
        stdout=subprocess.DEVNULL,
        stderr=child_log,
        start_new_session=True,
    )
    try:

        def in_flight() -> bool:  # a batch after the first planned, not committed
            batch = _last_batch(checkpoint / "offsets")
            return batch >= 1 and not (checkpoint / "commits" / str(batch)).exists()

        found = wait_until(in_flight, timeout_s=QUERY_TIMEOUT_S, interval_s=0.05)
        assert found, (
            f"no batch in flight (child exit code {child.poll()}); its log:\n"
            + (log_path.read_text(errors="replace")[-5000:])
        )
        os.killpg(child.pid, signal.SIGKILL)
        killed_at = time.monotonic()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
        child_log.close()
    interrupted = _last_batch(checkpoint / "offsets")
    assert not (checkpoint / "commits" / str(interrupted)).exists()
    interrupted_offsets = _offsets_of_batch(checkpoint / "offsets" / str(interrupted))
    kept = member_id_path(checkpoint, "killed").read_text().strip()
    assert _members(broker, "killed") == [kept]  # the dead query's member, not gone yet

    stream = _source(
        spark,
        broker.bootstrap,
        topic,
        "killed",
        maxRecordsPerBatch="150",
        checkpointLocation=str(checkpoint),
        **{"share.session.timeout.ms": str(GHOST_SESSION_TIMEOUT_MS)},
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:

        def read_all() -> bool:
            assert query.exception() is None, query.exception()
            return sum(p["numInputRows"] for p in query.recentProgress) >= 800 - len(
                _committed_offsets(checkpoint, before=interrupted)
            )

        assert wait_until(read_all, timeout_s=QUERY_TIMEOUT_S, interval_s=0.2)
        members = _members(broker, "killed")
        assert time.monotonic() - killed_at < GHOST_SESSION_TIMEOUT_MS / 1000, "too slow to tell"
        assert members == [kept]  # one member: the restarted query is the member it was
    finally:
        query.stop()

    rows = _output(spark, out)
    counts = Counter((p, o) for p, o, _ in rows)
    assert set(counts) == set(_all_offsets(ends))  # nothing lost
    duplicated = {key for key, n in counts.items() if n > 1}
    assert duplicated <= interrupted_offsets
    redelivered = {(p, o): n for p, o, n in rows if (p, o) in interrupted_offsets}
    assert set(redelivered) == interrupted_offsets
    assert set(redelivered.values()) == {2}  # the replay's records were redelivered


def _members(broker: BrokerProcess, group: str) -> list[str]:
    """The member ids `shoal share-groups --describe --members` lists."""
    done = shoal(
        "share-groups",
        "--bootstrap-server",
        broker.bootstrap,
        "--describe",
        "--group",
        group,
        "--members",
    )
    assert done.returncode == 0, done.stderr
    return [row["CONSUMER-ID"] for row in rows_of(done.stdout)]


def _committed_offsets(checkpoint: Path, *, before: int) -> set[tuple[int, int]]:
    """The records of the batches committed before batch `before`."""
    return {
        key
        for batch in range(before)
        if (checkpoint / "commits" / str(batch)).exists()
        for key in _offsets_of_batch(checkpoint / "offsets" / str(batch))
    }


@pytest.mark.parametrize("source_knows_checkpoint", [True, False], ids=["checkpoint", "none"])
def test_a_query_stopped_after_a_committed_batch_has_acknowledged_it(
    spark: Any, broker: BrokerProcess, tmp_path: Path, source_knows_checkpoint: bool
) -> None:
    """Spark commits batch 0 and would tell the source at the next trigger, an hour
    later; the query is stopped before. Given the checkpoint, the source finds the
    commit at stop and ACCEPTs the batch: the group hands out only what the query did
    not process. Without it, the batch's records go back to the group."""
    topic = topic_name("share-stop")
    topic_id = create_topic(broker.bootstrap, topic, partitions=2)
    for partition in (0, 1):
        produce_values(broker.bootstrap, topic, 60, partition=partition)
    group = f"stopped-{source_knows_checkpoint}"
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {"checkpointLocation": str(checkpoint)} if source_knows_checkpoint else {}
    stream = _source(spark, broker.bootstrap, topic, group, maxRecordsPerBatch="1000", **options)
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 hour")
        .start()
    )
    try:
        committed = wait_until((checkpoint / "commits" / "0").exists, timeout_s=QUERY_TIMEOUT_S)
        assert committed, query.exception()
    finally:
        query.stop()
    _wait_group_empty(broker.bootstrap, group)  # stop() ran: the member left

    processed = {(p, o) for p, o, _ in _output(spark, out)}
    assert processed, "batch 0 read nothing"
    handed_out = {
        (partition, o)
        for partition, first, last in _next_deliveries(broker.bootstrap, group, topic_id, 2)
        for o in range(first, last + 1)
    }
    everything = set(_all_offsets({0: 60, 1: 60}))
    if source_knows_checkpoint:
        assert handed_out == everything - processed
    else:
        assert handed_out == everything


def _last_batch(offsets_dir: Path) -> int:
    names = [int(p.name) for p in offsets_dir.glob("[0-9]*")] if offsets_dir.exists() else []
    return max(names, default=-1)


def _offsets_of_batch(path: Path) -> set[tuple[int, int]]:
    """The (partition, offset) pairs an offset-log entry names (its last line is the
    source's offset JSON)."""
    offset = json.loads(path.read_text().strip().splitlines()[-1])
    return {
        (int(partition), o)
        for partitions in offset["acq"].values()
        for partition, spans in partitions.items()
        for first, last, _count in spans
        for o in range(first, last + 1)
    }


def test_a_poison_record_among_2000_is_archived_alone_and_the_rest_processed(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    """One batch of 2,000 records holds a record that fails its task, and so the query,
    at every delivery. Each restart replays the failed batch split smaller by delivery
    count (share_bisect.py: 2000, 300, 45, 7, 1 at the default limit of 5 deliveries),
    so the poison record ends alone in its batch and is archived alone; the other 1,999
    are processed, each once."""
    from pyspark.sql import functions as F

    topic = topic_name("share-poison")
    topic_id = create_topic(broker.bootstrap, topic)
    poison = 1234
    values = [b"poison" if i == poison else b"ok%d" % i for i in range(2000)]
    produce(broker.bootstrap, topic, build_batch(values))
    checkpoint = tmp_path / "checkpoint"
    settings = {
        "maxRecordsPerBatch": "2000",
        "share.delivery.count.limit": "5",
        "checkpointLocation": str(checkpoint),
    }

    def run() -> Any:
        stream = _source(spark, broker.bootstrap, topic, "poisoned", **settings)
        checked = stream.withColumn(
            "value",
            F.when(F.col("value") == F.lit(b"poison"), F.raise_error(F.lit("poison!"))).otherwise(
                F.col("value")
            ),
        )
        query = (
            checked.writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        _await_failure(query)
        _wait_group_empty(broker.bootstrap, "poisoned")
        return query

    for attempt in range(1, 6):  # one failure per delivery of the poison record
        failed = run()
        assert failed.exception() is not None, f"attempt {attempt} did not fail"
        assert "poison!" in str(failed.exception())
    query = run()  # the replay of the poison record's batch gets nothing back
    assert query.exception() is None, query.exception()

    rows = _output(spark, tmp_path / "out")
    assert sorted(o for _, o, _ in rows) == [o for o in range(2000) if o != poison]
    last = query.recentProgress[-1]["sources"][0]
    assert json.loads(last["endOffset"])["arch"] == 1
    assert _next_deliveries(broker.bootstrap, "poisoned", topic_id, 1) == []


def test_mistakes_are_reported_with_the_option_before_any_task(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    base = {"bootstrap.servers": broker.bootstrap, "topic": "t", "group.id": "g"}
    cases = [
        ({k: v for k, v in base.items() if k != "group.id"}, "'group.id' is required"),
        ({k: v for k, v in base.items() if k != "topic"}, "'topic' is required"),
        ({**base, "maxRecordPerBatch": "5"}, "unknown option 'maxrecordperbatch'"),
        ({**base, "bootstrap.servers": "127.0.0.1:1"}, "option 'bootstrap.servers'"),
    ]
    for options, message in cases:
        with pytest.raises(Exception, match=message):
            spark.readStream.format("shoal-share").options(**options).load()

    stream = _source(spark, broker.bootstrap, "no-such-topic", "g")
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    _await_failure(query)
    assert "topic 'no-such-topic' (option topic/topics)" in str(query.exception())
    assert _tasks_per_job(spark, query) == []


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"examples_{name}", ROOT / "examples" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_orders_example_rejects_malformed_events_and_totals_the_rest(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    producer, pipeline = _example("orders_producer"), _example("orders_pipeline")
    topic = topic_name("orders-example")
    producer.ensure_topic(broker.bootstrap, topic, 2)
    events = producer.events(1000, malformed_every=50, seed=7)
    producer.produce(broker.bootstrap, topic, events)
    valid = [json.loads(v) for _, v in events if _is_order(v)]

    query = pipeline.start(
        spark,
        bootstrap=broker.bootstrap,
        topic=topic,
        group="orders-example",
        out=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "checkpoint"),
        tasks=5,
        batch_records=1000,
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None, query.exception()

    totals, rejected = pipeline.summary(spark, str(tmp_path / "out"))
    assert rejected == 20
    expected = Counter(order["item"] for order in valid)
    assert {r.item: r.orders for r in totals.collect()} == dict(expected)
    assert _tasks_per_job(spark, query)  # it ran


def _is_order(value: bytes) -> bool:
    try:
        order = json.loads(value)
    except ValueError:
        return False
    return "item" in order and isinstance(order["quantity"], int)


def _child_path() -> str:
    """The repository root (for `tests.`) before the PYTHONPATH this test runs with
    (which may put a worktree's `src` first)."""
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(ROOT), inherited) if p)
