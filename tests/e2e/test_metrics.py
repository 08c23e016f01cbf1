"""`/metrics` while real clients work (docs/reference/metrics.md): the counters move as
the traffic says.

One broker with `metrics.listener` on an ephemeral loopback port; confluent-kafka's
Producer and ShareConsumer make the traffic; each test scrapes before and after and
checks the difference for its own topic or group (counters without a topic label are
compared as differences too: the tests of this module run one at a time).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer

from shoal.server.services.log_cleaner import KEY_MAP_ENTRY_BYTES
from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.clients import create_topic as create_clients_topic
from tests.support.compaction import (
    COMPACTED,
    alter_broker_configs,
    latest,
    produce_keyed,
    seal,
    wait_compacted,
)
from tests.support.metrics import METRICS_OVERRIDE, metrics_url, scrape, value
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    close_all,
    describe,
    first_batch,
    produce_values,
    share_consumer,
    share_group,
    wait_for_members,
)
from tests.support.topics import create_topic, topic_name

ACKS = "kafka_server_share_group_metrics_record_acknowledgement_total"
LOCK_TIMEOUTS = "kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("metrics") / "data", *SHARE_TEST_BROKER_OVERRIDES, METRICS_OVERRIDE
    )


@pytest.fixture(scope="module")
def url(broker: BrokerProcess) -> str:
    return metrics_url(broker)


def test_produced_records_count_as_messages_in_for_their_topic(
    broker: BrokerProcess, url: str
) -> None:
    topic = topic_name("m-in")
    create_topic(broker.bootstrap, topic)
    before = scrape(url)
    produced = produce_values(broker.bootstrap, topic, [b"v%d" % i for i in range(7)])
    after = scrape(url)
    labels = {"topic": topic}
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", labels) == produced
    assert value(after, "kafka_server_brokertopicmetrics_bytesin_total", labels) > 7 * 2
    produce_requests = "kafka_network_requestmetrics_requests_total"
    served = sum(
        v - before.get(key, 0.0)
        for key, v in after.items()
        if key[0] == produce_requests and ("request", "Produce") in key[1]
    )
    assert served >= 1
    assert (
        value(after, "kafka_network_requestmetrics_totaltime_seconds_count", {"request": "Produce"})
        >= served
    )


def test_released_records_count_as_release_acknowledgements(
    broker: BrokerProcess, url: str
) -> None:
    """Five records RELEASEd then ACCEPTed: +5 release, +5 accept, 10 acquired."""
    bootstrap = broker.bootstrap
    topic = topic_name("m-rel")
    create_topic(bootstrap, topic)
    group = share_group(bootstrap, topic_name("m-rel-g"))
    produce_values(bootstrap, topic, [b"r%d" % i for i in range(5)])
    before = scrape(url)
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        held = first_batch(consumer)
        assert len(held) == 5
        for message in held:
            consumer.acknowledge(message, AcknowledgeType.RELEASE)
        assert list(consumer.commit_sync(30).values()) == [None]
        again: list[object] = []
        deadline = time.monotonic() + 30
        while len(again) < 5 and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                again.append(message)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        assert len(again) == 5
        assert list(consumer.commit_sync(30).values()) == [None]
        after = scrape(url)
    finally:
        close_all([consumer])

    def delta(name: str, labels: dict[str, str]) -> float:
        return value(after, name, labels) - value(before, name, labels)

    assert delta(ACKS, {"ack_type": "release"}) == 5
    assert delta(ACKS, {"ack_type": "accept"}) == 5
    assert delta(ACKS, {"ack_type": "reject"}) == 0
    acquired = {"group": group, "topic": topic}
    assert value(after, "shoal_share_records_acquired_total", acquired) == 10
    assert delta("kafka_server_share_group_metrics_share_acknowledgement_total", {}) >= 2
    window = {"group": group, "topic": topic, "partition": "0"}
    assert value(after, "shoal_share_partition_start_offset", window) == 5
    # the share-partition loaded once; its state was written at least per commit
    assert delta("kafka_server_share_group_metrics_partition_load_time_seconds_count", {}) >= 1
    assert delta("kafka_server_share_coordinator_metrics_write_latency_seconds_count", {}) >= 2


def test_a_lock_held_past_its_duration_counts_one_timeout_per_lock(
    broker: BrokerProcess, url: str
) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("m-lock")
    create_topic(bootstrap, topic)
    group = share_group(bootstrap, topic_name("m-lock-g"), lock_ms=1000)
    produce_values(bootstrap, topic, [b"l0", b"l1", b"l2"])
    before = scrape(url)
    silent = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        assert len(first_batch(silent)) == 3
        held = scrape(url)
        window = {"group": group, "topic": topic, "partition": "0"}
        locks = value(held, "kafka_server_sharepartitionmetrics_inflightbatchcount", window)
        assert value(held, "shoal_share_partition_records", {**window, "state": "acquired"}) == 3
        assert locks >= 1

        def expired() -> bool:
            now = scrape(url)
            available = {**window, "state": "available"}
            return value(now, "shoal_share_partition_records", available) == 3

        assert wait_until(expired, timeout_s=30, interval_s=0.2), "the locks never expired"
        after = scrape(url)
        assert value(after, LOCK_TIMEOUTS) - value(before, LOCK_TIMEOUTS) == locks
    finally:
        close_all([silent])


def test_share_groups_are_counted_by_state(broker: BrokerProcess, url: str) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("m-grp")
    create_topic(bootstrap, topic)
    group = share_group(bootstrap, topic_name("m-grp-g"))
    consumer = share_consumer(bootstrap, group, [topic])
    try:
        wait_for_members(bootstrap, group, [consumer], topic, partitions=1)
        samples = scrape(url)
        listed_stable = describe(bootstrap, group).group_state == "Stable"
        by_state = {
            dict(labels)["state"]: v
            for (name, labels), v in samples.items()
            if name == "kafka_server_group_coordinator_metrics_share_group_count"
        }
        assert listed_stable and by_state.get("stable", 0) >= 1
        share_total = value(
            samples, "kafka_server_group_coordinator_metrics_group_count", {"protocol": "share"}
        )
        assert sum(by_state.values()) == share_total
        rebalances = "kafka_server_group_coordinator_metrics_share_group_rebalance_total"
        assert value(samples, rebalances) >= 1
    finally:
        close_all([consumer])


def _listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (Linux /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_the_listener_is_off_by_default(tmp_path: Path) -> None:
    for process in running(tmp_path / "data"):
        assert _listening_ports(process.pid) == {process.port}
        assert "metrics listener" not in process.log_text()


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_the_listener_binds_its_own_port(broker: BrokerProcess, url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    assert _listening_ports(broker.pid) == {broker.port, port}


def test_fetch_commits_and_transactions_are_counted(broker: BrokerProcess, url: str) -> None:
    """A plain Consumer reads a topic (bytes out, at least the bytes in) and commits
    (one partition offset); a transactional producer commits one transaction and
    aborts one."""
    bootstrap = broker.bootstrap
    topic = topic_name("m-fetch")
    create_topic(bootstrap, topic)
    produce_values(bootstrap, topic, [b"f%d" % i for i in range(4)])
    before = scrape(url)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": topic_name("m-fetch-g"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message)
        assert len(seen) == 4
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic_name("m-tx")})
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        producer.produce(topic, b"t")
        assert producer.flush(30) == 0  # the partition joins the transaction: EndTxn follows
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    after = scrape(url)

    def delta(name: str, labels: dict[str, str] | None = None) -> float:
        return value(after, name, labels) - value(before, name, labels)

    labels = {"topic": topic}
    bytes_in = value(before, "kafka_server_brokertopicmetrics_bytesin_total", labels)
    assert value(after, "kafka_server_brokertopicmetrics_bytesout_total", labels) >= bytes_in > 0
    assert delta("kafka_server_group_coordinator_metrics_offset_commit_total") == 1
    assert delta("shoal_transactions_ended_total", {"result": "commit"}) == 1
    assert delta("shoal_transactions_ended_total", {"result": "abort"}) == 1
    assert "counting" not in broker.log_text()


def test_the_log_cleaner_reports_its_work(broker: BrokerProcess, url: str) -> None:
    """A compacted topic cleaned (the backoff shortened and the key map memory set at
    run time, which wakes the cleaner): Kafka's cleaner gauges and the partition's
    backlog and progress move."""
    dedupe_bytes = KEY_MAP_ENTRY_BYTES * 100  # 90 keys at the 0.9 load factor
    alter_broker_configs(
        broker.bootstrap,
        {"log.cleaner.backoff.ms": 100, "log.cleaner.dedupe.buffer.size": dedupe_bytes},
    )
    topic = topic_name("m-clean")
    create_clients_topic(broker.bootstrap, topic, config=COMPACTED)
    labels = {"topic": topic, "partition": "0"}
    keys = [b"k-%02d" % i for i in range(20)]
    written = produce_keyed(
        broker.bootstrap, topic, [(keys[i % 20], b"v%d" % i) for i in range(1000)]
    )
    sealed_at = seal(broker.bootstrap, topic)
    wait_compacted(broker.bootstrap, topic, sealed_at, latest(written))
    after = scrape(url)
    assert value(after, "shoal_log_cleaner_cleans_total", labels) >= 1
    cleaned = value(after, "shoal_log_cleaner_cleaned_bytes_total", labels)
    assert cleaned > 1000 * 10  # every record was read at least once
    assert ("shoal_log_cleaner_dirty_bytes", frozenset(labels.items())) in after
    recopy = value(after, "kafka_log_logcleaner_cleaner_recopy_percent")
    assert 0 < recopy < 50  # 20 of 1000 records kept
    # 20 keys (and a seal record or two) in a map of 90
    assert 20 <= value(after, "kafka_log_logcleaner_max_buffer_utilization_percent") <= 30
    assert 0 <= value(after, "kafka_log_logcleanermanager_time_since_last_run_ms") < 30_000
    assert value(after, "kafka_log_logcleaner_deadthreadcount") == 0
    uncleanable = [
        v
        for (name, _labels), v in after.items()
        if name == "kafka_log_logcleanermanager_uncleanable_partitions_count"
    ]
    assert uncleanable == [0]
    for gauge in (
        "kafka_log_logcleanermanager_max_dirty_percent",
        "kafka_log_logcleaner_max_clean_time_secs",
        "kafka_log_logcleaner_max_compaction_delay_secs",
    ):
        assert (gauge, frozenset()) in after, gauge
