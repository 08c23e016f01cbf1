"""The share side of the crash tests (tests/e2e/test_share_crash.py, the crash soak):
how a ShareConsumer acknowledges a record by its fate, and the ledger of what it was
told.

A record's fate is `seq % 10`: REJECT, RELEASE once then ACCEPT, RELEASE always
("poison", archived at the delivery limit), ACCEPT otherwise. `acknowledge_poll` polls
one consumer, acknowledges every record by its fate, confirms with commit_sync and
records which final acknowledgements were confirmed (`done`) or sent without an answer
(`unconfirmed`); a record delivered after its final acknowledgement was confirmed is a
violation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

DELIVERY_LIMIT = 5
"""`group.share.delivery.count.limit` of the crash tests' brokers."""
POISON, REJECT, RELEASE_ONCE = 0, 1, 2
"""`seq % 10` picks the fate of a record; every other remainder is accepted."""
COMMIT_TIMEOUT_S = 10.0


def fate(seq: int) -> int:
    return seq % 10


@dataclass
class ShareLedger:
    """What the share consumers were told, in the order they were told it."""

    done: set[int] = field(default_factory=set)
    """seqs whose final acknowledgement (ACCEPT, REJECT, or a poison record's release at
    the limit) was confirmed by commit_sync."""
    unconfirmed: set[int] = field(default_factory=set)
    """seqs whose final acknowledgement was sent but whose outcome was never reported."""
    deliveries: dict[int, list[int]] = field(default_factory=dict)
    """seq -> delivery counts seen, in order."""
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def unfinished(self, seqs: Iterable[int]) -> set[int]:
        """Of `seqs`, those no consumer finished (call with `lock` held): final
        acknowledgement neither confirmed (`done`) nor sent without an answer
        (`unconfirmed`: if a kill lost it the record comes back), and never delivered
        at the limit (a kill that cut that delivery's release leaves the record at the
        limit, and the broker archives it without delivering it again, as Kafka does).
        """
        return {
            seq
            for seq in seqs
            if seq not in self.done
            and seq not in self.unconfirmed
            and DELIVERY_LIMIT not in self.deliveries.get(seq, ())
        }

    def judge_leftovers(self, seqs: Iterable[int]) -> tuple[set[int], list[int]]:
        """Judge `seqs`, records the broker finished (the group's lag is 0) that no
        consumer finished, by the delivery counts the consumers saw (call with `lock`
        held). Returns (archived at the limit after an unseen delivery, lost): one seen
        at count limit - 1 went out once more, at the limit, in a delivery no consumer
        processed (its response or release cut by a kill) and was archived there; any
        other (never delivered, or seen only at lower counts) was finished by the broker
        without a consumer finishing it, a loss."""
        archived: set[int] = set()
        lost: list[int] = []
        for seq in sorted(seqs):
            if DELIVERY_LIMIT - 1 in self.deliveries.get(seq, ()):
                archived.add(seq)
            else:
                lost.append(seq)
        return archived, lost


def acknowledge_poll(
    consumer: ShareConsumer,
    ledger: ShareLedger,
    *,
    before_commit: Callable[[], None] | None = None,
) -> list[tuple[int, int]]:
    """One poll of `consumer`, acknowledged by fate and confirmed with commit_sync
    (`before_commit` is called just before it). Returns the (seq, delivery count) pairs
    delivered; none when the poll failed (a broker restart) or brought nothing."""
    try:
        batch = [m for m in consumer.poll(0.1) if m.error() is None]
    except KafkaException:
        return []  # a broker restart surfaces here; the records come back later
    if not batch:
        return []
    delivered: list[tuple[int, int]] = []
    pending: dict[int, list[tuple[int, bool]]] = {}
    with ledger.lock:
        for message in batch:
            seq = int(message.value() or b"-1")
            count = int(message.delivery_count() or 0)
            if seq in ledger.done:
                ledger.violations.append(
                    f"seq {seq} delivered (count {count}) after its final ack was confirmed"
                )
            ledger.deliveries.setdefault(seq, []).append(count)
            delivered.append((seq, count))
            kind = fate(seq)
            if kind == POISON or (kind == RELEASE_ONCE and count == 1):
                ack = AcknowledgeType.RELEASE
            elif kind == REJECT:
                ack = AcknowledgeType.REJECT
            else:
                ack = AcknowledgeType.ACCEPT
            consumer.acknowledge(message, ack)
            final = ack != AcknowledgeType.RELEASE or count >= DELIVERY_LIMIT
            pending.setdefault(int(message.partition() or 0), []).append((seq, final))
    if before_commit is not None:
        before_commit()
    try:
        results = consumer.commit_sync(COMMIT_TIMEOUT_S)
    except KafkaException:
        results = None
    confirmed = {int(tp.partition) for tp, error in (results or {}).items() if error is None}
    with ledger.lock:
        for partition, acks in pending.items():
            for seq, final in acks:
                if not final:
                    continue
                if partition in confirmed:
                    ledger.done.add(seq)
                    ledger.unconfirmed.discard(seq)
                else:
                    ledger.unconfirmed.add(seq)
    return delivered
