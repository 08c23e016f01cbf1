"""The share-group part of the shell scenario: a producer and two KIP-932 share
members over the wire against the real broker (share sessions, acquisition locks,
the share coordinator's state), and the oracle of what they were told.

Actors (tasks of `ShellWorld`): a plain producer (acks=all, no idempotence) of records
with values unique in the run to `sim-share` (two partitions), and two share members
that heartbeat (ShareGroupHeartbeat, a member id of their own), fetch in a share
session (ShareFetch, sessions opened at epoch 0 and carried on; a lost connection or a
refused epoch starts a new one) and acknowledge what they acquired in their next
ShareFetch: ACCEPT mostly, RELEASE or REJECT now and then. The group reads from the
earliest offset (`share.auto.offset.reset=earliest`, set before anything is produced).

Checked (`ShareOracle`), as the clients see it: a delivered record was produced; a
record whose ACCEPT or REJECT was confirmed is never delivered again (no double
acceptance); at the end, after the members accepted everything left, every record
whose produce was acknowledged was accepted or rejected (or its acknowledgement went
out unanswered), or archived after its last allowed delivery (none lost), and each
partition's share start offset is its log end.
A lossy power loss (page cache) forgives what it may have taken: confirmed
acknowledgements before it promise nothing more.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kio.records.readers import read_batch

from shoal.client.errors import ErrorCode
from shoal.client.ranges import TopicIdPartition
from shoal.client.requests import (
    GROUP_RESOURCE,
    ConfigChange,
    create_topic,
    describe_share_group_offsets,
    incremental_alter_configs,
    list_offsets,
    metadata,
    produce,
)
from shoal.client.share_requests import AckBatch, heartbeat, partitions_of, share_fetch
from shoal.protocol.record_batch import CONTROL_MASK, encode_batch, iter_headers
from shoal.protocol.share import AcknowledgeType
from shoal.sim.invariants import _require
from shoal.sim.shell_connection import RequestFailed, SimConnection

if TYPE_CHECKING:
    from shoal.sim.shell_world import ShellWorld

SHARE_TOPIC = "sim-share"
SHARE_PARTITIONS = 2
SHARE_GROUP = "sim-sg"
SHARE_MEMBERS = 2
FIRST_VALUE = 1_000_000_000
"""Share records' values start here (apart from the transactional ones)."""
DELIVERY_LIMIT = 5
"""`group.share.delivery.count.limit` (Kafka's default)."""
MAX_RECORDS = 8
DRAIN_ROUNDS = 120


Answered = tuple[list[tuple[int, int, int]], dict[int, int]]
"""A partition's part of a ShareFetch answer: what was acquired, as (offset, value,
delivery count), and offset -> value of every data record in the batches sent."""


class ShareOracle:
    """What the share clients were told, and the checks (module docstring)."""

    def __init__(self, world: ShellWorld) -> None:
        self.world = world
        self.counts: Counter[str] = world.checker.counts
        self.produced: set[int] = set()
        """Values whose produce was acknowledged."""
        self.maybe: set[int] = set()
        """Values whose produce went unanswered (written or not)."""
        self.settled: set[int] = set()
        """Values whose ACCEPT or REJECT was confirmed."""
        self.unanswered: set[int] = set()
        """Values whose acknowledgement went unanswered (it may have been applied)."""
        self.producing = True
        """The producer may still send (the members' drain waits for it to stop)."""
        self.last_count: dict[int, int] = {}
        """Value -> the delivery count of its latest delivery."""

    def delivered(self, value: int, delivery_count: int) -> None:
        self.counts["share deliveries checked"] += 1
        _require(
            value in self.produced or value in self.maybe,
            "a delivered share record was produced",
            value,
        )
        _require(
            value not in self.settled,
            "an accepted (or rejected) share record is never delivered again",
            (value, delivery_count),
        )
        self.last_count[value] = delivery_count

    def confirmed(self, values: list[int]) -> None:
        self.settled.update(values)

    def unsure(self, values: Iterable[int]) -> None:
        """Acknowledgements sent whose answer never came (applied or not)."""
        self.unanswered.update(values)

    # ---- hooks for the extended share scenarios (sim/shell_share_ext.py); no-ops here

    def produced_at(
        self, partition: int, base_offset: int, values: list[int], sent_ms: int
    ) -> None:
        """A produce of `values` sent at `sent_ms` was acknowledged at `base_offset`."""

    def fetch_sent(
        self,
        member: str,
        partitions: list[int],
        max_wait_ms: int,
        acks: Mapping[int, list[tuple[int, int, int]]],
    ) -> None:
        """`member` sends a ShareFetch for `partitions` carrying `acks` (partition ->
        (offset, value, type))."""

    def fetch_answered(self, member: str, answered: Mapping[int, Answered]) -> None:
        """`member`'s ShareFetch was answered: by partition (without an error), what
        it acquired, as (offset, value, delivery count), and every data record of the
        batches sent (offset -> value). Called after `delivered` of each record."""

    def acks_answered(self, partition: int, acks: list[tuple[int, int, int]]) -> None:
        """The ShareFetch carrying acknowledgements `acks` of `partition` was answered
        (whatever its codes): the broker is done with them."""

    def fetch_failed(self, member: str) -> None:
        """`member`'s ShareFetch went unanswered."""

    def session_lost(self, member: str) -> None:
        """`member`'s session may have ended (its records released) from now on."""

    def heartbeat_ok(self, member: str, sent_ms: int) -> None:
        """A heartbeat of `member` sent at `sent_ms` was answered without error."""

    def disturbed(self, *, ongoing: bool = False) -> None:
        """The broker died, was shut down or reset a connection: any record may have
        been released. `ongoing`: until the next call (a clean shutdown is under way)."""

    def done(self) -> bool:
        """Every acknowledged produce settled, or delivered its last allowed time."""
        return not self._lost()

    def _lost(self) -> list[int]:
        """Acknowledged produces not (or not surely) settled, nor delivered their last
        allowed time."""
        return sorted(
            v
            for v in self.produced
            if v not in self.settled
            and v not in self.unanswered
            and self.last_count.get(v, 0) < DELIVERY_LIMIT
        )

    def forget_lost(self) -> None:
        """A lossy power loss: confirmed acknowledgements before it promise nothing."""
        self.settled.clear()
        self.unanswered.clear()

    async def check_final(self, world: ShellWorld) -> None:
        lost = self._lost()
        if world.checker.lossy:
            return  # what a lossy loss took may never come back
        _require(not lost, "no acknowledged share record is lost", lost[:10])
        ends = await _log_ends(world)
        starts = await _share_starts(world)
        _require(
            all(starts.get(p, -1) >= ends[p] for p in ends),
            "each share partition's start offset reaches its log end",
            (starts, ends),
        )
        self.counts["share final checks"] += 1


async def setup(world: ShellWorld, connection: SimConnection) -> uuid.UUID:
    """The share topic and the group's reset policy; the topic's id."""
    await world.retry(
        lambda: connection.call(create_topic(SHARE_TOPIC, partitions=SHARE_PARTITIONS))
    )
    changes = {(GROUP_RESOURCE, SHARE_GROUP): [ConfigChange("share.auto.offset.reset", "earliest")]}
    await world.retry(lambda: connection.call(incremental_alter_configs(changes)))
    response = await world.retry(lambda: connection.call(metadata([SHARE_TOPIC])))
    return uuid.UUID(str(response.topics[0].topic_id))


async def producer(world: ShellWorld, oracle: ShareOracle) -> None:

    connection = SimConnection(world, "sim-share-producer")
    next_value = FIRST_VALUE
    while True:
        await asyncio.sleep(world.rng.randint(100, 2_000) / 1000)
        if not world.running:
            break
        count = world.rng.randint(1, 5)
        values = list(range(next_value, next_value + count))
        next_value += count
        batch = encode_batch(
            [(None, str(v).encode()) for v in values], timestamp_ms=world.clock.wall_ms()
        )
        partition = world.rng.randrange(SHARE_PARTITIONS)
        oracle.maybe.update(values)
        try:
            response = await connection.call(produce({(SHARE_TOPIC, partition): batch}))
        except RequestFailed:
            continue
        (part,) = response.responses[0].partition_responses
        world.note(
            f"share produce p{partition} {values[0]}+{count}: "
            f"{ErrorCode(part.error_code).name} at {part.base_offset}"
        )
        if part.error_code == ErrorCode.none:
            oracle.produced.update(values)
    oracle.producing = False
    await connection.close()


class ShareMember:
    """One share member: its id, epoch, session and the acknowledgements it owes."""

    def __init__(self, world: ShellWorld, oracle: ShareOracle, index: int, topic_id: uuid.UUID):
        self.world = world
        self.oracle = oracle
        self.name = f"sim-share-{index}"
        self.member_id = str(uuid.UUID(int=world.rng.getrandbits(128), version=4))
        self.topic_id = topic_id
        self.epoch = 0
        self.session_epoch = 0
        self.assigned: set[int] = set()
        self.pending: dict[TopicIdPartition, list[tuple[int, int, int]]] = {}
        """Acknowledgements to send: partition -> (offset, value, type)."""
        self.next_beat_ms = 0
        self.drain_rounds = DRAIN_ROUNDS
        self.connection: SimConnection | None = None

    async def run(self, *, draining: bool = False) -> None:

        self.connection = connection = SimConnection(self.world, self.name)
        rounds = 0
        while self.world.running or (draining and rounds < self.drain_rounds):
            if not self.world.running:
                rounds += 1
                if self._drained():
                    break
            try:
                if self.world.clock.monotonic_ms() >= self.next_beat_ms or not self.assigned:
                    await self._heartbeat(connection)
                if self.assigned:
                    await self._fetch(connection, accept_all=not self.world.running)
                    await self._after_fetch()
                else:
                    await asyncio.sleep(0.5)
            except RequestFailed:
                self.session_epoch = 0
                self.pending.clear()  # unsent: the locks expire and the records come back
                self.oracle.session_lost(self.name)
                await asyncio.sleep(self.world.rng.randint(100, 1_000) / 1000)
        await connection.close()

    def _drained(self) -> bool:
        """The world stopped: whether this member is done (everything settled)."""
        return not self.oracle.producing and self.oracle.done() and not self.pending

    async def _after_fetch(self) -> None:
        """What a member does between two ShareFetches (nothing here: it fetches again)."""

    def _max_wait_ms(self) -> int:
        return self.world.rng.choice([0, 200, 1_000])

    async def _heartbeat(self, connection: SimConnection) -> None:
        subscribed = [SHARE_TOPIC] if self.epoch == 0 else None
        sent_ms = self.world.clock.monotonic_ms()
        response = await connection.call(
            heartbeat(SHARE_GROUP, self.member_id, self.epoch, subscribed)
        )
        if response.error_code in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.epoch, self.assigned = 0, set()
            self.oracle.session_lost(self.name)
            return
        if response.error_code != ErrorCode.none:
            return
        self.oracle.heartbeat_ok(self.name, sent_ms)
        self.epoch = response.member_epoch
        self.next_beat_ms = self.world.clock.monotonic_ms() + int(
            response.heartbeat_interval.total_seconds() * 1000
        )
        if response.assignment is not None:
            self.assigned = {
                p
                for tp in response.assignment.topic_partitions
                if tp.topic_id == self.topic_id
                for p in tp.partitions
            }

    async def _fetch(self, connection: SimConnection, *, accept_all: bool) -> None:

        acks = {
            tp: tuple(AckBatch(o, o, (t,)) for o, _v, t in sorted(items))
            for tp, items in self.pending.items()
        }
        sent, self.pending = self.pending, {}
        listed = [(self.topic_id, p) for p in sorted(self.assigned)]
        max_wait_ms = self._max_wait_ms()
        call = share_fetch(
            group_id=SHARE_GROUP,
            member_id=self.member_id,
            session_epoch=self.session_epoch,
            partitions=listed,
            acks=acks,
            max_wait_ms=max_wait_ms,
            max_records=MAX_RECORDS,
        )
        self.oracle.fetch_sent(
            self.name,
            sorted(self.assigned),
            max_wait_ms,
            {tp.partition: items for tp, items in sent.items()},
        )
        try:
            response = await connection.call(call)
        except RequestFailed:
            # The acknowledgements went out unanswered: applied or not, nobody knows.
            self.oracle.unsure(v for items in sent.values() for _o, v, t in items)
            self.oracle.fetch_failed(self.name)
            raise
        for tp, items in sent.items():
            self.oracle.acks_answered(tp.partition, items)  # applied or not, done with
        if response.error_code != ErrorCode.none:
            self.session_epoch = 0  # a session the broker does not know: start a new one
            self.oracle.fetch_answered(self.name, {})  # refused: nothing acquired
            self.oracle.session_lost(self.name)
            return
        self.session_epoch += 1
        answered: dict[int, Answered] = {}
        for tp, part in partitions_of(response).items():
            if tp in sent:
                shown = [(o, t) for o, _v, t in sent[tp]]
                error = ErrorCode(part.acknowledge_error_code).name
                self.world.note(f"{self.name} acks p{tp.partition} {shown}: {error}")
            if tp in sent and part.acknowledge_error_code == ErrorCode.none:
                self.oracle.confirmed([v for _o, v, t in sent[tp] if t != AcknowledgeType.RELEASE])
            if part.error_code != ErrorCode.none:
                continue
            if part.acquired_records:
                spans = [
                    (a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records
                ]
                self.world.note(f"{self.name} acquired p{tp.partition} {spans}")
            values = _values_at(bytes(part.records or b""))
            delivered: list[tuple[int, int, int]] = []
            for acquired in part.acquired_records:
                for offset in range(acquired.first_offset, acquired.last_offset + 1):
                    value = values.get(offset)
                    if value is None:
                        continue  # a control record or a gap
                    self.oracle.delivered(value, acquired.delivery_count)
                    delivered.append((offset, value, acquired.delivery_count))
                    self.pending.setdefault(tp, []).append(
                        (offset, value, self._ack_type(accept_all))
                    )
            answered[tp.partition] = (delivered, values)
        self.oracle.fetch_answered(self.name, answered)

    def _ack_type(self, accept_all: bool) -> int:
        if accept_all:
            return int(AcknowledgeType.ACCEPT)
        return int(
            self.world.rng.choices(
                [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT],
                [80, 15, 5],
            )[0]
        )


def _values_at(records: bytes) -> dict[int, int]:
    """Offset -> value of the data records in a fetched `records` blob."""
    values: dict[int, int] = {}
    for header in iter_headers(records):
        if header.attributes & CONTROL_MASK:
            continue
        batch, _ = read_batch(records, header.position)
        for record in batch.records:
            values[int(record.offset)] = int(record.value or b"-1")
    return values


async def _log_ends(world: ShellWorld) -> dict[int, int]:
    response = await world.checker.call(
        list_offsets({(SHARE_TOPIC, p): -1 for p in range(SHARE_PARTITIONS)})
    )
    return {int(p.partition_index): int(p.offset) for p in response.topics[0].partitions}


async def _share_starts(world: ShellWorld) -> dict[int, int]:
    response = await world.checker.call(describe_share_group_offsets(SHARE_GROUP))
    (group,) = response.groups
    starts: dict[int, int] = {}
    for topic in group.topics:
        for p in topic.partitions:
            starts[int(p.partition_index)] = int(p.start_offset)
    return starts
