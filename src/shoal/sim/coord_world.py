"""The coordinator scenario: consumer-group members and a transactional producer
against the group and transaction coordinators, with faults, crashes (and power
losses) and recoveries, checked after every step (`shoal.sim.coord_invariants`).

Owns the clients' side: three KIP-848 members (ConsumerGroupHeartbeat: join, heartbeat
with the partitions they own, leave; OffsetCommit at their epoch), a transactional
producer (InitProducerId, AddPartitionsToTxn, transactional produce into `sim-data-0`,
AddOffsetsToTxn + TxnOffsetCommit to a group of its own, EndTxn commit or abort,
retried after a lost answer), a zombie holding the producer's previous epoch, clock
advances that expire sessions and time transactions out, the coordinators' log
maintenance passes, and the crash-and-recover procedure (TxnService.start's step:
markers of transactions a restart found preparing are written again). Clients
outlive a broker crash (they are other processes); answers in flight are lost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from shoal.coordinator.placement import partition_for
from shoal.coordinator.runtime import RecordSinkError, WriteResult
from shoal.group.committed_offsets import OffsetToCommit
from shoal.group.consumer_membership import HeartbeatRequest
from shoal.group.records import CoordinatorRecord
from shoal.log.transactions import ControlType
from shoal.protocol.errors import ErrorCode
from shoal.sim.base import Operation, SimWorld
from shoal.sim.broker import produced_batch
from shoal.sim.coord_broker import (
    CONSUMER_GROUP,
    DATA_TOPIC,
    OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    TOPIC,
    TOPIC_ID,
    TOPIC_PARTITIONS,
    TXN_GROUP,
    TXN_ID,
    TXN_TIMEOUT_MS,
    CoordBroker,
)
from shoal.sim.coord_clients import (
    FENCED_PRODUCER,
    MEMBERS,
    REPLAY_EVERY_STEPS,
    VALUES_PER_TXN,
    Consumer,
    TxnProducer,
    heartbeat_answered,
    heartbeat_request,
    shown_assignment,
)
from shoal.sim.coord_invariants import CoordChecker, InvariantViolated, hanging_transactions
from shoal.sim.disk import tear_tail
from shoal.sim.faults import FaultRates, SimCrash
from shoal.txn import WriteMarkers

T = TypeVar("T")


class CoordWorld(SimWorld):
    """A run of `steps` operations from `seed` in `directory` (the loop, the notes
    and the answers in flight are `SimWorld`'s)."""

    DRAIN_NOTE = "drain: no more faults; the transaction ends, markers are written"
    checker: CoordChecker

    def __init__(
        self,
        *,
        seed: int,
        directory: Path,
        rates: FaultRates | None = None,
        verbose: bool = False,
        flush_per_write: bool | None = None,
    ) -> None:
        super().__init__(seed=seed, directory=directory, rates=rates, verbose=verbose)
        drawn = self.rng.random() < 0.5
        self.flush_per_write = drawn if flush_per_write is None else flush_per_write
        self.consumers = {m: Consumer(m) for m in MEMBERS}
        self.producer = TxnProducer()
        self.zombie: tuple[int, int] | None = None
        """(producer id, epoch) of the producer's previous incarnation."""
        self.next_commit_value = 1
        self.next_producer_id = 5_000
        self.note(f"flush policy: {'fsync per write' if self.flush_per_write else 'page cache'}")
        self.broker = self._start()
        self.disk.settle()  # the set-up is on disk before the run starts
        self.checker = CoordChecker(self)
        self.checker.check_step()

    def _start(self) -> CoordBroker:
        return CoordBroker(
            directory=self.directory,
            clock=self.clock,
            faults=self.faults,
            flush_per_write=self.flush_per_write,
        )

    # ---- the run

    def _one_step(self) -> None:
        ops: list[tuple[int, Operation]] = [
            (6, self.heartbeat),
            (1, self.leave),
            (4, self.commit),
            (8, self.transaction),
            (1, self.zombie_acts),
            (3, self.advance_clock),
            (1, self.maintain),
            (1, self.crash_now),
        ]
        op = self.choose(ops)
        self.broker.last_write = None
        self.checker.step_started()
        crashes = self.crashes
        self._guarded(op)
        replay = self.step % REPLAY_EVERY_STEPS == 0 or op == self.maintain
        self.checker.check_step(replay=replay or self.crashes > crashes)

    def _guarded(self, op: Callable[[], None]) -> None:
        try:
            op()
        except SimCrash as crash:
            self._crash_and_recover(crash.point)

    # ---- consumer group

    def heartbeat(self) -> None:
        consumer = self.consumers[self.rng.choice(MEMBERS)]
        request = heartbeat_request(consumer, self.rng.choice([10_000, 60_000]))
        response = self._group_write(
            lambda: self.broker.group.shard.consumer_group_heartbeat(request=request)
        )
        if response is None:
            return
        self.note(
            f"heartbeat {consumer.member_id} epoch {consumer.epoch}: error={response.error} "
            f"epoch {response.member_epoch} assignment={shown_assignment(response)}"
        )
        self.checker.check_group()

        self._respond(
            f"heartbeat {consumer.member_id}",
            lambda: heartbeat_answered(consumer, response),
            retry=lambda: None,
        )

    def leave(self) -> None:
        consumer = self.consumers[self.rng.choice(MEMBERS)]
        if consumer.epoch == 0:
            return
        request = HeartbeatRequest(
            group_id=CONSUMER_GROUP, member_id=consumer.member_id, member_epoch=-1
        )
        response = self._group_write(
            lambda: self.broker.group.shard.consumer_group_heartbeat(request=request)
        )
        self.note(f"leave {consumer.member_id}: {None if response is None else response.error}")
        consumer.epoch, consumer.owned = 0, {}  # a leaving client forgets, answered or not

    def commit(self) -> None:
        owners = [c for c in self.consumers.values() if c.epoch > 0 and c.owned.get(TOPIC_ID)]
        if not owners:
            return
        consumer = self.rng.choice(owners)
        partitions = sorted(consumer.owned[TOPIC_ID])
        chosen = partitions[: self.rng.randint(1, len(partitions))]
        values = {}
        for partition in chosen:
            values[partition] = self.next_commit_value
            self.next_commit_value += 1
        self.checker.commit_attempted(values)
        offsets = [
            OffsetToCommit(topic=TOPIC, partition=p, offset=v, leader_epoch=-1, metadata="")
            for p, v in values.items()
        ]

        def send() -> None:
            shard = self.broker.group.shard
            answer = self._group_write(
                lambda: shard.classic.commit_offsets(
                    group_id=CONSUMER_GROUP,
                    member_id=consumer.member_id,
                    generation_id=consumer.epoch,
                    group_instance_id=None,
                    offsets=offsets,
                    api_version=9,
                    now_ms=self.clock.wall_ms(),
                )
            )
            if answer is None:
                return
            ok = {e.partition: values[e.partition] for e in answer if e.error is None}
            self.note(f"commit {consumer.member_id} {values}: ok {sorted(ok)}")

            def deliver() -> None:
                self.checker.commit_confirmed(ok)

            self._respond(f"commit {consumer.member_id}", deliver, retry=send)

        send()

    def _group_write(self, operation: Callable[[], WriteResult[CoordinatorRecord, T]]) -> T | None:
        """A group write as GroupService does it; a refused append is
        COORDINATOR_NOT_AVAILABLE to the client (None here)."""
        try:
            return self.broker.group_write(operation())
        except RecordSinkError as exc:
            self.note(f"  group write refused: {exc}")
            return None

    # ---- the transactional producer

    def transaction(self) -> None:
        producer = self.producer
        if producer.ending is not None:
            self._end(producer.ending)
        elif producer.in_flight is not None:
            self._send_produce()
        elif producer.producer_id < 0:
            self._init()
        else:
            if not producer.ongoing:
                producer.serial += 1
                producer.ongoing = True
                producer.added.clear()
                self.checker.txn_begun(producer.serial)
            action = self.rng.choices(["produce", "offsets", "commit", "abort"], [4, 2, 2, 1])[0]
            if action == "produce":
                self._produce()
            elif action == "offsets":
                self._txn_offsets()
            elif producer.added:
                self._end(action == "commit")

    def _new_producer_id(self) -> int:
        self.next_producer_id += 1
        return self.next_producer_id

    def _init(self) -> None:
        answer, effects = self.broker.txn.init_producer_id(
            transactional_id=TXN_ID,
            timeout_ms=TXN_TIMEOUT_MS,
            expected_producer_id=-1,
            expected_producer_epoch=-1,
            new_producer_id=self._new_producer_id,
        )
        self._complete_all(effects)
        self.note(f"init producer id: {answer}")
        producer = self.producer

        def deliver() -> None:
            if answer.error != ErrorCode.none:
                return
            stale = answer.producer_id == producer.producer_id
            if stale and answer.producer_epoch <= producer.epoch:
                return  # a late answer to an earlier InitProducerId: the client moved on
            if producer.producer_id >= 0:
                self.zombie = (producer.producer_id, producer.epoch)
            producer.producer_id, producer.epoch = answer.producer_id, answer.producer_epoch
            producer.sequence, producer.ongoing = 0, False
            producer.added.clear()
            self.checker.producer_epoch(answer.producer_id, answer.producer_epoch)

        self._respond("init producer id", deliver, retry=lambda: None)

    def _add(self, partition: tuple[str, int]) -> None:
        producer = self.producer
        errors = self.broker.txn.add_partitions(
            transactional_id=TXN_ID,
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            partitions=[partition],
        )
        error = errors[partition]
        self.note(f"add {partition} to transaction {producer.serial}: {error.name}")

        serial = producer.serial

        def deliver() -> None:
            if producer.serial != serial:
                return  # a late answer from an earlier transaction: the client moved on
            if error == ErrorCode.none:
                producer.added.add(partition)
            elif error in FENCED_PRODUCER:
                self._fenced()

        self._respond(f"add {partition}", deliver, retry=lambda: None)

    def _fenced(self) -> None:
        self.note("  the producer is fenced: it starts again with InitProducerId")
        producer = self.producer
        producer.producer_id, producer.ongoing, producer.ending = -1, False, None
        producer.in_flight = None

    def _produce(self) -> None:
        producer = self.producer
        if (DATA_TOPIC, 0) not in producer.added:
            self._add((DATA_TOPIC, 0))
            return
        count = self.rng.randint(1, 4)
        producer.in_flight = (producer.sequence, count)
        producer.sequence += count
        self._send_produce()

    def _send_produce(self) -> None:
        producer = self.producer
        assert producer.in_flight is not None
        sequence, count = producer.in_flight
        first = producer.serial * VALUES_PER_TXN + sequence
        batch = produced_batch(
            base_sequence=sequence,
            count=count,
            first_value=first,
            producer_epoch=producer.epoch,
            producer_id=producer.producer_id,
            transactional=True,
        )
        outcome = self.broker.txn_produce(batch, TXN_ID, producer.producer_id, producer.epoch)
        self.note(f"produce txn {producer.serial} seq {sequence}+{count}: {outcome}")
        if isinstance(outcome, ErrorCode):
            if outcome in FENCED_PRODUCER or outcome == ErrorCode.invalid_txn_state:
                self._fenced()
            return
        self.faults.crash_point("crash_after_append")
        sent, serial = producer.in_flight, producer.serial

        def deliver() -> None:
            if producer.in_flight == sent:
                self.checker.txn_acked(serial, range(first, first + count))
                producer.in_flight = None

        self._respond(f"produce seq {sequence}+{count}", deliver, retry=self._send_produce)

    def _txn_offsets(self) -> None:
        producer = self.producer
        offsets_partition = (OFFSETS_TOPIC, partition_for(TXN_GROUP, OFFSETS_PARTITIONS))
        if offsets_partition not in producer.added:
            self._add(offsets_partition)  # AddOffsetsToTxn
            return
        values = {}
        for partition in self.rng.sample(range(TOPIC_PARTITIONS), self.rng.randint(1, 2)):
            values[partition] = self.next_commit_value
            self.next_commit_value += 1
        self.checker.txn_offsets_sent(producer.serial, values)
        offsets = [
            OffsetToCommit(topic=TOPIC, partition=p, offset=v, leader_epoch=-1, metadata="")
            for p, v in values.items()
        ]
        answer = self._group_write(
            lambda: self.broker.group.shard.classic.txn_commit_offsets(
                group_id=TXN_GROUP,
                producer_id=producer.producer_id,
                producer_epoch=producer.epoch,
                member_id="",
                generation_id=-1,
                group_instance_id=None,
                offsets=offsets,
                now_ms=self.clock.wall_ms(),
            )
        )
        shown = None if answer is None else [e.error for e in answer]
        if answer is not None:
            ok = {e.partition: values[e.partition] for e in answer if e.error is None}
            self.checker.txn_offsets_written(producer.serial, ok)
        self.note(f"txn offset commit {producer.serial} {values}: {shown}")

    def _end(self, commit: bool) -> None:
        producer = self.producer
        producer.ending = commit
        serial = producer.serial
        answer, effects = self.broker.txn.end_txn(
            transactional_id=TXN_ID,
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            commit=commit,
            bump_epoch=False,
            new_producer_id=self._new_producer_id,
        )
        self._complete_all(effects)
        self.note(f"end txn {serial} ({'commit' if commit else 'abort'}): {answer.error.name}")

        def deliver() -> None:
            if producer.ending != commit or producer.serial != serial:
                return
            if answer.error == ErrorCode.none:
                self.checker.txn_ended(serial, commit)
                producer.ongoing, producer.ending = False, None
                producer.added.clear()
            elif answer.error in FENCED_PRODUCER or answer.error == ErrorCode.invalid_txn_state:
                self._fenced()

        self._respond(f"end txn {serial}", deliver, retry=lambda: self._end(commit))

    def _complete_all(self, effects: tuple[WriteMarkers, ...]) -> None:
        for markers in effects:
            done = self.broker.complete_markers(markers)
            self.note(f"  markers {markers.control} of epoch {markers.producer_epoch}: done={done}")

    def zombie_acts(self) -> None:
        """The producer's previous incarnation tries to end a transaction or produce:
        fenced by the epoch, whatever it sends."""
        if self.zombie is None:
            return
        producer_id, epoch = self.zombie
        if self.rng.random() < 0.5:
            answer, effects = self.broker.txn.end_txn(
                transactional_id=TXN_ID,
                producer_id=producer_id,
                producer_epoch=epoch,
                commit=True,
                bump_epoch=False,
                new_producer_id=self._new_producer_id,
            )
            self._complete_all(effects)
            self.note(f"zombie (epoch {epoch}) ends a transaction: {answer.error.name}")
            self.checker.zombie_refused("EndTxn", answer.error)
        else:
            batch = produced_batch(
                base_sequence=0,
                count=1,
                first_value=0,
                producer_epoch=epoch,
                producer_id=producer_id,
                transactional=True,
            )
            outcome = self.broker.txn_produce(batch, TXN_ID, producer_id, epoch)
            self.note(f"zombie (epoch {epoch}) produces: {outcome}")
            self.checker.zombie_refused("Produce", outcome)

    # ---- time and maintenance

    def advance_clock(self) -> None:
        if self.faults.fires("clock_jump"):
            advance = self.rng.randint(60_000, 3_600_000)
            self.note(f"clock jumps {advance} ms")
        else:
            advance = self.rng.choice([0, 1_000, 5_000, 20_000, 50_000])
            self.note(f"clock advances {advance} ms")
        self.clock.advance(advance)
        now = self.clock.monotonic_ms()
        changed = self._group_write(lambda: self.broker.group.shard.expire_sessions(now_ms=now))
        if changed is not None and changed.expired_members:
            self.note(f"  sessions expired: {changed.expired_members}")
        aborted = self.broker.txn.abort_timed_out(self.clock.wall_ms())
        if aborted:
            self.note(f"  transactions timed out: {len(aborted)}")
        self._complete_all(aborted)
        self._complete_all(self.broker.txn.pending_markers())

    def maintain(self) -> None:
        window = self.rng.choice([4, 16, 64])
        if self.rng.random() < 0.5:
            try:
                rewritten, moved = self.broker.maintain_group_log(window)
            except RecordSinkError as exc:
                self.note(f"group log maintenance failed: {exc}")
                return
            self.note(
                f"group log maintenance (window {window}): {rewritten} re-written, {moved} pruned"
            )
        else:
            moved = self.broker.maintain_txn_log(window)
            self.note(f"transaction log maintenance (window {window}): {moved} pruned")

    # ---- crashes

    def _crash_and_recover(self, point: str) -> None:
        self.crashes += 1
        power = self.faults.fires("power_loss")
        self.note(f"{'POWER LOSS' if power else 'CRASH'} at {point}")
        self.checker.before_crash()
        self.broker.crash()
        last = self.broker.last_write
        tearable = point in ("crash_after_write", "crash_after_append")
        if tearable and last is not None and self.faults.fires("torn_write"):
            torn = tear_tail(last[0], last[1], self.rng.randint(1, 1 << 16))
            if torn is not None:
                self.note(f"  {torn}")
        lost: list[str] = []
        if power:
            lost = self.disk.power_loss(self.rng)
            for line in lost:
                self.note(f"  lost unflushed: {line}")
        self.late.clear()
        try:
            self.broker = self._start()
        except Exception as exc:  # any failure to start is the finding
            raise InvariantViolated("the broker starts after a crash", repr(exc)) from exc
        self.note(
            f"  recovered: data log end {self.broker.data_log.log_end_offset} "
            f"(LSO {self.broker.data_log.last_stable_offset}), transaction state "
            f"{self.broker.txn.metadata(TXN_ID)}"
        )
        self.checker.after_recovery(lossy=bool(lost) and not self.flush_per_write)
        # TxnService.start: the markers of transactions a restart found preparing.
        self._guarded(lambda: self._complete_all(self.broker.txn.pending_markers()))

    # ---- the end

    def _drain(self) -> None:
        self._deliver_all_late()
        producer = self.producer
        for _ in range(50):
            if producer.producer_id >= 0 and not producer.ongoing and producer.ending is None:
                break
            if producer.ongoing and producer.in_flight is None and producer.ending is None:
                if producer.added:
                    self._end(True)
                else:
                    producer.ongoing = False
                continue
            self.transaction()
            self.clock.advance(1_000)
        # The abort timer: a transaction the coordinator still holds open (a lossy
        # power loss may have taken its end) times out and is aborted.
        self.clock.advance(TXN_TIMEOUT_MS + 1)
        self._complete_all(self.broker.txn.abort_timed_out(self.clock.wall_ms()))
        self._complete_all(self.broker.txn.pending_markers())
        for producer_id, first in hanging_transactions(self.broker):
            # What `shoal transactions find-hanging` / `abort` do (WriteTxnMarkers ABORT).
            epoch = {p.producer_id: p.epoch for p in self.broker.data_log.producers()}
            self.note(f"operator aborts the hanging transaction of {producer_id} at {first}")
            self.broker.data_log.append_control(
                producer_id=producer_id,
                producer_epoch=epoch[producer_id],
                control=ControlType.ABORT,
                coordinator_epoch=0,
                timestamp_ms=self.clock.wall_ms(),
            )
        for consumer in self.consumers.values():
            for _ in range(5):
                self.heartbeat_of(consumer)

    def heartbeat_of(self, consumer: Consumer) -> None:
        request = heartbeat_request(consumer, 60_000)
        response = self.broker.group_write(
            self.broker.group.shard.consumer_group_heartbeat(request=request)
        )
        heartbeat_answered(consumer, response)
        self.checker.check_group()
