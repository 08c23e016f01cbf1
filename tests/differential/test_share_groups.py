"""Share groups (KIP-932): Apache Kafka 4.2 and Shoal, with confluent-kafka's
ShareConsumer, the raw share APIs and Kafka's own `kafka-share-groups` tool.

Each scenario runs against both brokers and returns what a user can observe (records,
delivery counts, acknowledgement results, errors, group descriptions) with ids and
times normalised; the test compares the two. Where Shoal differs on purpose the test
says so in one line and asserts Shoal's documented behaviour.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from confluent_kafka import AcknowledgeType as ConsumerAck
from confluent_kafka import ShareConsumer
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.client.requests import (
    alter_share_group_offsets,
    delete_share_group_offsets,
    describe_share_group_offsets,
    find_coordinator,
    list_groups,
    share_group_describe,
)
from shoal.client.share_requests import (
    AckBatch,
    acquired_of,
    lock_timeout_ms,
    partition_errors,
    share_acknowledge,
    share_fetch,
)
from shoal.protocol.share import AcknowledgeType
from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.share_admin import delete_groups, describe_offsets
from tests.support.share_consumers import (
    alter_group_configs,
    close_all,
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.share_groups import Member, described_assignment
from tests.support.share_wire import produce_values as produce_value_batches
from tests.support.topics import create_topic
from tests.support.wire import call1, open_connection, send, with_connection

T = TypeVar("T")
WAIT_S = 60.0
LONE_MEMBER_WAIT_S = 20.0
"""How long a lone first member waits for its first records before a new one joins."""


def produce_batches(bootstrap: str, topic: str, *counts: int, partition: int = 0) -> None:
    """One batch per count, stamped now: records stamped in the past would be removed
    by either broker's first retention check while the module runs (Shoal's and
    Kafka's come at different times, so the two would differ)."""
    now_ms = int(time.time() * 1000)
    produce_value_batches(bootstrap, topic, *counts, partition=partition, base_timestamp=now_ms)


LOCK_CAP = 100
"""`group.share.partition.max.record.locks` of both brokers (Kafka's minimum). Kafka
4.2.2 refuses it as a group config (INVALID_CONFIG "Unknown group config name"), so
the module sets the broker config."""
BROKER_OVERRIDES = (
    f"group.share.partition.max.record.locks={LOCK_CAP}",
    "group.share.min.record.lock.duration.ms=1000",
)
"""Both brokers: the lock cap, and locks as short as 1 s for the expiry scenarios."""


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_reference.KafkaBroker]:
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        pytest.skip(f"no Kafka reference broker: {exc}")
    data = tmp_path_factory.mktemp("kafka") / "data"
    with kafka_reference.running(data, *BROKER_OVERRIDES) as broker:
        yield broker


@pytest.fixture(scope="module")
def shoal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("shoal") / "data", *BROKER_OVERRIDES)


# ---- a member on one connection, at the wire ------------------------------------------

RETRIABLE = {
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
}
Acked = dict[int, int]
"""{offset: acknowledge type}."""


class RawMember:
    """A share-group member speaking ShareGroupHeartbeat, ShareFetch and
    ShareAcknowledge on one connection (Kafka ties a share session to it), on one
    partition of one topic."""

    def __init__(self, conn: Connection, group: str, topic: str, topic_id: uuid.UUID) -> None:
        self.conn = conn
        self.member = Member(group)
        self.topic = topic
        self.tp = (topic_id, 0)
        self.session_epoch = 0

    async def join(self) -> None:
        """Join and heartbeat until the partition is assigned (Kafka's group
        coordinator needs a FindCoordinator first, and assigns only after the
        share state is initialised)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            assert time.monotonic() < deadline, "never assigned"
            epoch = self.member.epoch
            response = await self.member.send(
                self.conn, epoch, [self.topic] if epoch == 0 else None
            )
            if response.error_code in RETRIABLE:
                await send(self.conn, find_coordinator(self.member.group_id))
            else:
                assert response.error_code == ErrorCode.none, response
                if self.member.assignment:
                    return
            await asyncio.sleep(0.2)

    async def fetch(
        self, acks: Acked | None = None, *, max_records: int = 500, wait_ms: int = 0
    ) -> Any:
        response = await send(
            self.conn,
            share_fetch(
                group_id=self.member.group_id,
                member_id=self.member.member_id,
                session_epoch=self.session_epoch,
                partitions=[self.tp],
                acks=self._acks(acks),
                max_wait_ms=wait_ms,
                max_records=max_records,
            ),
        )
        assert response.error_code == ErrorCode.none, response
        self.session_epoch += 1
        return response

    async def acquire(self, acks: Acked | None = None, **kw: Any) -> list[tuple[int, int, int]]:
        """(first, last, delivery count) of one ShareFetch."""
        return spans(await self.fetch(acks, **kw))

    async def first_fetch(self, **kw: Any) -> Any:
        """ShareFetch until something is acquired (Kafka loads a share-partition
        after the first fetch that names it); that response."""
        deadline = time.monotonic() + WAIT_S
        while True:
            response = await self.fetch(wait_ms=500, **kw)
            if spans(response):
                return response
            assert time.monotonic() < deadline, "nothing acquired"

    async def first_acquire(self, **kw: Any) -> list[tuple[int, int, int]]:
        return spans(await self.first_fetch(**kw))

    async def acquire_within(
        self, records: int, timeout_s: float
    ) -> tuple[list[tuple[int, int]], float]:
        """ShareFetch every 50 ms until `records` records were acquired (their locks
        may expire one by one): ([(offset, delivery count)], seconds to the first)."""
        started = time.monotonic()
        got: list[tuple[int, int]] = []
        first_s = -1.0
        while len(got) < records and time.monotonic() - started < timeout_s:
            for first, last, delivery_count in await self.acquire():
                if first_s < 0:
                    first_s = time.monotonic() - started
                got.extend((offset, delivery_count) for offset in range(first, last + 1))
            await asyncio.sleep(0.05)
        return sorted(got), first_s

    async def acknowledge(self, acks: Acked, *, renew: bool = False) -> ErrorCode:
        """ShareAcknowledge; the partition's error code."""
        response = await send(
            self.conn,
            share_acknowledge(
                group_id=self.member.group_id,
                member_id=self.member.member_id,
                session_epoch=self.session_epoch,
                acks=self._acks(acks),
                is_renew_ack=renew or None,
            ),
        )
        assert response.error_code == ErrorCode.none, response
        self.session_epoch += 1
        return partition_errors(response).get(self.tp, ErrorCode.none)  # type: ignore[arg-type]

    def _acks(self, acks: Acked | None) -> dict[Any, Sequence[AckBatch]] | None:
        if not acks:
            return None
        return {self.tp: [AckBatch(o, o, (t,)) for o, t in sorted(acks.items())]}


def spans(response: Any) -> list[tuple[int, int, int]]:
    return [tuple(span) for got in acquired_of(response).values() for span in got]  # type: ignore[misc]


def count(got: Sequence[tuple[int, int, int]]) -> int:
    return sum(last - first + 1 for first, last, _ in got)


def with_member(
    bootstrap: str,
    group: str,
    topic: str,
    topic_id: uuid.UUID,
    body: Callable[[RawMember], Awaitable[T]],
) -> T:
    async def go(conn: Connection) -> T:
        member = RawMember(conn, group, topic, topic_id)
        await member.join()
        return await body(member)

    return with_connection(bootstrap, go)


def new_topic_and_group(
    bootstrap: str, prefix: str, configs: Mapping[str, object] | None = None
) -> tuple[str, uuid.UUID, str]:
    """A one-partition topic and a group reading it from the earliest offset."""
    topic, group = unique(prefix), unique(f"{prefix}-group")
    topic_id = create_topic(bootstrap, topic)
    share_group(bootstrap, group)
    if configs:
        alter_group_configs(bootstrap, group, configs)
    return topic, topic_id, group


FIRST_RECORD_WAIT_S = 20.0

# ---- group formation ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Formation:
    """Seconds from each member's subscribe to its first record, and which
    partitions each member received records from in that first poll."""

    first_record_s: tuple[float | None, ...]
    partitions_seen: tuple[frozenset[int], ...]


def _formation(bootstrap: str, partitions: int) -> Formation:
    """Two ShareConsumers join a new group on a topic with records in every
    partition (batches of 100), back to back; each is polled until its first
    record, for at most `FIRST_RECORD_WAIT_S` (None: no record by then)."""
    topic, group = unique("formation"), unique("formation-group")
    create_topic(bootstrap, topic, partitions=partitions)
    share_group(bootstrap, group)
    for partition in range(partitions):
        produce_values(
            bootstrap,
            topic,
            (b"%d" % i for i in range(1000)),
            partition=partition,
            flush_every=100,
        )
    consumers: list[ShareConsumer] = []
    joined: list[float] = []
    first: dict[int, float] = {}
    seen: dict[int, frozenset[int]] = {}
    try:
        for _ in range(2):
            joined.append(time.monotonic())
            consumers.append(share_consumer(bootstrap, group, [topic], max_poll_records=100))
        deadline = time.monotonic() + FIRST_RECORD_WAIT_S
        while len(first) < len(consumers) and time.monotonic() < deadline:
            for index, consumer in enumerate(consumers):
                if index in first:
                    consumer.poll(0.02)
                    continue
                batch = records_of(consumer.poll(0.02))
                if batch:
                    first[index] = time.monotonic() - joined[index]
                    seen[index] = frozenset(int(m.partition() or 0) for m in batch)
    finally:
        close_all(consumers)
    return Formation(
        first_record_s=tuple(first.get(i) for i in range(len(consumers))),
        partitions_seen=tuple(seen.get(i, frozenset()) for i in range(len(consumers))),
    )


def _slowest(formation: Formation) -> float:
    """The slowest member's wait for its first record (infinite: none came). On Kafka
    the member that formed the group waits for its heartbeat after the
    initialisation (5 s); one joining after the initialisation may be served at once."""
    return max(float("inf") if s is None else s for s in formation.first_record_s)


FORMATION_BOUND_S = 1.0
"""Shoal's bound on every member's first record after it subscribed: one heartbeat
interval (5 s) is what answering the join before the initialisation cost."""


def test_formation_every_member_gets_records_at_once_on_four_partitions(pair: Pair) -> None:
    """Differs on purpose: Shoal initialises share-partition state inside the join
    heartbeat (server/services/group_service.py), Kafka one heartbeat interval later (its
    figure is printed: both members ~5-6 s in our runs)."""
    kafka, shoal = pair.run(_formation, 4)
    print(f"first record per member, 4 partitions: Kafka {kafka}, Shoal {shoal}")
    assert all(s is not None and s < FORMATION_BOUND_S for s in shoal.first_record_s), shoal
    assert _slowest(kafka) > FORMATION_BOUND_S, ("Kafka's first member waits", kafka)


def test_formation_every_member_gets_records_at_once_on_one_partition(pair: Pair) -> None:
    """Differs on purpose (as on four partitions); the one partition is shared."""
    kafka, shoal = pair.run(_formation, 1)
    print(f"first record per member, 1 partition: Kafka {kafka}, Shoal {shoal}")
    assert all(s is not None and s < FORMATION_BOUND_S for s in shoal.first_record_s), shoal
    assert _slowest(kafka) > FORMATION_BOUND_S, ("Kafka's first member waits", kafka)
    assert shoal.partitions_seen == (frozenset({0}),) * 2


# ---- the in-flight cap ----------------------------------------------------------------


def _capped(bootstrap: str, batch: int) -> tuple[int, int, list[tuple[int, int, int]]]:
    """1000 records in batches of `batch`: (records the first ShareFetch acquires,
    records a second one acquires with nothing acknowledged, the first's spans)."""
    topic, topic_id, group = new_topic_and_group(bootstrap, f"cap{batch}")
    produce_batches(bootstrap, topic, *[batch] * (1000 // batch))

    async def body(member: RawMember) -> tuple[int, int, list[tuple[int, int, int]]]:
        first = await member.first_acquire(max_records=500)
        second = await member.acquire(max_records=500)
        return count(first), count(second), first

    return with_member(bootstrap, group, topic, topic_id, body)


@pytest.mark.parametrize("batch", [1, 50, 150, 1000])
def test_lock_cap_is_reached_at_a_log_batch_end(pair: Pair, batch: int) -> None:
    """Equal: the cap (100) bounds the records in flight, but new records are
    acquired to the end of the log batch holding the cap's last offset (batches of
    150 give 150, a batch of 1000 gives all 1000, past MaxRecords too), and nothing
    more is acquired while they are in flight."""
    kafka, shoal = pair.run(_capped, batch)
    assert shoal == kafka
    assert kafka[0] == max(LOCK_CAP, batch) and kafka[1] == 0, kafka


def _polls_of_confluent_lock_cap_test(bootstrap: str, batches: Sequence[int]) -> list[int]:
    """confluent-kafka-python's lock-cap test with the batches made exact: records of
    each poll of an explicit-mode ShareConsumer (max.poll.records 200), accepting
    every record before the next poll."""
    topic, _topic_id, group = new_topic_and_group(bootstrap, "cap-polls")
    produce_batches(bootstrap, topic, *batches)
    total = sum(batches)
    consumer = share_consumer(bootstrap, group, [topic], explicit=True, max_poll_records=200)
    sizes: list[int] = []
    try:
        started = time.monotonic()
        deadline = started + WAIT_S
        rejoined = False
        while sum(sizes) < total:
            assert time.monotonic() < deadline, sizes
            if not sizes and not rejoined and time.monotonic() > started + LONE_MEMBER_WAIT_S:
                # Kafka 4.2.2 with librdkafka's ShareConsumer at times never hands a lone
                # first member its records (two of three full runs, never alone): a new
                # member, before any record was acquired, leaves the observation as it was
                rejoined = True
                consumer.close()
                consumer = share_consumer(
                    bootstrap, group, [topic], explicit=True, max_poll_records=200
                )
            batch = records_of(consumer.poll(1.0))
            if batch:
                sizes.append(len(batch))
                for message in batch:
                    consumer.acknowledge(message, ConsumerAck.ACCEPT)
    finally:
        consumer.close()
    return sizes


@pytest.mark.parametrize("batches", [(1, 199), (50, 50, 50, 50)])
def test_lock_cap_per_poll_of_a_share_consumer(pair: Pair, batches: tuple[int, ...]) -> None:
    """Equal: a poll may hold more than the cap when a log batch crosses it (1 + 199
    records: one poll of 200, as confluent-kafka-python's
    test_partition_max_record_locks_caps_in_flight saw on Shoal; that test assumes
    a hard cap, which Kafka 4.2 does not have)."""
    kafka, shoal = pair.run(_polls_of_confluent_lock_cap_test, batches)
    assert shoal == kafka
    assert max(kafka) == (200 if batches == (1, 199) else LOCK_CAP), kafka


def _freed_at_the_cap(bootstrap: str) -> dict[str, object]:
    """Three batches of 100 at the cap (100): m1 holds the first batch, m2's fetch is
    parked; m1's next ShareFetch accepts its records. Who acquires what they freed?"""
    topic, topic_id, group = new_topic_and_group(bootstrap, "freed")
    produce_batches(bootstrap, topic, 100, 100, 100)

    async def body(m1: RawMember) -> dict[str, object]:
        conn = await open_connection(bootstrap)
        try:
            m2 = RawMember(conn, group, topic, topic_id)
            await m2.join()
            held = await m1.first_acquire()
            parked = asyncio.create_task(m2.fetch(wait_ms=10_000))
            await asyncio.sleep(1.0)
            waiting = not parked.done()
            acked = await m1.fetch({o: ACCEPT for o in range(100)}, wait_ms=1_000)
            return {
                "m1 held": held,
                "m2 parked": waiting,
                "m2 got": spans(await asyncio.wait_for(parked, WAIT_S)),
                "m1 got with its acknowledgement": spans(acked),
                "m1 acknowledgement error": partition_errors(acked).get(m1.tp),  # type: ignore[call-overload]
            }
        finally:
            await conn.close()

    return with_member(bootstrap, group, topic, topic_id, body)


def test_records_freed_at_the_cap_go_to_the_parked_fetch_first(pair: Pair) -> None:
    """Equal (fixed): the parked fetch of another member takes what an
    acknowledgement carried by a ShareFetch freed; the fetch that carried it gets
    nothing (the cap is reached again)."""
    kafka, shoal = pair.run(_freed_at_the_cap)
    assert shoal == kafka
    assert kafka["m2 got"] == [(100, 199, 1)] and kafka["m1 got with its acknowledgement"] == []


# ---- acknowledgement, redelivery, delivery limit --------------------------------------

ACCEPT, RELEASE, REJECT, RENEW = (
    int(AcknowledgeType.ACCEPT),
    int(AcknowledgeType.RELEASE),
    int(AcknowledgeType.REJECT),
    int(AcknowledgeType.RENEW),
)


def _worked_example(bootstrap: str) -> dict[str, object]:
    """Four one-record batches at the default delivery limit (5): ACCEPT / RELEASE /
    REJECT; the released records come back at delivery count 2; one released at
    every delivery is archived after its fifth; acknowledging an accepted record
    again, or an offset never acquired, is refused; the start offset then passes
    them all. (Kafka 4.2.2 refuses `share.delivery.count.limit` as a group config,
    so the broker default is used.)"""
    topic, topic_id, group = new_topic_and_group(bootstrap, "worked")
    produce_batches(bootstrap, topic, *[1] * 4)

    async def body(member: RawMember) -> dict[str, object]:
        seen: dict[str, object] = {"first": await member.first_acquire()}
        seen["ack"] = await member.acknowledge({0: ACCEPT, 1: RELEASE, 2: REJECT, 3: RELEASE})
        seen["redelivered"] = await member.acquire()
        seen["ack again"] = await member.acknowledge({1: RELEASE, 3: ACCEPT})
        for delivery in (3, 4, 5):
            seen[f"delivery {delivery}"] = await member.acquire()
            seen[f"release {delivery}"] = await member.acknowledge({1: RELEASE})
        seen["after the limit"] = await member.acquire()
        seen["ack of an accepted record"] = await member.acknowledge({0: ACCEPT})
        seen["ack of an offset never acquired"] = await member.acknowledge({9: ACCEPT})
        return seen

    seen = with_member(bootstrap, group, topic, topic_id, body)
    ((start, _epoch, lag),) = describe_offsets(bootstrap, group)[topic].values()
    seen["start offset"], seen["lag"] = start, lag
    return seen


def test_worked_example(pair: Pair) -> None:
    """Equal but for the start offset DescribeShareGroupOffsets shows afterwards,
    which differs on purpose: Kafka's SharePartition persists the start offset it had
    before the acknowledgement moved it (it writes the state, then updates its cached
    offsets), so it shows 1 until the next state write; Shoal persists the start
    offset after the acknowledgement, 4 (every record is finished; the lag is 0 on
    both)."""
    kafka, shoal = pair.run(_worked_example)
    assert (kafka.pop("start offset"), shoal.pop("start offset")) == (1, 4)
    assert shoal == kafka
    assert kafka["redelivered"] == [(1, 1, 2), (3, 3, 2)], kafka
    assert kafka["delivery 5"] == [(1, 1, 5)] and kafka["after the limit"] == [], kafka


def _lock_expiry(bootstrap: str) -> dict[str, object]:
    """A 1 s lock left to expire: the records come back at delivery count 2; the
    response states the lock duration."""
    topic, topic_id, group = new_topic_and_group(bootstrap, "expiry")
    alter_group_configs(bootstrap, group, {"share.record.lock.duration.ms": 1000})
    produce_batches(bootstrap, topic, 3)

    async def body(member: RawMember) -> dict[str, object]:
        response = await member.first_fetch()
        again, elapsed = await member.acquire_within(3, 10.0)
        return {
            "first": spans(response),
            "lock ms": lock_timeout_ms(response),
            "redelivered": again,
            "within 0.9-4 s": 0.9 <= elapsed <= 4.0 or elapsed,
        }

    return with_member(bootstrap, group, topic, topic_id, body)


def test_lock_expiry(pair: Pair) -> None:
    kafka, shoal = pair.run(_lock_expiry)
    assert shoal == kafka
    assert kafka["redelivered"] == [(0, 2), (1, 2), (2, 2)], kafka
    assert kafka["within 0.9-4 s"] is True, kafka


def _renew(bootstrap: str) -> dict[str, object]:
    """KIP-1222: a RENEW acknowledgement 1 s into a 2 s lock re-arms it; another
    member cannot acquire the records when the first lock would have expired, and
    acquires them (delivery count 2) about one lock duration after the renewal."""
    topic, topic_id, group = new_topic_and_group(bootstrap, "renew")
    alter_group_configs(bootstrap, group, {"share.record.lock.duration.ms": 2000})
    produce_batches(bootstrap, topic, 2)

    async def body(first: RawMember) -> dict[str, object]:
        conn = await open_connection(bootstrap)
        try:
            other = RawMember(conn, group, topic, topic_id)
            await other.join()
            acquired = await first.first_acquire()
            acquired_at = time.monotonic()
            await asyncio.sleep(1.0)
            renewed = await first.acknowledge({0: RENEW, 1: RENEW}, renew=True)
            renewed_at = time.monotonic()
            await asyncio.sleep(max(0.0, acquired_at + 2.6 - time.monotonic()))
            blocked = await other.acquire()
            waiting_from = time.monotonic()
            later, first_s = await other.acquire_within(2, 10.0)
            elapsed = waiting_from - renewed_at + first_s
            return {
                "first": acquired,
                "renew": renewed,
                "other at 2.6 s": blocked,
                "other later": later,
                "1.8-5 s after the renewal": 1.8 <= elapsed <= 5.0 or elapsed,
            }
        finally:
            await conn.close()

    return with_member(bootstrap, group, topic, topic_id, body)


def test_renew_acknowledgement(pair: Pair) -> None:
    kafka, shoal = pair.run(_renew)
    assert shoal == kafka
    assert kafka["other at 2.6 s"] == [] and kafka["other later"] == [(0, 2), (1, 2)], kafka


# ---- isolation -------------------------------------------------------------------------


def _transactions(bootstrap: str, topic: str) -> None:
    """Committed a0-a2, aborted b0-b2, committed c0-c1 (each with its marker)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique("txn"), "linger.ms": 0}
    )
    producer.init_transactions(30)
    for prefix, count, commit in (("a", 3, True), ("b", 3, False), ("c", 2, True)):
        producer.begin_transaction()
        for i in range(count):
            producer.produce(topic, value=f"{prefix}{i}".encode(), partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def _isolation(bootstrap: str) -> dict[str, list[tuple[int, bytes | None, int]]]:
    """What a ShareConsumer of a read_committed and of a read_uncommitted group
    receives: (offset, value, delivery count), until a second of silence."""
    topic = unique("isolation")
    create_topic(bootstrap, topic)
    _transactions(bootstrap, topic)
    seen: dict[str, list[tuple[int, bytes | None, int]]] = {}
    for level in ("read_committed", "read_uncommitted"):
        group = share_group(bootstrap, unique(f"isolation-{level}"))
        alter_group_configs(bootstrap, group, {"share.isolation.level": level})
        consumer = share_consumer(bootstrap, group, [topic])
        got: list[tuple[int, bytes | None, int]] = []
        try:
            deadline = time.monotonic() + WAIT_S
            quiet_since = None
            while quiet_since is None or time.monotonic() - quiet_since < 1.0:
                assert time.monotonic() < deadline, got
                batch = records_of(consumer.poll(0.2))
                for m in batch:
                    got.append((int(m.offset() or 0), m.value(), int(m.delivery_count() or 0)))
                if batch:
                    quiet_since = None
                elif got and quiet_since is None:
                    quiet_since = time.monotonic()
        finally:
            consumer.close()
        seen[level] = sorted(got)
    return seen


def test_isolation_levels_with_an_aborted_transaction(pair: Pair) -> None:
    kafka, shoal = pair.run(_isolation)
    assert shoal == kafka
    assert [v for _, v, _ in kafka["read_committed"]] == [b"a0", b"a1", b"a2", b"c0", b"c1"]
    assert len(kafka["read_uncommitted"]) == 8, kafka


# ---- administration ----------------------------------------------------------------------


def _described(bootstrap: str, group: str) -> dict[str, object]:
    """ShareGroupDescribe of one group, normalised: error, state, members (client id,
    subscription, assignment by topic name), epochs equal or not."""
    (g,) = call1(bootstrap, share_group_describe([group])).groups
    return {
        "error": int(g.error_code),
        "state": g.group_state,
        "members": sorted(
            (
                m.client_id,
                tuple(sorted(m.subscribed_topic_names)),
                tuple(sorted(described_assignment(m).items())),
                m.member_epoch == g.assignment_epoch,
            )
            for m in g.members
        ),
        "epochs equal": g.group_epoch == g.assignment_epoch,
    }


def _listed(bootstrap: str, group: str) -> list[tuple[str, str, str]]:
    response = call1(bootstrap, list_groups(types=["share"]))
    assert response.error_code == ErrorCode.none, response
    return [
        (g.group_type, g.group_state, g.protocol_type)
        for g in response.groups
        if g.group_id == group
    ]


def _offsets(bootstrap: str, group: str, topic: str) -> object:
    (g,) = call1(bootstrap, describe_share_group_offsets(group)).groups
    if g.error_code != ErrorCode.none:
        return int(g.error_code)
    return sorted(
        (int(p.partition_index), int(p.start_offset), int(p.lag), int(p.error_code))
        for t in g.topics
        if t.topic_name == topic
        for p in t.partitions
    )


def _altered(bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]) -> object:
    response = call1(
        bootstrap, alter_share_group_offsets(group, {(topic, p): o for p, o in offsets.items()})
    )
    return (
        int(response.error_code),
        response.error_message,
        sorted(
            (int(p.partition_index), int(p.error_code))
            for t in response.responses
            for p in t.partitions
        ),
    )


def _offsets_deleted(bootstrap: str, group: str, topic: str) -> object:
    response = call1(bootstrap, delete_share_group_offsets(group, [topic]))
    return (
        int(response.error_code),
        response.error_message,
        sorted((t.topic_name == topic, int(t.error_code)) for t in response.responses),
    )


def _administration(bootstrap: str) -> dict[str, object]:
    """A member consumes all of a two-partition topic; the group is described,
    listed and its offsets described while it has the member; offsets cannot be
    altered then; once the member left they are altered, deleted, and the group is
    deleted."""
    topic, group = unique("admin"), unique("admin-group")
    create_topic(bootstrap, topic, partitions=2)
    share_group(bootstrap, group)
    for partition in (0, 1):
        produce_batches(bootstrap, topic, 10, partition=partition)
    seen: dict[str, object] = {}
    consumer = share_consumer(bootstrap, group, [topic], client_id="admin-member")
    try:
        got = 0
        deadline = time.monotonic() + WAIT_S
        while got < 20:
            assert time.monotonic() < deadline, got
            got += len(records_of(consumer.poll(0.2)))
        consumer.commit_sync(30)
        deadline = time.monotonic() + WAIT_S
        while True:  # the member's epoch reaches the assignment epoch at a heartbeat
            seen["described"] = _described(bootstrap, group)
            if seen["described"]["epochs equal"] or time.monotonic() > deadline:  # type: ignore[index]
                break
            consumer.poll(0.2)
        seen["listed"] = _listed(bootstrap, group)
        seen["offsets"] = _offsets(bootstrap, group, topic)
        seen["alter while a member"] = _altered(bootstrap, group, topic, {0: 5})
        seen["delete offsets while a member"] = _offsets_deleted(bootstrap, group, topic)
    finally:
        consumer.close()
    deadline = time.monotonic() + WAIT_S
    while _described(bootstrap, group)["state"] != "Empty":
        assert time.monotonic() < deadline, "the member never left"
        time.sleep(0.1)
    seen["described empty"] = _described(bootstrap, group)
    seen["listed empty"] = _listed(bootstrap, group)
    seen["alter"] = _altered(bootstrap, group, topic, {0: 5})
    seen["offsets altered"] = _offsets(bootstrap, group, topic)
    seen["alter past the end"] = _altered(bootstrap, group, topic, {1: 50})
    seen["alter an unknown topic"] = _altered(bootstrap, group, unique("nowhere"), {0: 0})
    seen["alter with an empty group id"] = _altered(bootstrap, "", topic, {0: 0})
    seen["delete offsets with an empty group id"] = _offsets_deleted(bootstrap, "", topic)
    (empty,) = call1(bootstrap, describe_share_group_offsets("", [topic])).groups
    seen["offsets with an empty group id"] = (int(empty.error_code), empty.error_message)
    seen["delete offsets"] = _offsets_deleted(bootstrap, group, topic)
    seen["offsets deleted"] = _offsets(bootstrap, group, topic)
    seen["delete group"] = delete_groups(bootstrap, group)
    seen["described deleted"] = _described(bootstrap, group)
    seen["listed deleted"] = _listed(bootstrap, group)
    seen["delete again"] = delete_groups(bootstrap, group)
    seen["offsets of a deleted group"] = _offsets(bootstrap, group, topic)
    return normalised(seen, {topic: "TOPIC", group: "GROUP"})


def normalised(value: Any, names: Mapping[str, str]) -> Any:
    """`value` with the scenario's unique names replaced by fixed ones."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {normalised(k, names): normalised(v, names) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(normalised(v, names) for v in value)
    return value


def test_administration(pair: Pair) -> None:
    """Equal (an AlterShareGroupOffsets refused for the group has no topics: fixed)
    but for the start offsets DescribeShareGroupOffsets shows after the member
    acknowledged everything, which differ on purpose as in the worked example: Kafka
    persists the start offset from before the acknowledgement (0), Shoal the one
    after it (10); both count a lag of 0."""
    kafka, shoal = pair.run(_administration)
    before_ack = [(0, 0, 0, 0), (1, 0, 0, 0)]
    after_ack = [(0, 10, 0, 0), (1, 10, 0, 0)]
    assert (kafka.pop("offsets"), shoal.pop("offsets")) == (before_ack, after_ack)
    assert (kafka.pop("offsets altered"), shoal.pop("offsets altered")) == (
        [(0, 5, 5, 0), before_ack[1]],
        [(0, 5, 5, 0), after_ack[1]],
    )
    # Differs on purpose: Kafka 4.2.2 fails DescribeShareGroupOffsets of an empty
    # group id with UNKNOWN_SERVER_ERROR; Shoal answers INVALID_GROUP_ID.
    assert kafka.pop("offsets with an empty group id")[0] == ErrorCode.unknown_server_error
    assert shoal.pop("offsets with an empty group id")[0] == ErrorCode.invalid_group_id
    assert shoal == kafka


# ---- Kafka's kafka-share-groups tool ---------------------------------------------------

# a member id may start or end with +, / or -: no word boundaries around it
_MEMBER_ID = re.compile(r"(?<!\S)[A-Za-z0-9+/_-]{22}(?!\S)")
_ADDRESS = re.compile(r"\b127\.0\.0\.1:\d+")


def _tool(bootstrap: str, names: Mapping[str, str], *args: str) -> tuple[int, list[str]]:
    """kafka-share-groups against `bootstrap`: exit code and its output lines (stdout,
    then stderr), with names and member ids replaced and columns collapsed."""
    done = kafka_reference.run_tool("kafka-share-groups", "--bootstrap-server", bootstrap, *args)
    lines = []
    for raw in (done.stdout + done.stderr).splitlines():
        line = raw
        for name, fixed in names.items():
            line = line.replace(name, fixed)
        line = _ADDRESS.sub("ADDRESS", _MEMBER_ID.sub("MEMBER", " ".join(line.split())))
        if line:
            lines.append(line)
    return done.returncode, lines


def _share_groups_tool(bootstrap: str) -> dict[str, tuple[int, list[str]]]:
    """The admin path end to end through Kafka's own tool: list, describe (offsets,
    members, state) with a member, reset and delete offsets refused then, and after
    it left: reset, describe, delete offsets, delete the group."""
    topic, group = unique("tool"), unique("tool-group")
    names = {topic: "TOPIC", group: "GROUP"}
    create_topic(bootstrap, topic, partitions=2)
    share_group(bootstrap, group)
    for partition in (0, 1):
        produce_batches(bootstrap, topic, 10, partition=partition)
    seen: dict[str, tuple[int, list[str]]] = {}

    def tool(what: str, *args: str) -> None:
        code, lines = _tool(bootstrap, names, *args)
        if what.startswith("list"):  # other tests' groups are listed too
            lines = [line for line in lines if "GROUP" in line.split()]
        if what.startswith("reset") and code == 0:  # rows in the tool's hash-map order
            lines = lines[:1] + sorted(lines[1:])
        seen[what] = (code, lines)

    consumer = share_consumer(bootstrap, group, [topic], client_id="tool-member")
    try:
        got = 0
        deadline = time.monotonic() + WAIT_S
        while got < 20:
            assert time.monotonic() < deadline, got
            got += len(records_of(consumer.poll(0.2)))
        consumer.commit_sync(30)
        for _ in range(30):  # a heartbeat or two: the member reaches the group epoch
            consumer.poll(0.2)
        tool("list", "--list")
        tool("list with states", "--list", "--state")
        tool("describe", "--describe", "--group", group)
        tool("describe members", "--describe", "--group", group, "--members")
        tool("describe state", "--describe", "--group", group, "--state")
        reset = ("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
        tool("reset with a member", *reset, "--execute")
        tool("delete offsets with a member", "--delete-offsets", "--group", group, "--topic", topic)
    finally:
        consumer.close()
    deadline = time.monotonic() + WAIT_S
    while _described(bootstrap, group)["state"] != "Empty":
        assert time.monotonic() < deadline, "the member never left"
        time.sleep(0.1)
    tool("reset dry run", *reset, "--dry-run")
    tool("reset", *reset, "--execute")
    tool("describe after reset", "--describe", "--group", group)
    tool("delete offsets", "--delete-offsets", "--group", group, "--topic", topic)
    tool("delete", "--delete", "--group", group)
    tool("describe deleted", "--describe", "--group", group)
    return seen


def test_kafka_share_groups_tool(pair: Pair) -> None:
    """Equal but for the start offsets `--describe` shows after the member
    acknowledged everything: Kafka's persisted start offset is the one before the
    acknowledgement (0), Shoal's the one after it (10); on purpose, as in
    test_worked_example."""
    kafka, shoal = pair.run(_share_groups_tool)
    header = "GROUP TOPIC PARTITION START-OFFSET LAG"
    assert kafka.pop("describe") == (0, [header, "GROUP TOPIC 0 0 0", "GROUP TOPIC 1 0 0"])
    assert shoal.pop("describe") == (0, [header, "GROUP TOPIC 0 10 0", "GROUP TOPIC 1 10 0"])
    assert shoal == kafka
