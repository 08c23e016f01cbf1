"""Kafka Streams (4.2) runs on Shoal exactly once through an application crash and a
broker crash.

The application (java/WindowedCount.java) regroups the input by value through a
repartition topic and counts each value per one-minute tumbling window of the records'
own timestamps in a RocksDB window store, with `processing.guarantee=exactly_once_v2`
and the record cache off: every input record yields one update of its window's count.
The input is known, so the count of every value and window is known. While the input
flows, the application's JVM is SIGKILLed and started again on the same state
directory, then the broker is SIGKILLed and restarted on the same data directory.

Exactly once means a read_committed reader of the output sees, for every value and
window, the updates 1, 2, ..., its expected count: nothing aborted shows, nothing is
counted twice, no update is lost, and the count carried on after each restart from the
state the changelog topic kept (a lost state would start a window again at 1).
"""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.ecosystem import jvm
from tests.ecosystem.jvm import broker_fixture  # noqa: F401 -- the `broker` fixture
from tests.ecosystem.reading import end_offsets, read_all
from tests.support.broker import BrokerProcess, wait_until
from tests.support.clients import (
    create_topic,
    flush_all,
    producer,
    watermarks,
)

SHOAL_SETTINGS = (
    *jvm.SINGLE_NODE,
    # Small segments and an eager cleaner: the changelog (compacted, written in
    # transactions, some aborted by the crashes) rolls segments and is compacted while
    # the application restores from it. A batch larger than a segment is refused
    # (RECORD_BATCH_TOO_LARGE), so the producers keep theirs under 2 KiB (BATCH_BYTES).
    "log.segment.bytes=4096",
    "log.cleaner.backoff.ms=200",
    "log.cleaner.min.cleanable.ratio=0.01",
)
BATCH_BYTES = 2048
APP_ID = "windowed-count"
INPUT, OUTPUT = "clicks", "click-counts"
INPUT_PARTITIONS, OUTPUT_PARTITIONS = 3, 2
RECORDS = 4_000
FIRST_BATCH = 1_500
"""Produced before the application starts; the rest flows while it and the broker crash."""
PACE = (50, 0.6)
"""The rest goes in (records, seconds) steps: about 30 s, across both crashes."""
VALUES = 7
WINDOW_MS = 60_000
SPAN_MS = 5 * WINDOW_MS
APP_START_S = 120.0
CONVERGE_S = 240.0


def input_records() -> list[tuple[str, str, int]]:
    """(key, value, timestamp): values cycle, timestamps scatter over five windows (out
    of order, as across partitions they would be) of the last minutes. Not older: time
    retention would delete them (7 days on the topics, the windows' retention plus a
    day on the changelog), which Kafka does 30 s after it starts."""
    base = time.time_ns() // 1_000_000 - SPAN_MS - WINDOW_MS
    return [
        (f"event-{i}", f"user-{i % VALUES}", base + (i * 7_919) % SPAN_MS) for i in range(RECORDS)
    ]


def expected_counts(records: list[tuple[str, str, int]]) -> dict[str, int]:
    """The final count of each output key, `<value>@<window start>`."""
    counts: collections.Counter[str] = collections.Counter()
    for _key, value, timestamp in records:
        counts[f"{value}@{timestamp - timestamp % WINDOW_MS}"] += 1
    return dict(counts)


def produce(bootstrap: str, records: list[tuple[str, str, int]], *, paced: bool) -> None:
    p = producer(
        bootstrap, enable_idempotence=True, message_timeout_ms=180_000, batch_size=BATCH_BYTES
    )
    step, pause = PACE
    for start in range(0, len(records), step):
        for key, value, timestamp in records[start : start + step]:
            p.produce(INPUT, key=key, value=value, timestamp=timestamp)
        p.poll(0)
        if paced:
            time.sleep(pause)
    flush_all(p, timeout_s=180)


def updates(bootstrap: str, isolation: str) -> dict[str, list[int]]:
    """Each output key's counts in the order a reader at `isolation` sees them."""
    found: dict[str, list[int]] = collections.defaultdict(list)
    for records in read_all(bootstrap, OUTPUT, OUTPUT_PARTITIONS, isolation):
        for key, value in records:
            assert key is not None
            found[key].append(int(value))
    return dict(found)


def open_transaction(bootstrap: str, *, timeout_s: float) -> list[int]:
    """Waits until an output partition holds records of a transaction not yet decided (its
    last stable offset behind its high watermark); returns the high watermarks then."""
    seen: list[list[int]] = []

    def undecided() -> bool:
        stable = end_offsets(bootstrap, OUTPUT, OUTPUT_PARTITIONS, "read_committed")
        high = end_offsets(bootstrap, OUTPUT, OUTPUT_PARTITIONS, "read_uncommitted")
        seen.append(high)
        return any(h > s for h, s in zip(high, stable, strict=True))

    assert wait_until(undecided, timeout_s=timeout_s, interval_s=0.02), "no open transaction"
    return seen[-1]


def topic_config(bootstrap: str, topic: str, key: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    return str(configs[key].value)


def assert_input_once(bootstrap: str, records: list[tuple[str, str, int]]) -> None:
    """The input is what was produced, once (the idempotent producer's retries across
    a broker's crash were deduplicated)."""
    produced = sorted(
        key
        for part in read_all(bootstrap, INPUT, INPUT_PARTITIONS, "read_committed")
        for key, _value in part
    )
    assert produced == sorted(key for key, _v, _t in records)


def assert_exact(bootstrap: str, expected: dict[str, int]) -> None:
    """Every key and window's committed updates are 1, 2, ..., its count, and the crashes
    did leave aborted updates, which a read_uncommitted reader sees."""
    committed = updates(bootstrap, "read_committed")
    assert set(committed) == set(expected)
    wrong = {
        key: counts
        for key, counts in committed.items()
        if counts != list(range(1, expected[key] + 1))
    }
    assert not wrong, f"{len(wrong)} keys' updates not 1..count: {sorted(wrong.items())[:3]}"
    everything = updates(bootstrap, "read_uncommitted")
    assert sum(map(len, everything.values())) > sum(map(len, committed.values()))


def converged(bootstrap: str, expected: dict[str, int], apps: list[jvm.Jvm]) -> bool:
    """Each key and window's last committed update is its expected count."""
    for app in apps:
        assert app.alive, f"the application stopped:\n{app.tail()}"
    final = {key: counts[-1] for key, counts in updates(bootstrap, "read_committed").items()}
    return final == expected


def start_app(app: jvm.Jvm) -> None:
    app.start()
    app.wait_for(r"STATE RUNNING", timeout_s=APP_START_S)


@pytest.mark.timeout(600)
def test_windowed_count_is_exact_through_app_and_broker_crashes(
    broker: jvm.Broker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, INPUT, partitions=INPUT_PARTITIONS)
    create_topic(bootstrap, OUTPUT, partitions=OUTPUT_PARTITIONS)
    records = input_records()
    expected = expected_counts(records)
    produce(bootstrap, records[:FIRST_BATCH], paced=False)

    app = jvm.Jvm(
        "WindowedCount",
        [
            bootstrap,
            APP_ID,
            str(tmp_path / "state"),
            INPUT,
            OUTPUT,
            f"producer.batch.size={BATCH_BYTES}",
        ],
        class_path=jvm.program_classpath("WindowedCount.java"),
        log_path=tmp_path / "streams.log",
    )
    rest = threading.Thread(
        target=produce, args=(bootstrap, records[FIRST_BATCH:]), kwargs={"paced": True}
    )
    try:
        start_app(app)
        rest.start()
        if isinstance(broker, BrokerProcess):  # the restart below restores a cleaned changelog
            assert broker.wait_for_log(rf"cleaned {APP_ID}-counts-changelog", timeout_s=APP_START_S)
        # SIGKILL the application with a transaction open (its records written, not yet
        # committed), then start it again on its state directory. A commit can slip in
        # between the look and the kill; then look and kill again.
        for _attempt in range(5):
            high = open_transaction(bootstrap, timeout_s=APP_START_S)
            app.kill()
            stable = end_offsets(bootstrap, OUTPUT, OUTPUT_PARTITIONS, "read_committed")
            start_app(app)
            if any(s < h for s, h in zip(stable, high, strict=True)):
                break
        else:
            raise AssertionError("every kill of the application came after its commit")
        # SIGKILL the broker with a transaction open, restart it on its data directory.
        open_transaction(bootstrap, timeout_s=APP_START_S)
        broker.restart()
        rest.join(timeout=300)
        assert not rest.is_alive(), "the input producer did not finish"

        assert wait_until(
            lambda: converged(bootstrap, expected, [app]), timeout_s=CONVERGE_S, interval_s=2.0
        ), f"output did not reach the expected counts:\n{app.tail()}"
        # A clean close: SIGTERM runs the shutdown hook (the JVM then exits 143).
        assert app.stop() in (0, 143), app.tail()
        app.wait_for(r"CLOSED", timeout_s=5)
    finally:
        app.kill()
        if rest.is_alive():
            rest.join(timeout=200)

    assert_input_once(bootstrap, records)
    assert_exact(bootstrap, expected)

    # The topics Streams made for itself: the window store's changelog, compacted and
    # deleted past the windows' retention (Streams' WindowedChangelogTopicConfig), and a
    # repartition topic it purges by DeleteRecords as it commits.
    changelog = f"{APP_ID}-counts-changelog"
    repartition = f"{APP_ID}-by-value-repartition"
    assert topic_config(bootstrap, changelog, "cleanup.policy") == "compact,delete"
    assert topic_config(bootstrap, repartition, "cleanup.policy") == "delete"
    lows = [low for low, _h in watermarks(bootstrap, repartition, INPUT_PARTITIONS).values()]
    assert sum(lows) > 0, f"repartition topic never purged: low watermarks {lows}"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_zombie_instance_cannot_commit_after_its_tasks_moved(
    broker: jvm.Broker, tmp_path: Path
) -> None:
    """Two instances share the work; one is frozen (SIGSTOP) while the input flows, for
    longer than its session, so the group gives its tasks to the other, which carries
    on from the committed state; then it is thawed (SIGCONT) with its transaction still
    open. Under exactly_once_v2 each instance has its own transactional producer, so no
    InitProducerId fences the zombie's: its commit must fail on the group generation
    (KIP-447: TxnOffsetCommit carries the member and generation, and the coordinator
    refuses a stale one), and its transaction be aborted. Every count stays exact."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, INPUT, partitions=INPUT_PARTITIONS)
    create_topic(bootstrap, OUTPUT, partitions=OUTPUT_PARTITIONS)
    records = input_records()
    expected = expected_counts(records)
    produce(bootstrap, records[:FIRST_BATCH], paced=False)
    class_path = jvm.program_classpath("WindowedCount.java")
    apps = [
        jvm.Jvm(
            "WindowedCount",
            [
                bootstrap,
                APP_ID,
                str(tmp_path / f"state-{name}"),
                INPUT,
                OUTPUT,
                # Longer than the freeze: the zombie's transaction is still open when it
                # thaws (the coordinator would otherwise abort it and bump its epoch).
                "producer.transaction.timeout.ms=20000",
                f"producer.batch.size={BATCH_BYTES}",
            ],
            class_path=class_path,
            log_path=tmp_path / f"streams-{name}.log",
        )
        for name in ("a", "b")
    ]
    zombie, survivor = apps
    rest = threading.Thread(
        target=produce, args=(bootstrap, records[FIRST_BATCH:]), kwargs={"paced": True}
    )
    try:
        for app in apps:
            app.start()
        for app in apps:
            app.wait_for(r"STATE RUNNING", timeout_s=APP_START_S)
        # Both hold tasks once the second instance's join has settled.
        assert wait_until(
            lambda: (
                survivor.output().count("STATE RUNNING") >= 1
                and zombie.output().endswith("STATE RUNNING\n")
            ),
            timeout_s=APP_START_S,
        )
        rest.start()
        # Freeze the zombie just after one of its commits: its next transaction has begun
        # (records written, perhaps) but holds no offsets yet. (Frozen in the middle of a
        # commit instead, its pending offsets would hold the survivor back, KIP-447's
        # require_stable, until the transaction timed out.)
        commits = zombie.output().count("COMMITTED")
        assert wait_until(
            lambda: zombie.output().count("COMMITTED") > commits,
            timeout_s=APP_START_S,
            interval_s=0.01,
        ), zombie.tail()
        zombie.pause()
        runs = survivor.output().count("STATE RUNNING")
        # The survivor rebalances once the zombie's session (6 s) has expired, and runs on.
        assert wait_until(
            lambda: survivor.output().count("STATE RUNNING") > runs, timeout_s=APP_START_S
        ), survivor.tail()
        zombie.resume()
        rest.join(timeout=300)
        assert not rest.is_alive(), "the input producer did not finish"
        assert wait_until(
            lambda: converged(bootstrap, expected, apps), timeout_s=CONVERGE_S, interval_s=2.0
        ), f"output did not reach the expected counts:\n{zombie.tail()}\n{survivor.tail()}"
        for app in apps:
            assert app.stop() in (0, 143), app.tail()
    finally:
        for app in apps:
            app.kill()
        if rest.is_alive():
            rest.join(timeout=200)

    assert_input_once(bootstrap, records)
    assert_exact(bootstrap, expected)
