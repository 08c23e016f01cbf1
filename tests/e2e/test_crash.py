"""Crash safety: what a producer was told is stored stays stored, exactly once.

SIGKILL gives the broker no chance to flush or close anything; everything written
before an acknowledgement must survive it (the OS page cache does, a process buffer
does not). The torn-tail cases simulate what a crash mid-write or a damaged disk
leaves at the end of the active segment: recovery must keep every complete, valid
batch, drop the rest, and append after it.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.protocol.record_batch import compute_crc, iter_headers
from tests.support.batches import decode_records, values_batch
from tests.support.broker import BrokerProcess, Brokers, wait_until
from tests.support.clients import (
    create_topic,
    producer,
    read_partitions,
    watermarks,
)
from tests.support.topics import topic_name
from tests.support.wire import call, call1, fetched, log_end_offset, produced

PARTITIONS = 3
ACKED_PER_ROUND = 3_000
KILLS = 3


class Stream:
    """A producer thread sending sequence-numbered values until stopped, remembering
    where each acknowledged value was stored."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: list[tuple[bytes, KafkaError]] = []
        self.fatal: list[KafkaError] = []
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.producer = producer(
            bootstrap,
            enable_idempotence=True,
            linger_ms=5,
            batch_num_messages=500,
            message_timeout_ms=120_000,
            retry_backoff_ms=20,
            retry_backoff_max_ms=200,
            queue_buffering_max_messages=100_000,
            log_level=2,  # connection failures are expected here; errors come to _on_error
            error_cb=self._on_error,
        )
        self._thread = threading.Thread(target=self._run, name="crash-stream", daemon=True)

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal.append(error)

    def _delivered(self, value: bytes, error: KafkaError | None, message: Message) -> None:
        with self._lock:
            if error is not None:
                self.failed.append((value, error))
            else:
                self.acked[value] = (message.partition(), message.offset())

    def _run(self) -> None:
        p = self.producer
        while not self._stop.is_set():
            if len(p) > 20_000:  # the broker is down or slow: do not queue unboundedly
                p.poll(0.01)
                continue
            value = b"%09d" % self.sent
            p.produce(
                self.topic,
                key=b"k%d" % (self.sent % 31),
                value=value,
                on_delivery=functools.partial(self._delivered, value),
            )
            self.sent += 1
            if self.sent % 200 == 0:
                p.poll(0)
        p.poll(0)

    def start(self) -> None:
        self._thread.start()

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def snapshot(self) -> dict[bytes, tuple[int, int]]:
        with self._lock:
            return dict(self.acked)

    def stop_and_flush(self, timeout_s: float = 120.0) -> int:
        """Stop sending, wait for outstanding deliveries; returns how many never came."""
        self._stop.set()
        self._thread.join(30)
        undelivered = int(self.producer.flush(timeout_s))
        self.producer.close()
        return undelivered


def verify_log(bootstrap: str, topic: str, acked: dict[bytes, tuple[int, int]]) -> None:
    """Every acknowledged value is at its reported offset; offsets have no gaps; no
    value is stored twice (up to the highest acknowledged offset of each partition)."""
    end_offsets = dict.fromkeys(range(PARTITIONS), 0)
    for partition, offset in acked.values():
        end_offsets[partition] = max(end_offsets[partition], offset + 1)
    consumed = read_partitions(bootstrap, topic, end_offsets, timeout_s=60)
    stored_at: dict[bytes, tuple[int, int]] = {}
    for partition, messages in consumed.items():
        assert [m.offset for m in messages] == list(range(end_offsets[partition])), (
            f"partition {partition}: offsets not contiguous from 0"
        )
        for m in messages:
            assert m.value is not None
            assert m.value not in stored_at, (
                f"{m.value!r} stored twice: {stored_at[m.value]} and {(partition, m.offset)}"
            )
            stored_at[m.value] = (partition, m.offset)
    lost = {v: at for v, at in acked.items() if stored_at.get(v) != at}
    assert not lost, (
        f"{len(lost)} acknowledged records missing or moved, e.g. "
        f"{[(v, at, stored_at.get(v)) for v, at in list(lost.items())[:5]]}"
    )


def produce_through_kills(broker: BrokerProcess, topic: str, *, kills: int) -> Stream:
    """Stream into a new `topic` while `broker` is SIGKILLed `kills` times, each after
    ACKED_PER_ROUND more acknowledgements; after each restart, what was acknowledged
    before the kill is checked, and new writes continue the offsets after the last.
    Returns the stopped stream once nothing failed or went undelivered and the log
    holds every value sent, acknowledged, exactly once."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    stream = Stream(bootstrap, topic)
    stream.start()
    try:
        for round_number in range(kills):
            target = stream.acked_count() + ACKED_PER_ROUND
            assert wait_until(lambda t=target: stream.acked_count() >= t, timeout_s=60), (
                f"round {round_number}: only {stream.acked_count()} acknowledged, "
                f"fatal={stream.fatal} failed={stream.failed[:3]}"
            )
            broker.kill()
            acked_before_kill = stream.snapshot()
            broker.start()
            verify_log(bootstrap, topic, acked_before_kill)
        target = stream.acked_count() + ACKED_PER_ROUND
        assert wait_until(lambda: stream.acked_count() >= target, timeout_s=60)
    finally:
        undelivered = stream.stop_and_flush()
    assert not stream.fatal, stream.fatal
    assert not stream.failed, f"{len(stream.failed)} failed, e.g. {stream.failed[:3]}"
    assert undelivered == 0
    # An idempotent producer retried everything in flight: every value is acknowledged,
    # so the log holds exactly the values sent, each once.
    assert len(stream.acked) == stream.sent
    verify_log(bootstrap, topic, stream.acked)
    return stream


def test_acknowledged_records_survive_sigkill(fresh_broker: BrokerProcess) -> None:
    topic = topic_name("crash")
    stream = produce_through_kills(fresh_broker, topic, kills=KILLS)
    ends = {
        p: high for p, (_, high) in watermarks(fresh_broker.bootstrap, topic, PARTITIONS).items()
    }
    assert sum(ends.values()) == stream.sent, f"log ends {ends} for {stream.sent} records"


def test_with_an_fsync_per_message_acknowledged_records_survive_sigkill(
    brokers: Brokers,
) -> None:
    """`log.flush.interval.messages=1`: every produce waits for its fsync, which runs in
    a disk worker thread (server/services/disk_io.py); acknowledgements keep coming and what was
    acknowledged survives SIGKILL, exactly once."""
    broker = brokers.start("log.flush.interval.messages=1")
    produce_through_kills(broker, topic_name("crash-fsync"), kills=1)


# ---- torn tails


BATCHES = 20
RECORDS_PER_BATCH = 10


def _active_segment(data_dir: Path, topic: str, partition: int) -> Path:
    segments = sorted((data_dir / f"{topic}-{partition}").glob("*.log"))
    assert segments, f"no segment files in {data_dir / f'{topic}-{partition}'}"
    return segments[-1]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as segment:
        segment.write(data)


def _truncate_last_bytes(path: Path, count: int) -> None:
    with path.open("r+b") as segment:
        segment.truncate(path.stat().st_size - count)


def _damage_last_batch(path: Path) -> None:
    """Flip a byte inside the last record: the length still fits, the CRC does not."""
    with path.open("r+b") as segment:
        segment.seek(-3, 2)
        byte = segment.read(1)
        segment.seek(-3, 2)
        segment.write(bytes([byte[0] ^ 0xFF]))


# case -> (damage to the active segment, complete batches expected to survive)
TORN: dict[str, tuple[Callable[[Path], None], int]] = {
    "garbage-appended": (
        lambda p: _append(p, random.Random(1).randbytes(37)),
        BATCHES,
    ),
    "zeros-appended": (lambda p: _append(p, b"\x00" * 4096), BATCHES),
    "partial-header": (lambda p: _append(p, values_batch(3)[:30]), BATCHES),
    "partial-batch": (lambda p: _append(p, values_batch(3)[:-10]), BATCHES),
    "last-batch-truncated": (lambda p: _truncate_last_bytes(p, 5), BATCHES - 1),
    "last-batch-crc-damaged": (_damage_last_batch, BATCHES - 1),
}


@pytest.mark.parametrize("case", TORN)
def test_torn_tail_is_recovered(fresh_broker: BrokerProcess, case: str) -> None:
    bootstrap = fresh_broker.bootstrap
    topic = topic_name("torn")
    create_topic(bootstrap, topic, partitions=1)
    answers = call(
        bootstrap,
        *(
            requests.produce(
                {(topic, 0): values_batch(RECORDS_PER_BATCH, prefix=b"b%02d-" % b)}
            ).build(9)
            for b in range(BATCHES)
        ),
    )
    assert [int(produced(a).base_offset) for a in answers] == [
        b * RECORDS_PER_BATCH for b in range(BATCHES)
    ]
    fresh_broker.kill()
    damage, surviving_batches = TORN[case]
    damage(_active_segment(fresh_broker.data_dir, topic, 0))

    fresh_broker.start()
    kept = surviving_batches * RECORDS_PER_BATCH
    assert log_end_offset(bootstrap, topic, 0) == kept

    new_batch = values_batch(4, prefix=b"new-")
    appended = produced(call1(bootstrap, requests.produce({(topic, 0): new_batch}).build(9)))
    assert appended.error_code == ErrorCode.none, appended
    assert int(appended.base_offset) == kept
    assert log_end_offset(bootstrap, topic, 0) == kept + 4

    partition = fetched(
        call1(
            bootstrap,
            requests.fetch(
                {(topic, 0): requests.FetchPosition(0, 10 * 2**20)}, max_bytes=2**24, max_wait_ms=0
            ).build(12),
        )
    )
    assert partition.error_code == ErrorCode.none, partition
    stored = bytes(partition.records)
    headers = iter_headers(stored)
    assert sum(h.size for h in headers) == len(stored), "bytes after the last whole batch"
    for header in headers:
        assert compute_crc(stored, header) == header.crc, f"bad CRC at {header.base_offset}"
    expected = [
        b"b%02d-%d" % (b, i) for b in range(surviving_batches) for i in range(RECORDS_PER_BATCH)
    ] + [b"new-%d" % i for i in range(4)]
    records = decode_records(stored)
    assert [r.offset for r in records] == list(range(kept + 4))
    assert [r.value for r in records] == expected
