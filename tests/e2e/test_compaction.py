"""Log compaction end to end: a real `shoal serve`, its log cleaner
(server/services/log_cleaner.py over log/cleaner.py) and confluent-kafka clients.

Each topic has small segments and `min.cleanable.dirty.ratio` near zero, so the
cleaner takes it as soon as a segment is sealed; the last step of each scenario
produces one more record after `segment.ms` to seal everything before it (the active
segment is never cleaned). What a consumer reading from the beginning must see then:
below that last record, exactly the latest record of each key, at the offset it was
written at (offsets keep their gaps), tombstones until `delete.retention.ms` after
the clean that first saw them, and no aborted transactional record.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message

from shoal.server.services.log_cleaner import KEY_MAP_ENTRY_BYTES
from tests.support.broker import BrokerProcess, Brokers, wait_until
from tests.support.clients import create_topic, flush_all, producer, watermarks
from tests.support.compaction import (
    BATCH_BYTES,
    CLEAN_WAIT_S,
    COMPACTED,
    alter_topic_config,
    delete_records,
    delete_topic,
    latest,
    produce_keyed,
    read_all,
    seal,
    wait_compacted,
)
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    close_all,
    poll_until,
    share_consumer,
    share_group,
)
from tests.support.topics import topic_name

CLEANER_OVERRIDES = ("log.cleaner.backoff.ms=100", "log.retention.check.interval.ms=500")


@pytest.fixture
def broker(brokers: Brokers) -> BrokerProcess:
    return brokers.start(*CLEANER_OVERRIDES, *SHARE_TEST_BROKER_OVERRIDES)


def test_a_compacted_topic_keeps_the_latest_value_of_each_key_at_its_offset(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("compact")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    rng = random.Random(7)
    keys = [b"key-%03d" % i for i in range(100)]
    records = [(rng.choice(keys), b"value-%05d" % i) for i in range(3000)]
    written = produce_keyed(broker.bootstrap, topic, records)
    sealed_at = seal(broker.bootstrap, topic)
    expected = latest(written)
    read = wait_compacted(broker.bootstrap, topic, sealed_at, expected)
    offsets = [r.offset for r in read]
    assert offsets == sorted(set(offsets))  # increasing, no repeat
    assert offsets[-1] == sealed_at  # the seal record, still dirty, is read too
    assert len(read) == len(expected) + 1 < len(records) / 10
    # the gaps: a consumer's next offset after each kept record jumps the removed ones
    assert any(b - a > 1 for a, b in itertools.pairwise(offsets))


def test_a_key_map_smaller_than_the_keys_cleans_in_several_passes(brokers: Brokers) -> None:
    """log.cleaner.dedupe.buffer.size bounds the key map (room for 10 keys: 9 at the
    0.9 load factor); 60 keys still end compacted, a part per clean."""
    dedupe = f"log.cleaner.dedupe.buffer.size={KEY_MAP_ENTRY_BYTES * 10}"
    broker = brokers.start(*CLEANER_OVERRIDES, dedupe)
    topic = topic_name("compact-small-map")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    keys = [b"key-%02d" % i for i in range(60)]
    records = [(keys[i % len(keys)], b"v-%04d" % i) for i in range(1200)]
    # batches of a few records: the log maps a batch's keys whole (log/cleaner.py)
    written = produce_keyed(broker.bootstrap, topic, records, batch_bytes=200)
    sealed_at = seal(broker.bootstrap, topic)
    wait_compacted(broker.bootstrap, topic, sealed_at, latest(written))
    cleans = broker.log_text().count(f"cleaned {topic}-0 ")
    assert cleans >= 60 // 9, f"{cleans} cleans for 60 keys in a 9-key map"


def test_a_batch_with_more_keys_than_the_key_map_is_still_cleaned(brokers: Brokers) -> None:
    dedupe = f"log.cleaner.dedupe.buffer.size={KEY_MAP_ENTRY_BYTES * 10}"
    broker = brokers.start(*CLEANER_OVERRIDES, dedupe)
    topic = topic_name("compact-wide-batch")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    keys = [b"key-%02d" % i for i in range(60)]
    records = [(keys[i % len(keys)], b"v-%04d" % i) for i in range(600)]
    written = produce_keyed(broker.bootstrap, topic, records)  # 4 kB batches: ~60 keys each
    sealed_at = seal(broker.bootstrap, topic)
    wait_compacted(broker.bootstrap, topic, sealed_at, latest(written), timeout_s=15)


def test_tombstones_remove_their_key_and_vanish_after_delete_retention(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("tomb")
    retention_ms = 3000
    create_topic(
        broker.bootstrap, topic, config={**COMPACTED, "delete.retention.ms": str(retention_ms)}
    )
    keys = [b"k-%02d" % i for i in range(20)]
    doomed = set(keys[:8])
    records: list[tuple[bytes, bytes | None]] = [(k, b"v1-" + k) for k in keys]
    records += [(k, b"v2-" + k) for k in keys]
    records += [(k, None) for k in sorted(doomed)]
    written = produce_keyed(broker.bootstrap, topic, records)
    sealed_at = seal(broker.bootstrap, topic)
    expected = latest(written)  # the doomed keys' tombstones (value None) included
    wait_compacted(broker.bootstrap, topic, sealed_at, expected)
    first_clean_done = time.monotonic()
    # once delete.retention.ms passed since that clean, the next clean drops them
    time.sleep(max(0.0, retention_ms / 1000 + 0.5 - (time.monotonic() - first_clean_done)))
    more = produce_keyed(broker.bootstrap, topic, [(b"late-%d" % i, b"late") for i in range(50)])
    sealed_again = seal(broker.bootstrap, topic)
    survivors = {k: v for k, v in expected.items() if v[1] is not None}
    survivors.update(latest(more))
    survivors[next(r.key for r in read_all(broker.bootstrap, topic) if r.offset == sealed_at)] = (
        sealed_at,
        b"seal",
    )
    read = wait_compacted(broker.bootstrap, topic, sealed_again, survivors)
    assert not any(r.value is None for r in read if r.offset < sealed_again)
    assert {r.key for r in read}.isdisjoint(doomed)


def test_a_share_group_on_a_compacted_topic_gets_the_retained_records(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("compact-share")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    keys = [b"s-%02d" % i for i in range(30)]
    written = produce_keyed(
        broker.bootstrap, topic, [(keys[i % len(keys)], b"v-%04d" % i) for i in range(600)]
    )
    sealed_at = seal(broker.bootstrap, topic)
    expected = latest(written)
    wait_compacted(broker.bootstrap, topic, sealed_at, expected)
    group = share_group(broker.bootstrap, topic_name("compact-share-g"))
    consumer = share_consumer(broker.bootstrap, group, [topic])
    got: dict[int, tuple[bytes | None, bytes | None]] = {}
    try:
        poll_until(
            [consumer],
            lambda: sealed_at in got,
            on_message=lambda _i, m: got.setdefault(m.offset(), (m.key(), m.value())),
            what="the share group to reach the seal record",
        )
    finally:
        close_all([consumer])
    retained = {offset: (key, value) for key, (offset, value) in expected.items()}
    assert {o: kv for o, kv in got.items() if o < sealed_at} == retained


def test_compact_and_delete_also_applies_retention(broker: BrokerProcess) -> None:
    """Records an hour old go by retention (retention.ms 10 min), whole segments at a
    time; what remains is compacted."""
    topic = topic_name("compact-delete")
    create_topic(
        broker.bootstrap,
        topic,
        config={**COMPACTED, "cleanup.policy": "compact,delete", "retention.ms": "600000"},
    )
    hour_ago_ms = int(time.time() * 1000) - 3_600_000
    old = produce_keyed(
        broker.bootstrap,
        topic,
        [(b"old-%d" % (i % 5), b"x" * 200) for i in range(200)],
        timestamp_ms=hour_ago_ms,
    )
    last_old = max(offset for entries in old.values() for offset, _ in entries)
    first_seal = seal(broker.bootstrap, topic)
    assert wait_until(
        lambda: watermarks(broker.bootstrap, topic, 1)[0][0] > last_old, timeout_s=CLEAN_WAIT_S
    ), "retention did not remove the old records"
    fresh = produce_keyed(
        broker.bootstrap, topic, [(b"new-%d" % (i % 7), b"fresh-%d" % i) for i in range(70)]
    )
    sealed_at = seal(broker.bootstrap, topic)
    expected = latest(fresh)
    first = read_all(broker.bootstrap, topic)[0]
    assert first.offset == first_seal and first.key is not None
    expected[first.key] = (first_seal, b"seal")
    read = wait_compacted(broker.bootstrap, topic, sealed_at, expected)
    assert not any(r.key is not None and r.key.startswith(b"old-") for r in read)


def test_a_compacted_topic_drops_aborted_records_and_keeps_committed_ones(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("compact-txn")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    p = producer(
        broker.bootstrap,
        transactional_id=topic_name("txn"),
        enable_idempotence=True,
        batch_size=BATCH_BYTES,
    )
    p.init_transactions(30)
    committed: dict[bytes, bytes] = {}
    for round_ in range(6):
        p.begin_transaction()
        for i in range(20):
            key, value = b"t-%02d" % i, b"r%d-%02d" % (round_, i)
            p.produce(topic, key=key, value=value, partition=0)
            if round_ % 2 == 0:
                committed[key] = value
        if round_ % 2 == 0:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    p.flush(30)
    sealed_at = seal(broker.bootstrap, topic)

    def done() -> bool:
        read = read_all(broker.bootstrap, topic, isolation_level="read_committed")
        values = {r.key: r.value for r in read if r.offset < sealed_at}
        uncommitted = read_all(broker.bootstrap, topic, isolation_level="read_uncommitted")
        raw = [r for r in uncommitted if r.offset < sealed_at]
        return values == committed and len(raw) == len(committed)

    assert wait_until(done, timeout_s=CLEAN_WAIT_S, interval_s=0.5), (
        "aborted records still readable with read_uncommitted, or committed ones lost"
    )
    read = read_all(broker.bootstrap, topic, isolation_level="read_uncommitted")
    assert all(
        r.value is not None and r.value.startswith(b"r4") for r in read if r.offset < sealed_at
    )


def test_switching_a_topic_to_compact_at_run_time_compacts_it(broker: BrokerProcess) -> None:
    topic = topic_name("compact-later")
    create_topic(broker.bootstrap, topic, config={**COMPACTED, "cleanup.policy": "delete"})
    keys = [b"k-%02d" % i for i in range(10)]
    written = produce_keyed(
        broker.bootstrap, topic, [(keys[i % 10], b"v%d" % i) for i in range(300)]
    )
    sealed_at = seal(broker.bootstrap, topic)
    time.sleep(0.5)  # several cleaner passes: a delete-only topic is left alone
    assert len(read_all(broker.bootstrap, topic)) == 301
    alter_topic_config(broker.bootstrap, topic, "cleanup.policy", "compact")
    wait_compacted(broker.bootstrap, topic, sealed_at, latest(written))


# ---- a clean cut short: topic deletion, DeleteRecords, shutdown

SLOW_CLEANER = (*CLEANER_OVERRIDES, "log.cleaner.io.max.bytes.per.second=300000")
"""At 300 kB/s a clean of the topic below (1.7 MB read) lasts several seconds."""


def start_a_slow_clean(broker: BrokerProcess, topic: str) -> dict[bytes, tuple[int, bytes | None]]:
    """About 1 MB of keyed records in a compacted topic, sealed; returns once the
    cleaner has begun (its log line) with the latest record of each key."""
    create_topic(broker.bootstrap, topic, config={**COMPACTED, "segment.bytes": "65536"})
    keys = [b"key-%03d" % i for i in range(200)]
    records = [(keys[i % 200], b"%06d-" % i + b"x" * 200) for i in range(4000)]
    written = produce_keyed(broker.bootstrap, topic, records)
    seal(broker.bootstrap, topic)
    assert broker.wait_for_log(rf"cleaning {topic}-0 ", timeout_s=CLEAN_WAIT_S)
    return latest(written)


def test_deleting_a_topic_while_it_is_cleaned(brokers: Brokers) -> None:
    broker = brokers.start(*SLOW_CLEANER)
    topic = topic_name("compact-del")
    start_a_slow_clean(broker, topic)
    delete_topic(broker.bootstrap, topic)
    create_topic(broker.bootstrap, topic, config=COMPACTED)  # the name again, empty
    written = produce_keyed(broker.bootstrap, topic, [(b"a", b"1"), (b"b", b"2"), (b"a", b"3")])
    assert [(r.offset, r.key, r.value) for r in read_all(broker.bootstrap, topic)] == [
        (0, b"a", b"1"),
        (1, b"b", b"2"),
        (2, b"a", b"3"),
    ]
    assert broker.wait_for_log(rf"cleaning of {topic}-0 discarded", timeout_s=CLEAN_WAIT_S)
    assert "Traceback" not in broker.log_text() and "uncleanable" not in broker.log_text()
    assert broker.alive
    del written


def test_delete_records_while_a_topic_is_cleaned(brokers: Brokers) -> None:
    """DeleteRecords past part of what the clean read: its result is set aside, the
    next clean starts from the new log start, and nothing below it comes back."""
    broker = brokers.start(*SLOW_CLEANER)
    topic = topic_name("compact-dr")
    expected = start_a_slow_clean(broker, topic)
    cut = 2000
    delete_records(broker.bootstrap, topic, cut)
    assert broker.wait_for_log(rf"clean of {topic}-0 discarded", timeout_s=CLEAN_WAIT_S)
    sealed_at = max(offset for offset, _value in expected.values()) + 1
    survivors = {k: v for k, v in expected.items() if v[0] >= cut}
    read = wait_compacted(broker.bootstrap, topic, sealed_at, survivors)
    assert read[0].offset >= cut


def test_shutdown_during_a_clean_is_prompt_and_loses_nothing(brokers: Brokers) -> None:
    broker = brokers.start(*SLOW_CLEANER)
    topic = topic_name("compact-stop")
    expected = start_a_slow_clean(broker, topic)
    started = time.monotonic()
    assert broker.stop(timeout_s=30) == 0
    assert time.monotonic() - started < 15
    assert "abandoned at shutdown" in broker.log_text()
    assert cleaning_leftovers(broker.data_dir, topic) == []  # the stopped plan removed its own
    broker.overrides = list(CLEANER_OVERRIDES)
    broker.start()
    sealed_at = max(offset for offset, _value in expected.values()) + 1
    wait_compacted(broker.bootstrap, topic, sealed_at, expected)


# ---- SIGKILL while cleaning


class KeyedStream:
    """An idempotent producer thread cycling through `keys` until stopped; remembers
    the offset of each acknowledged record."""

    def __init__(self, bootstrap: str, topic: str, keys: int) -> None:
        self.topic = topic
        self.keys = keys
        self.acked: dict[int, tuple[bytes, bytes]] = {}
        self.fatal: list[KafkaError] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.producer = producer(
            bootstrap,
            enable_idempotence=True,
            linger_ms=5,
            batch_size=BATCH_BYTES,
            message_timeout_ms=180_000,
            retry_backoff_ms=20,
            retry_backoff_max_ms=200,
            log_level=2,
            error_cb=lambda e: self.fatal.append(e) if e.fatal() else None,
        )
        self._thread = threading.Thread(target=self._run, name="compaction-stream", daemon=True)

    def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            if len(self.producer) > 5_000:
                self.producer.poll(0.05)
                continue
            key = b"key-%04d" % (sequence % self.keys)
            value = b"value-%08d-" % sequence + b"x" * 100
            self.producer.produce(
                self.topic, key=key, value=value, partition=0, on_delivery=self._delivered
            )
            sequence += 1
            self.producer.poll(0)
            if sequence % 20 == 0:  # about 2,000 records (250 kB) a second at most
                time.sleep(0.01)

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            with self._lock:
                self.acked[message.offset()] = (message.key(), message.value())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        flush_all(self.producer, timeout_s=180)


def cleaning_leftovers(data_dir: Path, topic: str) -> list[str]:
    """The files of a clean not yet swapped in (log/clean_swap.py)."""
    directory = data_dir / f"{topic}-0"
    return sorted(name for name in os.listdir(directory) if name.endswith((".cleaned", ".swap")))


def kill_while_cleaning(brokers: Brokers, *, kills: int, seed: int) -> None:
    """SIGKILL the broker `kills` times while a producer writes, each time once a clean
    of the topic began: alternately a random 0-1 s later (the cleaner throttled to
    2 MB/s, so the clean is often still running: the test counts those that were,
    from the broker's log, and wants half of all kills) and as soon as the clean's
    output files are on disk. At least one kill must leave such files (more kills are
    made until one does, within 5x). Then: the next open removes what
    that kill left, and once everything is sealed and cleaned a consumer reads exactly
    the latest acknowledged record of each key, at its offset, once."""
    throttled = (*CLEANER_OVERRIDES, "log.cleaner.io.max.bytes.per.second=2000000")
    broker = brokers.start(*throttled)
    topic = topic_name("compact-kill")
    create_topic(broker.bootstrap, topic, config={**COMPACTED, "segment.bytes": "32768"})
    stream = KeyedStream(broker.bootstrap, topic, keys=500)
    stream.start()
    rng = random.Random(seed)
    done = mid_clean = left_files = 0
    began = re.compile(rf"cleaning {re.escape(topic)}-0 \(")
    ended = re.compile(rf"(cleaned|cleaning of|clean of) {re.escape(topic)}-0 ")
    mark = 0  # where the broker's log of its current run starts
    try:
        while True:
            assert wait_until(
                lambda mark=mark: began.search(broker.log_text(), mark) is not None,
                timeout_s=CLEAN_WAIT_S,
            ), "no clean began"
            if done % 2:  # at a random point of the clean
                time.sleep(rng.uniform(0.0, 1.0))
            else:  # as soon as its output is on disk (its rewrite, or the swap)
                wait_until(
                    lambda: bool(cleaning_leftovers(broker.data_dir, topic)),
                    timeout_s=3,
                    interval_s=0.001,
                )
            broker.kill()
            done += 1
            since = broker.log_text()[mark:]
            last_began = max(m.end() for m in began.finditer(since))
            mid_clean += ended.search(since, last_began) is None
            left = cleaning_leftovers(broker.data_dir, topic)
            left_files += bool(left)
            if done >= kills and (left or done >= 5 * kills):
                break  # the broker stays down: what this kill left is checked below
            mark = len(broker.log_text())
            broker.start()
    except BaseException:
        stream.stop()
        raise
    assert mid_clean * 2 >= done, f"only {mid_clean} of {done} kills came during a clean"
    assert left_files > 0, f"none of {done} kills left a clean's files"
    # what the last kill left is removed when the log is opened (the cleaner off, so
    # nothing new is written meanwhile)
    broker.overrides = [*CLEANER_OVERRIDES, "log.cleaner.enable=false"]
    broker.start()
    assert cleaning_leftovers(broker.data_dir, topic) == []
    stream.stop()
    assert not stream.fatal, stream.fatal
    broker.kill()
    broker.overrides = list(CLEANER_OVERRIDES)
    broker.start()
    acked = stream.acked
    sealed_at = seal(broker.bootstrap, topic)
    expected: dict[bytes, tuple[int, bytes | None]] = {}
    for offset in sorted(acked):
        key, value = acked[offset]
        expected[key] = (offset, value)
    read = wait_compacted(broker.bootstrap, topic, sealed_at, expected)
    offsets = [r.offset for r in read]
    assert offsets == sorted(set(offsets)), "a record read twice"


def test_sigkill_while_cleaning_loses_and_duplicates_nothing(brokers: Brokers) -> None:
    kill_while_cleaning(brokers, kills=3, seed=11)


@pytest.mark.slow
def test_many_sigkills_while_cleaning_under_load(brokers: Brokers) -> None:
    kill_while_cleaning(brokers, kills=20, seed=int(time.time()))
