"""The shell scenario with Shoal's share-group extensions: per-key ordered delivery
(`shoal.share.delivery.order=key`) and scheduled delivery
(`shoal.share.delivery.delay.max.ms`, the `shoal.deliver.at` header), driven over the
wire against the real broker in the seeded world of sim/shell_world.py.

`ExtWorld` is a `ShellWorld` whose share actors are these (every other actor and
every fault is the shell scenario's):

- a producer of keyed records (a handful of keys, some null) to `sim-share`, values
  unique in the run; with a delay cap, most records carry `shoal.deliver.at` (some
  in the past, some beyond the cap, some malformed) and their timestamps lag the
  clock a little;
- three share members sharing the two partitions (the simple assignor gives a
  partition to one or two of them), which take time to process what they acquired,
  acknowledge ACCEPT/RELEASE/REJECT, now and then forget a record (its lock runs
  out), stall past the lock duration, or crash (their connection closes, with or
  without a leave, and they join again as new members).

The group's configs are set before anything is produced: reset to earliest, a 15 s
lock, a 45 s session, the order and the delay cap.

Checked (`ExtOracle`), beyond the share scenario's own checks (nothing delivered
twice once settled, nothing lost at the end):

- key order (sim/shell_share_keys.py): I1, no two acquisitions hold records of one
  key at once; I2, no record is handed out while an earlier record of its key is not
  acknowledged or archived. With `order=none` the violations are counted, not failed
  (`check_order`), which shows the checks see them;
- scheduled delivery: no record is delivered before its due time, min(deliver.at,
  timestamp + cap), on the simulated wall clock (a malformed or absent header: at
  once), across restarts; every record is delivered in the end (the share checks).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Mapping
from typing import Any

from shoal.client.errors import ErrorCode
from shoal.client.requests import (
    GROUP_RESOURCE,
    ConfigChange,
    create_topic,
    incremental_alter_configs,
    metadata,
    produce,
)
from shoal.client.share_requests import heartbeat
from shoal.protocol.record_batch import encode_batch
from shoal.protocol.records import DELIVER_AT_HEADER
from shoal.sim.invariants import InvariantViolated, _require
from shoal.sim.shell_connection import REQUEST_TIMEOUT_S, RequestFailed, SimConnection
from shoal.sim.shell_share import (
    DELIVERY_LIMIT,
    FIRST_VALUE,
    SHARE_GROUP,
    SHARE_PARTITIONS,
    SHARE_TOPIC,
    Answered,
    ShareMember,
    ShareOracle,
)
from shoal.sim.shell_share_keys import KeyOrderBook
from shoal.sim.shell_world import ShellWorld

KEYS = (b"k0", b"k1", b"k2", b"k3", None)
KEY_WEIGHTS = (30, 25, 20, 10, 15)
LOCK_MS = 15_000
"""`share.record.lock.duration.ms` of the group (the broker's lowest by default)."""
SESSION_TIMEOUT_MS = 45_000
MEMBERS = 3
MALFORMED = (b"", b"soon", b"-1000", b"12.5", b"9" * 20, b" 1764400000000")
"""`shoal.deliver.at` values that do not parse (not 1-19 ASCII digits)."""
DRAIN_ROUNDS = 1_000
"""ShareFetches a member makes at most once the world stops (it stops sooner when
everything is settled; the world waits 120 s at most)."""
QUIET_SLACK_MS = 5_000
"""A draining member stops once everything is settled and it has heard nothing new for
a lock's duration and this much more."""
DRAIN_WAITS_MS = (1_000, 5_000)
"""A draining member's ShareFetch waits (scheduled records come due meanwhile)."""


class ExtOracle(ShareOracle):
    """The share checks, and the key-order and due-time checks (module docstring)."""

    def __init__(self, world: ShellWorld, *, check_order: bool, delay_max_ms: int) -> None:
        super().__init__(world)
        self.check_order = check_order
        self.delay_max_ms = delay_max_ms
        self.key_of: dict[int, bytes | None] = {}
        self.due_ms: dict[int, int] = {}
        """Value -> the wall-clock time before which it may not be delivered."""
        self.produced_ms: dict[int, tuple[int, int]] = {}
        """Value -> (wall-clock time of its produce, broker restarts before it)."""
        self.malformed: set[int] = set()
        self.restarts_ms: list[int] = []
        """Wall-clock times of the broker's restarts (crashes and clean ones)."""
        self.book = KeyOrderBook(
            key_of=self.key_of,
            lock_ms=LOCK_MS,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            delivery_limit=DELIVERY_LIMIT,
            unseen_slack_ms=int(REQUEST_TIMEOUT_S * 1000),
            counts=self.counts,
        )

    def _now(self) -> int:
        return self.world.clock.monotonic_ms()

    def delivered(self, value: int, delivery_count: int) -> None:
        super().delivered(value, delivery_count)
        # Delivered again: an acknowledgement of it that went unanswered was not applied
        # (or came to nothing); it must be settled anew.
        self.unanswered.discard(value)
        if value in self.malformed:
            self.counts["malformed deliver.at delivered"] += 1

    def _check_due(self, partition: int, offset: int, value: int, delivery_count: int) -> None:
        """A record delivered now: not before its due time. Not asked of an offset
        whose share state a lossy power loss may have left speaking of another record
        (shell_share_keys.py): that state may count deliveries of its own, and only a
        first delivery waits."""
        due = self.due_ms.get(value)
        if due is None or not self.book.trusted(partition, offset):
            return
        now = self.world.clock.wall_ms()
        self.counts["scheduled deliveries checked"] += 1
        _require(
            now >= due,
            "no scheduled record is delivered before its due time",
            (partition, offset, value, delivery_count, f"due {due}, delivered by {now}"),
        )
        produced_ms, restarts = self.produced_ms[value]
        if delivery_count == 1 and due > produced_ms:
            self.counts["deliveries that waited for their due time"] += 1
            if len(self.restarts_ms) > restarts and due > self.restarts_ms[restarts]:
                self.counts["scheduled records carried across a restart"] += 1

    def scheduled(self, value: int, due_ms: int | None, *, malformed: bool = False) -> None:
        """`value` is produced now, due at `due_ms` (None: at once)."""
        self.produced_ms[value] = (self.world.clock.wall_ms(), len(self.restarts_ms))
        if due_ms is not None:
            self.due_ms[value] = due_ms
        if malformed:
            self.malformed.add(value)

    def produced_at(
        self, partition: int, base_offset: int, values: list[int], sent_ms: int
    ) -> None:
        self.book.produced(partition, base_offset, values, sent_ms)

    def fetch_sent(
        self,
        member: str,
        partitions: list[int],
        max_wait_ms: int,
        acks: Mapping[int, list[tuple[int, int, int]]],
    ) -> None:
        down = self.world.broker is None
        self.book.fetch_sent(member, partitions, max_wait_ms, acks, self._now(), broker_down=down)

    def fetch_answered(self, member: str, answered: Mapping[int, Answered]) -> None:
        for partition, (acquired, _seen) in answered.items():
            for offset, value, delivery_count in acquired:
                self._check_due(partition, offset, value, delivery_count)
                if delivery_count == DELIVERY_LIMIT:
                    self.counts["deliveries at the delivery limit"] += 1
        violations = self.book.answered(member, answered, self._now())
        self.counts["key-order acquisitions checked"] += sum(1 for a, _s in answered.values() if a)
        for rule, detail in violations:
            self.counts[f"{rule.split(':')[0]} violations seen"] += 1
            self.world.note(f"{rule}: {detail}")
            if self.check_order:
                raise InvariantViolated(rule, str(detail))

    def acks_answered(self, partition: int, acks: list[tuple[int, int, int]]) -> None:
        self.book.acks_answered(partition, acks, self._now())

    def fetch_failed(self, member: str) -> None:
        self.book.fetch_failed(member, self._now())

    def session_lost(self, member: str) -> None:
        self.book.session_lost(member)

    def heartbeat_ok(self, member: str, sent_ms: int) -> None:
        self.book.heartbeat_ok(member, sent_ms)

    def disturbed(self, *, ongoing: bool = False) -> None:
        died = self.world.broker is None
        if died:
            self.restarts_ms.append(self.world.clock.wall_ms())
        self.book.disturbed(ongoing=ongoing, broker_died=died, now_ms=self._now())

    def forget_lost(self) -> None:
        super().forget_lost()
        self.book.lossy()


async def setup(world: ExtWorld, connection: SimConnection) -> uuid.UUID:
    """The share topic and the group's configs (module docstring); the topic's id."""
    await world.retry(
        lambda: connection.call(create_topic(SHARE_TOPIC, partitions=SHARE_PARTITIONS))
    )
    configs = {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": str(LOCK_MS),
        "share.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "shoal.share.delivery.order": world.order,
        "shoal.share.delivery.delay.max.ms": str(world.delay_max_ms),
    }
    changes = {(GROUP_RESOURCE, SHARE_GROUP): [ConfigChange(k, v) for k, v in configs.items()]}
    response = await world.retry(lambda: connection.call(incremental_alter_configs(changes)))
    errors = [(r.error_code, r.error_message) for r in response.responses if r.error_code]
    _require(not errors, "the share group's configs are accepted", errors)
    world.note(f"share group configs: {configs}")
    response = await world.retry(lambda: connection.call(metadata([SHARE_TOPIC])))
    return uuid.UUID(str(response.topics[0].topic_id))


async def producer(world: ExtWorld, oracle: ExtOracle) -> None:
    """Keyed records, some scheduled (module docstring), until the world stops."""
    connection = SimConnection(world, "sim-share-producer")
    next_value = FIRST_VALUE
    rng = world.rng
    while True:
        await asyncio.sleep(rng.randint(100, 2_000) / 1000)
        if not world.running:
            break
        count = rng.randint(1, 5)
        values = list(range(next_value, next_value + count))
        next_value += count
        now = world.clock.wall_ms()
        timestamp = now - rng.randint(0, 3_000) if oracle.delay_max_ms else now
        records, headers = [], []
        for value in values:
            key = rng.choices(KEYS, KEY_WEIGHTS)[0]
            oracle.key_of[value] = key
            records.append((key, str(value).encode()))
            headers.append(_schedule(world, oracle, value, timestamp, now))
        batch = encode_batch(records, timestamp_ms=timestamp, headers=headers)
        partition = rng.randrange(SHARE_PARTITIONS)
        oracle.maybe.update(values)
        sent_ms = world.clock.monotonic_ms()
        try:
            response = await connection.call(produce({(SHARE_TOPIC, partition): batch}))
        except RequestFailed:
            oracle.book.produce_unanswered(partition, count)
            continue
        (part,) = response.responses[0].partition_responses
        keys = [oracle.key_of[v] for v in values]
        world.note(
            f"share produce p{partition} {values[0]}+{count} keys {keys}: "
            f"{ErrorCode(part.error_code).name} at {part.base_offset}"
        )
        if part.error_code == ErrorCode.none:
            oracle.produced.update(values)
            oracle.produced_at(partition, part.base_offset, values, sent_ms)
        else:
            oracle.book.produce_unanswered(partition, count)  # refused: written or not
    oracle.producing = False
    await connection.close()


def _schedule(
    world: ExtWorld, oracle: ExtOracle, value: int, timestamp: int, now: int
) -> list[tuple[bytes | None, bytes | None]]:
    """The headers of `value`'s record; its due time noted in the oracle."""
    cap = oracle.delay_max_ms
    if not cap:
        return []
    draw = world.rng.random()
    if draw < 0.25:
        oracle.scheduled(value, None)
        return []  # no header: at once
    if draw < 0.35:
        oracle.scheduled(value, None, malformed=True)
        return [(DELIVER_AT_HEADER, world.rng.choice(MALFORMED))]
    deliver_at = now + world.rng.randint(-5_000, 2 * cap)
    oracle.scheduled(value, min(deliver_at, timestamp + cap))
    return [(DELIVER_AT_HEADER, str(deliver_at).encode())]


class ExtMember(ShareMember):
    """A share member that takes time over its records and misbehaves now and then
    (module docstring). It drains longer than the share scenario's members: a crashed
    member that did not leave keeps its partitions until its session times out (45 s,
    counted again from each broker restart), and the records there wait for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drain_rounds = DRAIN_ROUNDS
        self.news_ms = 0
        """When this member last acquired something or lost a request."""

    def _drained(self) -> bool:
        """Done, and quiet for longer than a lock: an acknowledgement that went out
        unanswered and was not applied leaves its record locked until then, and it
        comes back."""
        quiet_ms = self.world.clock.monotonic_ms() - self.news_ms
        return super()._drained() and quiet_ms > LOCK_MS + QUIET_SLACK_MS

    async def _fetch(self, connection: SimConnection, *, accept_all: bool) -> None:
        try:
            await super()._fetch(connection, accept_all=accept_all)
        except RequestFailed:
            self.news_ms = self.world.clock.monotonic_ms()
            raise
        if self.pending:
            self.news_ms = self.world.clock.monotonic_ms()

    async def _after_fetch(self) -> None:
        if not self.world.running:
            return
        rng = self.world.rng
        draw = rng.random()
        if draw < 0.01:
            await self._crash()
        elif draw < 0.03:
            stall_s = rng.randint(LOCK_MS, LOCK_MS + 10_000) / 1000
            self.world.note(f"{self.name} stalls {stall_s:.0f} s holding {self._held()}")
            await asyncio.sleep(stall_s)
        elif draw < 0.07 and self.pending:
            forgotten = rng.choice(sorted(self.pending, key=lambda tp: tp.partition))
            items = self.pending.pop(forgotten)
            self.world.note(f"{self.name} forgets p{forgotten.partition} {[o for o, *_ in items]}")
        elif self.pending:
            await asyncio.sleep(rng.randint(0, 400) / 1000)  # processing

    def _max_wait_ms(self) -> int:
        wait = super()._max_wait_ms()
        ext = self.world
        assert isinstance(ext, ExtWorld)
        if not ext.running and ext.delay_max_ms:
            return ext.rng.choice(DRAIN_WAITS_MS)
        return wait

    def _held(self) -> dict[int, list[int]]:
        return {tp.partition: [o for o, *_ in items] for tp, items in self.pending.items()}

    async def _crash(self) -> None:
        """The consumer process dies: its connection closes (the broker ends its
        sessions), sometimes after a leave; it joins again as a new member."""
        self.world.note(f"{self.name} crashes holding {self._held()}")
        self.pending.clear()
        self.oracle.session_lost(self.name)
        connection = self.connection
        if connection is not None and self.world.rng.random() < 0.5 and self.epoch > 0:
            try:
                await connection.call(heartbeat(SHARE_GROUP, self.member_id, -1, None))
            except RequestFailed:
                pass  # a crash: whatever the leave came to
        if connection is not None:
            await connection.close()
        self.member_id = str(uuid.UUID(int=self.world.rng.getrandbits(128), version=4))
        self.epoch, self.session_epoch, self.assigned = 0, 0, set()
        await asyncio.sleep(self.world.rng.randint(100, 2_000) / 1000)


class ExtWorld(ShellWorld):
    """The shell world with the extended share actors and oracle (module docstring).
    `order`: the group's `shoal.share.delivery.order`; `check_order`: fail on a key
    order violation (else count it); `delay_max_ms`: the delay cap (0: off)."""

    def __init__(
        self,
        *,
        order: str = "key",
        check_order: bool | None = None,
        delay_max_ms: int = 0,
        **kwargs: Any,
    ) -> None:
        self.order = order
        self.check_order = order == "key" if check_order is None else check_order
        self.delay_max_ms = delay_max_ms
        super().__init__(**kwargs)

    def _share_oracle(self) -> ExtOracle:
        return ExtOracle(self, check_order=self.check_order, delay_max_ms=self.delay_max_ms)

    async def _share_setup(self, connection: SimConnection) -> uuid.UUID:
        return await setup(self, connection)

    def _share_producer(self) -> Coroutine[Any, Any, None]:
        assert isinstance(self.share, ExtOracle)
        return producer(self, self.share)

    def _share_members(self, topic_id: uuid.UUID) -> list[ShareMember]:
        return [ExtMember(self, self.share, index, topic_id) for index in range(MEMBERS)]
