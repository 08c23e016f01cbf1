"""The shell scenario: the real broker (`server.broker.Broker`: handlers, purgatory,
timers, services, coordinators, logs on a temporary directory) on the simulator's
loop, network and disk, driven over the Kafka wire by simulated clients.

The broker is started as a process of the loop (shoal.sim.loop) with the run's
virtual clock, the in-memory network (sim/pipes.py) as its transport and the
simulated disk executor (sim/shell_disk.py); it is reached only through its public
`start` and the wire. A crash kills the process (none of its tasks runs again, no
shutdown step), abandons its files, and starts a new `Broker` on the same data
directory, which recovers from what the logs hold.

Actors, each a task with its own connection(s), all concurrent:

- three KIP-848 consumer-group members (here: ConsumerGroupHeartbeat join, heartbeat
  at the interval the broker gives with the partitions they own, leave now and then,
  stall past the session timeout; OffsetCommit of owned partitions at their epoch);
- a read_committed consumer long-polling `sim-data-0` (here);
- the transactional producer and its zombie (shell_txn.py), the share members and
  their producer (shell_share.py), the idempotent producer (shell_produce.py);
- the world: every tick (a few virtual seconds) it may crash the broker (with a
  power loss now and then), restart it cleanly, or reset a client connection, then
  checks the invariants (shoal.sim.shell_invariants) over the wire.

Owns the world's run: the loop, network and disk of a run, the broker process's
start, crash and clean restart, the faults of each tick, and the drain.

At the end faults stop, the producer finishes its transaction, time passes beyond
the transaction timeout, and the final checks run. Every draw is from the run's one
generator and the loop runs on virtual time, so a seed replays exactly.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from shoal.client.errors import ErrorCode
from shoal.client.requests import (
    create_topic,
    offset_commit,
)
from shoal.config import BrokerConfig
from shoal.protocol.schema import request_schema
from shoal.server.broker import Broker
from shoal.sim import shell_produce, shell_share
from shoal.sim.disk import Disk
from shoal.sim.faults import FaultRates, Faults
from shoal.sim.invariants import InvariantViolated
from shoal.sim.loop import SimClock, SimLoop, seeded_entropy
from shoal.sim.pipes import Network
from shoal.sim.shell_connection import (
    CONSUMER_GROUP,
    DATA_TOPIC,
    HOST,
    MEMBERS,
    OFFSETS_PARTITIONS,
    PORT,
    STALL_MS,
    TOPIC,
    TOPIC_PARTITIONS,
    RequestFailed,
    SimConnection,
)
from shoal.sim.shell_disk import SimExecutor
from shoal.sim.shell_invariants import ShellChecker
from shoal.sim.shell_txn import Producer, TxnClients

T = TypeVar("T")

_TIMEOUT_DEFAULT = datetime.timedelta(milliseconds=-1)
TICKS_DEFAULT = 40
TICK_MS = (500, 4_000)
"""The world acts (a fault, then the checks) every this many virtual ms."""
DOWNTIME_MS = (0, 3_000)
"""A crashed broker comes back after this long."""
SHUTDOWN_BOUND_S = 120
"""A clean shutdown ends within this (virtual) time: `shoal.shutdown.timeout.ms`
(30 s by default) plus the work it waits for."""


@dataclass(slots=True)
class Member:
    name: str
    member_id: str = ""
    """The id the coordinator gave at the first join (ConsumerGroupHeartbeat v0)."""
    epoch: int = 0
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    interval_ms: int = 1_000


class ShellWorld:
    """A run of `ticks` world ticks from `seed` in `directory` (module docstring)."""

    def __init__(
        self,
        *,
        seed: int,
        directory: Path,
        rates: FaultRates | None = None,
        verbose: bool = False,
        shuffle: bool = True,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = Faults(self.rng, rates or FaultRates())
        self.clock = SimClock()
        self.loop = SimLoop(self.clock, self.rng, shuffle=shuffle)
        self.network = Network(self.loop, self.rng, self.faults)
        self.disk = SimExecutor(self.loop, self.rng, self.faults)
        self.directory = directory
        self.disk_model = Disk(directory)
        """What each fsync made durable (sim/disk.py): no real fsync is made."""
        self.entropy = random.Random(self.rng.getrandbits(64))
        """Where the broker's random ids come from (a generator of its own, so that
        how many ids the broker makes does not move the world's draws)."""
        self.verbose = verbose
        self.schedule: list[str] = []
        self.broker: Broker | None = None
        self.process = 0
        self.crashes = 0
        self.tick = 0
        self.members = {m: Member(m) for m in MEMBERS}
        self.producer = Producer()
        self.zombie: tuple[int, int] | None = None
        self.next_value = 1
        self.running = True
        self.maintenance = {
            "offsets.topic.prune.interval.ms": str(self.rng.choice([2_000, 10_000, 30_000])),
            "offsets.topic.rewrite.window.records": str(self.rng.choice([4, 16, 64])),
            "transaction.state.log.prune.interval.ms": str(self.rng.choice([2_000, 10_000])),
            "transaction.state.log.rewrite.window.records": str(self.rng.choice([4, 16, 64])),
        }
        """The coordinators' log maintenance, run by the broker's own timers: often, with
        small windows, so that re-writes and prunes happen within a run."""
        self.flush_per_write = self.rng.random() < 0.5
        """`log.flush.interval.messages=1` (each produce acknowledged after its fsync
        in the disk executor) or Kafka's default (the page cache)."""
        self.fetch_reset = False
        """Set by the checker after a lossy power loss: the consumer starts again."""
        self.broker_errors: list[str] = []
        """What the broker logged at ERROR or above (a handler that raised is one)."""
        self.checker = ShellChecker(self)
        self.share = self._share_oracle()
        self.idempotent = shell_produce.IdempotentOracle(self)

    # ---- notes

    def note(self, text: str) -> None:
        line = f"[{self.tick:4d} t={self.clock.monotonic_ms():>8d}] {text}"
        self.schedule.append(line)
        if self.verbose:
            print(line)

    # ---- the run

    def run(self, ticks: int = TICKS_DEFAULT) -> None:
        heard = _ErrorsHeard(self.broker_errors)
        logging.getLogger("shoal").addHandler(heard)
        with self.disk_model.installed(), seeded_entropy(self.entropy):
            try:
                self.loop.run_until_complete(self._main(ticks))
            finally:
                logging.getLogger("shoal").removeHandler(heard)
                self._end()

    def _end(self) -> None:
        self.running = False
        broker = self.broker
        if broker is not None:
            self._kill()
        for task in asyncio.all_tasks(self.loop):
            if self.loop.process_of(task) == 0:
                task.cancel()
        try:
            self.loop.run_until_complete(asyncio.sleep(0))
        except Exception as exc:  # noqa: BLE001 - the run's result is already decided
            self.note(f"tearing down: {exc!r}")
        self.loop.bury()
        self.loop.close()

    async def _main(self, ticks: int) -> None:
        self.note(f"flush policy: {'fsync per write' if self.flush_per_write else 'page cache'}")
        await self._start_broker()
        setup = SimConnection(self, "sim-setup")
        await self.retry(lambda: setup.call(create_topic(TOPIC, partitions=TOPIC_PARTITIONS)))
        await self.retry(lambda: setup.call(create_topic(DATA_TOPIC, partitions=1)))
        share_topic_id = await self._share_setup(setup)
        await setup.close()
        self.checker.topic_id = await self.checker.describe_topic_id(TOPIC)
        actors = [self.loop.create_task(self._member(self.members[m]), name=m) for m in MEMBERS]
        txn = TxnClients(self)
        actors.append(self.loop.create_task(txn.run_producer(), name="producer"))
        actors.append(self.loop.create_task(txn.run_zombie(), name="zombie"))
        actors.append(self.loop.create_task(self._fetcher(), name="fetcher"))
        actors.append(self.loop.create_task(self._share_producer(), name="share-producer"))
        actors.append(
            self.loop.create_task(
                shell_produce.producer(self, self.idempotent), name="idempotent-producer"
            )
        )
        for member in self._share_members(share_topic_id):
            actors.append(self.loop.create_task(member.run(draining=True), name=member.name))
        try:
            for _ in range(ticks):
                self.tick += 1
                await asyncio.sleep(self.rng.randint(*TICK_MS) / 1000)
                for actor in actors:
                    if actor.done():
                        actor.result()  # an actor's own failure is the world's bug
                await self._fault()
                await self.checker.check_tick()
            self.faults.enabled = False
            self.note("drain: no more faults; the transaction ends, sessions settle")
            self.running = False
            await asyncio.wait(actors, timeout=120)
            for actor in actors:
                if not actor.done():
                    actor.cancel()
            await asyncio.gather(*actors, return_exceptions=True)
            await self.checker.check_final()
        finally:
            for actor in actors:
                actor.cancel()
        if self.loop.errors:
            raise InvariantViolated("no broker task fails unobserved", repr(self.loop.errors[:3]))

    # ---- the share scenario (shell_share.py; sim/shell_share_ext.py overrides these)

    def _share_oracle(self) -> shell_share.ShareOracle:
        return shell_share.ShareOracle(self)

    async def _share_setup(self, connection: SimConnection) -> uuid.UUID:
        return await shell_share.setup(self, connection)

    def _share_producer(self) -> Coroutine[Any, Any, None]:
        return shell_share.producer(self, self.share)

    def _share_members(self, topic_id: uuid.UUID) -> list[shell_share.ShareMember]:
        return [
            shell_share.ShareMember(self, self.share, index, topic_id)
            for index in range(shell_share.SHARE_MEMBERS)
        ]

    async def retry(self, attempt: Callable[[], Awaitable[T]], *, tries: int = 50) -> T:
        for _ in range(tries):
            try:
                return await attempt()
            except RequestFailed:
                await asyncio.sleep(0.5)
        raise InvariantViolated("the broker answers within 50 tries", repr(attempt))

    # ---- the broker process

    def _config(self) -> BrokerConfig:
        return BrokerConfig.from_raw(
            {
                "log.dirs": str(self.directory),
                "listeners": f"PLAINTEXT://{HOST}:{PORT}",
                "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                "transaction.state.log.num.partitions": "1",
                "share.coordinator.state.topic.num.partitions": "1",
                "log.cleaner.enable": "false",
                "group.initial.rebalance.delay.ms": "0",
                "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
                "log.segment.bytes": str(64 * 1024),
                **self.maintenance,
                **({"log.flush.interval.messages": "1"} if self.flush_per_write else {}),
            }
        )

    async def _start_broker(self) -> None:
        self.process += 1
        process = self.process

        def build() -> Broker:
            return Broker(
                self._config(), clock=self.clock, transport=self.network, disk_executor=self.disk
            )

        try:
            broker: Broker = self.loop.run_in_context(process, build)
            started: asyncio.Task[None] = self.loop.run_in_context(
                process, lambda: self.loop.create_task(broker.start(), name=f"broker-{process}")
            )
            await started
        except Exception as exc:  # any failure to start is the finding
            raise InvariantViolated("the broker starts (and recovers)", repr(exc)) from exc
        self.broker = broker
        self.note(f"broker process {process} started")

    def _kill(self) -> None:
        broker = self.broker
        assert broker is not None
        self.loop.kill(self.process)
        self.network.kill_process(self.process)
        broker.logs.abandon()
        self.broker = None

    def while_down(self) -> None:
        """Called after a crash, before the broker starts again (the tests change the
        files here, as an outside hand would)."""

    async def _fault(self) -> None:
        if self.faults.fires("shell_crash"):
            self.crashes += 1
            self.note(f"CRASH of broker process {self.process}")
            self.checker.before_crash()
            self._kill()
            self.share.disturbed()
            lost: list[str] = []
            if self.faults.fires("power_loss"):
                lost = self.disk_model.power_loss(self.rng)
                self.note(f"  POWER LOSS ({len(lost)} files lost unflushed bytes)")
                for line in lost:
                    self.note(f"  lost unflushed: {line}")
            if lost and not self.flush_per_write:
                self.checker.power_lost()
            self.while_down()
            await asyncio.sleep(self.rng.randint(*DOWNTIME_MS) / 1000)
            await self._start_broker()
            await self.checker.after_recovery()
        elif self.faults.fires("clean_restart"):
            broker = self.broker
            assert broker is not None
            self.note(f"clean shutdown of broker process {self.process}")
            self.share.disturbed(ongoing=True)
            process = self.process
            stopping = self.loop.run_in_context(
                process, lambda: self.loop.create_task(broker.shutdown())
            )
            try:
                await asyncio.wait_for(stopping, SHUTDOWN_BOUND_S)
            except TimeoutError as exc:
                raise InvariantViolated(
                    "a clean shutdown ends", f"still running after {SHUTDOWN_BOUND_S} s"
                ) from exc
            self.loop.kill(process)  # what a process exit leaves: nothing runs
            self.network.kill_process(process)
            self.broker = None
            self.share.disturbed()
            await self._start_broker()
            await self.checker.after_recovery()
        elif self.faults.fires("connection_drop") and self.network.drop_one():
            self.share.disturbed()
            self.note("a client connection is reset")

    # ---- consumer-group members

    async def _member(self, member: Member) -> None:
        connection = SimConnection(self, member.name)
        while self.running:
            try:
                if member.epoch > 0 and self.running and self.rng.random() < 0.02:
                    await self._leave(connection, member)
                    await asyncio.sleep(self.rng.randint(100, 5_000) / 1000)
                    continue
                await self._heartbeat(connection, member)
                if member.epoch > 0 and self.running and self.rng.random() < 0.5:
                    await self._commit(connection, member)
            except RequestFailed as exc:
                self.note(f"{member.name}: {exc}")
                await asyncio.sleep(self.rng.randint(100, 1_000) / 1000)
                continue
            pause_s = min(member.interval_ms, 5_000) / 1000 * self.rng.uniform(0.5, 1)
            if self.faults.fires("client_stall"):
                pause_s = self.rng.randint(*STALL_MS) / 1000
                self.note(f"{member.name} stalls for {pause_s:.0f} s")
            await asyncio.sleep(pause_s)
        await connection.close()

    async def _heartbeat(self, connection: SimConnection, member: Member) -> None:
        schema = request_schema(68, 0)
        joining = member.epoch == 0
        owned = None
        if not joining:
            owned = tuple(
                schema.make("TopicPartitions", topic_id=t, partitions=tuple(sorted(ps)))
                for t, ps in member.owned.items()
            )
        request = schema.make(
            "ConsumerGroupHeartbeatRequest",
            group_id=CONSUMER_GROUP,
            member_id=member.member_id,
            member_epoch=member.epoch,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=datetime.timedelta(seconds=10) if joining else _TIMEOUT_DEFAULT,
            subscribed_topic_names=(TOPIC,) if joining else None,
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=owned,
        )
        response = await connection.call(request)
        error = response.error_code
        if error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.note(f"{member.name} fenced ({error.name}): joins again")
            member.epoch, member.owned = 0, {}
            return
        if error != ErrorCode.none:
            self.note(f"{member.name} heartbeat: {error.name}")
            return
        if joining and response.member_id:
            member.member_id = response.member_id
        member.epoch = response.member_epoch
        member.interval_ms = int(response.heartbeat_interval.total_seconds() * 1000)
        if response.assignment is not None:
            member.owned = {
                tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            }
            shown = {str(t)[:4]: sorted(ps) for t, ps in member.owned.items()}
            self.note(f"{member.name} epoch {member.epoch}: assigned {shown}")

    async def _leave(self, connection: SimConnection, member: Member) -> None:
        schema = request_schema(68, 0)
        request = schema.make(
            "ConsumerGroupHeartbeatRequest",
            group_id=CONSUMER_GROUP,
            member_id=member.member_id,
            member_epoch=-1,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=_TIMEOUT_DEFAULT,
            subscribed_topic_names=None,
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=None,
        )
        member.epoch, member.owned = 0, {}  # a leaving member forgets, answered or not
        member.member_id = ""
        response = await connection.call(request)
        self.note(f"{member.name} leaves: {ErrorCode(response.error_code).name}")

    async def _commit(self, connection: SimConnection, member: Member) -> None:
        partitions = sorted(member.owned.get(self.checker.topic_id, frozenset()))
        if not partitions:
            return
        chosen = partitions[: self.rng.randint(1, len(partitions))]
        values = {}
        for partition in chosen:
            values[partition] = self.next_value
            self.next_value += 1
        attempt = self.checker.commit_sent(values)
        try:
            response = await connection.call(
                offset_commit(
                    CONSUMER_GROUP,
                    {(TOPIC, p): v for p, v in values.items()},
                    generation=member.epoch,
                    member_id=member.member_id,
                )
            )
        finally:
            self.checker.commit_ended(attempt)
        ok = {
            p.partition_index: values[p.partition_index]
            for t in response.topics
            for p in t.partitions
            if p.error_code == ErrorCode.none
        }
        errors = {
            p.partition_index: ErrorCode(p.error_code).name
            for t in response.topics
            for p in t.partitions
            if p.error_code != ErrorCode.none
        }
        self.note(f"{member.name} commits {values}: ok {sorted(ok)} {errors or ''}")
        self.checker.commit_confirmed(ok)

    # ---- the transactional producer

    async def _fetcher(self) -> None:
        """A read_committed consumer of `sim-data-0` long-polling from where it got to
        (the purgatory and the last stable offset's wake-ups); a Fetch must answer
        within its wait, give records from its offset on, and nothing twice."""
        connection = SimConnection(self, "sim-fetcher")
        position = 0
        while self.running:
            wait_ms = self.rng.choice([0, 100, 500, 2_000, 5_000])
            sent_ms = self.clock.monotonic_ms()
            try:
                answer = await self.checker.fetch_from(connection, position, max_wait_ms=wait_ms)
            except RequestFailed:
                await asyncio.sleep(self.rng.randint(100, 1_000) / 1000)
                continue
            if self.fetch_reset or answer is None:
                # A lossy power loss: the log may be shorter than where the consumer got
                # to; it starts again from the beginning (auto.offset.reset=earliest).
                self.fetch_reset = False
                self.checker.consumed.clear()
                position = 0
                continue
            values, position_after = answer
            self.checker.fetched(values, position, position_after, wait_ms, sent_ms)
            position = position_after
            await asyncio.sleep(self.rng.randint(0, 300) / 1000)
        await connection.close()


class _ErrorsHeard(logging.Handler):
    """Keeps what the broker's modules log at ERROR or above (not the clients')."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self._into = into

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("shoal.client", "shoal.sim")):
            return
        self._into.append(f"{record.name}: {record.getMessage()}")
