"""The load of the crash soak (tests/support/crash_soak.py), each part a thread, and
the ledger of what the clients were told.

- `Producing`: an idempotent producer (acks=all) sending sequence-numbered values
  (`value_of(seq)`) in bursts of random size; `burst` is set when a burst begins.
- `Fetching`: a consumer-group Consumer (KIP-848 protocol) reading the topic and
  committing its position synchronously every `COMMIT_INTERVAL_S` (not auto-commit:
  see the class); a value seen at two offsets is a violation, and the offsets whose
  commit was confirmed are kept (`committed`), so the soak can check they survive a
  crash.
- `Sharing`: ShareConsumers in explicit mode, each on its own thread, acknowledging by
  the record's fate (`seq % 10`): REJECT, RELEASE once then ACCEPT, RELEASE always
  ("poison", archived at the delivery limit), ACCEPT otherwise, then commit_sync;
  `acking` is set when a commit_sync begins. A record redelivered after its final
  acknowledgement was confirmed, or delivered with a count above the limit, is a
  violation.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import (
    KafkaError,
    KafkaException,
    Message,
    ShareConsumer,
)

from tests.support.clients import consumer, producer
from tests.support.share_ledger import DELIVERY_LIMIT, ShareLedger, acknowledge_poll

PARTITIONS = 6
SHARE_CONSUMERS = 3
BURST_RECORDS = (20, 300)
BURST_PAUSE_S = (0.05, 0.6)
QUEUE_MAX = 20_000
"""The producer stops adding records while this many are unacknowledged (broker down)."""


def value_of(seq: int) -> bytes:
    return b"%09d" % seq


@dataclass
class Ledger(ShareLedger):
    """What the clients were told, in the order they were told it (the share side in
    `ShareLedger`)."""

    acked: list[tuple[int, int, int]] = field(default_factory=list)
    """(seq, partition, offset) in the order the producer was told."""
    failed: list[str] = field(default_factory=list)


class Producing(threading.Thread):
    """The idempotent producer, in bursts; `burst` is set when a burst begins."""

    def __init__(self, bootstrap: str, topic: str, ledger: Ledger, rng: random.Random) -> None:
        super().__init__(name="soak-producer", daemon=True)
        self.topic = topic
        self.ledger = ledger
        self.rng = rng
        self.stop = threading.Event()
        self.burst = threading.Event()
        self.sent = 0
        self.fatal: list[str] = []
        self.producer = producer(
            bootstrap,
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            message_timeout_ms=600_000,
            retry_backoff_ms=20,
            retry_backoff_max_ms=300,
            reconnect_backoff_ms=20,
            reconnect_backoff_max_ms=300,
            log_level=2,  # connection failures are expected; fatal errors come to _on_error
            error_cb=self._on_error,
        )

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal.append(str(error))

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        seq = int(message.value() or b"-1")
        with self.ledger.lock:
            if error is not None:
                self.ledger.failed.append(f"seq {seq}: {error}")
            else:
                self.ledger.acked.append(
                    (seq, int(message.partition() or 0), int(message.offset() or 0))
                )

    def run(self) -> None:
        p = self.producer
        while not self.stop.is_set():
            if len(p) > QUEUE_MAX:
                p.poll(0.05)
                continue
            self.burst.set()
            for _ in range(self.rng.randint(*BURST_RECORDS)):
                value = value_of(self.sent)
                p.produce(self.topic, key=value, value=value, on_delivery=self._delivered)
                self.sent += 1
            p.poll(0)
            deadline = time.monotonic() + self.rng.uniform(*BURST_PAUSE_S)
            while not self.stop.is_set() and time.monotonic() < deadline:
                p.poll(0.02)

    def flush(self, timeout_s: float) -> int:
        self.stop.set()
        self.join(30)
        remaining = int(self.producer.flush(timeout_s))
        return remaining


COMMIT_INTERVAL_S = 0.2
"""How often the fetcher commits its position (synchronously, see `Fetching`)."""


class Fetching(threading.Thread):
    """A consumer-group Consumer reading the topic; a value seen at two different
    offsets is a violation. It commits its position itself, synchronously, every
    `COMMIT_INTERVAL_S`; `committed` holds, per partition, the highest offset whose
    commit the broker confirmed.

    Why not auto-commit: librdkafka's auto-commit can itself move a committed offset
    back. While the coordinator is away (a SIGKILL) each auto-commit tick is deferred
    with the positions of that moment; once the coordinator is back, a fresh commit
    goes out first and the deferred, older ones after it, so the broker applies an
    older offset after confirming a newer one (seen in the broker's request log;
    Kafka applies commits in arrival order too). With one synchronous commit at a
    time the client never sends an offset older than one already confirmed, so
    "a confirmed commit is never lost or lowered" is exactly what the broker owes."""

    def __init__(self, bootstrap: str, topic: str, group: str, ledger: Ledger) -> None:
        super().__init__(name="soak-fetcher", daemon=True)
        self.ledger = ledger
        self.group = group
        self.stop = threading.Event()
        self.fetched = 0
        self.commits = 0
        self.seen: dict[int, tuple[int, int]] = {}
        self.committed: dict[int, int] = {}
        self._committed_lock = threading.Lock()
        self.consumer = consumer(
            bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            group_protocol="consumer",
            enable_auto_commit=False,
            enable_auto_offset_store=True,
            reconnect_backoff_ms=20,
            reconnect_backoff_max_ms=300,
            log_level=2,
        )
        self.consumer.subscribe([topic])

    def commit(self) -> None:
        """Commit the stored positions and wait for the answer; a failed or partial
        commit promises nothing for the partitions that failed."""
        try:
            answered = self.consumer.commit(asynchronous=False)
        except KafkaException:
            return  # nothing to commit, or not confirmed: promises nothing
        self.commits += 1
        with self._committed_lock:
            for tp in answered or []:
                if tp.error is None and tp.offset >= 0:
                    previous = self.committed.get(tp.partition, 0)
                    self.committed[tp.partition] = max(previous, tp.offset)

    def confirmed_commits(self) -> dict[int, int]:
        with self._committed_lock:
            return dict(self.committed)

    def run(self) -> None:
        next_commit = time.monotonic() + COMMIT_INTERVAL_S
        try:
            while not self.stop.is_set():
                try:
                    batch = self.consumer.consume(num_messages=1_000, timeout=0.2)
                except KafkaException:
                    continue
                for message in batch:
                    if message.error() is not None:
                        continue
                    seq = int(message.value() or b"-1")
                    at = (int(message.partition() or 0), int(message.offset() or 0))
                    earlier = self.seen.setdefault(seq, at)
                    if earlier != at:
                        with self.ledger.lock:
                            self.ledger.violations.append(
                                f"fetcher saw seq {seq} at {earlier} and at {at}"
                            )
                    self.fetched += 1
                if time.monotonic() >= next_commit:
                    self.commit()
                    next_commit = time.monotonic() + COMMIT_INTERVAL_S
        finally:
            self.consumer.close()


class Sharing:
    """The ShareConsumers, each polled by its own thread; `acking` is set when a
    commit_sync begins.

    One thread per consumer, not one thread polling them in turn: a consumer with
    nothing to do spends its whole poll timeout (100 ms) waiting, and polled in turn
    that wait paced the busy ones too. It mattered most for poison records: a record
    on its last attempt goes out alone, one per ShareFetch and partition (Kafka's
    poison-record throttling, share/acquire.py), and the in-flight limit
    (`share.partition.max.record.locks`, counted from the start offset) holds back
    everything behind it, so a partition advances by one fetch round trip per poison
    record. In turn, three consumers made about five such round trips a second and a
    100-kill backlog never drained; each on its own thread, a consumer makes one per
    ShareFetch + commit_sync round trip (tens a second each on the shared machine).
    Each ShareConsumer is used by its own thread only."""

    def __init__(self, consumers: list[ShareConsumer], ledger: Ledger) -> None:
        self.consumers = consumers
        self.ledger = ledger
        self.stop = threading.Event()
        self.acking = threading.Event()
        self._acks = [0] * len(consumers)
        self._threads = [
            threading.Thread(
                target=self._run, args=(index,), name=f"soak-share-{index}", daemon=True
            )
            for index in range(len(consumers))
        ]

    @property
    def acks(self) -> int:
        """Deliveries acknowledged so far (final or not), all consumers."""
        return sum(self._acks)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            if thread.is_alive():  # never started when the soak failed before starting it
                thread.join(max(0.0, deadline - time.monotonic()))

    def _run(self, index: int) -> None:
        share = self.consumers[index]
        while not self.stop.is_set():
            delivered = acknowledge_poll(share, self.ledger, before_commit=self.acking.set)
            self._acks[index] += len(delivered)
            over = [(seq, count) for seq, count in delivered if count > DELIVERY_LIMIT]
            if over:
                with self.ledger.lock:
                    self.ledger.violations.extend(
                        f"seq {seq} delivered with count {count}" for seq, count in over
                    )
