"""One simulation run: a seeded schedule of client operations against the simulated
broker, with faults, crashes and recoveries, and the invariant checks after each.

Owns: the clients' side of the story (an idempotent producer with one batch in
flight, share members holding acquired offsets), the responses in flight (late ones
are delivered some steps later; lost ones never; a crash loses them all), the
schedule log, and the crash-and-recover procedure. What the clients were told is the
oracle the invariants compare the broker against (`shoal.sim.invariants`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import SharePartitionConfig
from shoal.sim.base import Operation, SimWorld
from shoal.sim.broker import GROUP, KEY, PRODUCER_ID, TP, Broker, produced_batch
from shoal.sim.faults import FaultRates, SimCrash
from shoal.sim.invariants import Checker

MEMBERS = ("m0", "m1", "m2")
ACK_TYPES = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)


@dataclass(slots=True)
class Producer:
    """An idempotent producer: one batch in flight, retried until answered."""

    producer_id: int = PRODUCER_ID
    """A new id after a power loss lost the producer's state (a producer restart)."""
    next_sequence: int = 0
    in_flight: tuple[int, int] | None = None
    """(base sequence, count) sent and not yet answered."""
    acked: dict[tuple[int, int], int] = field(default_factory=dict)
    """(producer id, sequence) -> offset, for the records the producer was told are
    written."""


@dataclass(slots=True)
class Member:
    held: dict[int, int] = field(default_factory=dict)
    """Offsets this member was given, with their delivery count."""


class World(SimWorld):
    """A run of `steps` operations from `seed` in `directory` (the loop, the notes
    and the answers in flight are `SimWorld`'s)."""

    DRAIN_NOTE = "drain: no more faults; members accept everything"
    checker: Checker

    def __init__(
        self, *, seed: int, directory: Path, rates: FaultRates | None = None, verbose: bool = False
    ) -> None:
        super().__init__(seed=seed, directory=directory, rates=rates, verbose=verbose)
        self.disk_rng = random.Random(f"{seed}-disk")
        """Power losses draw from their own stream, so that adding them left the
        schedules of the seeds kept before unchanged."""
        self.flush_per_write = self.disk_rng.random() < 0.5
        self.share_config = SharePartitionConfig(
            record_lock_duration_ms=self.rng.choice([1_000, 5_000, 30_000]),
            delivery_count_limit=self.rng.randint(2, 5),
            max_record_locks=self.rng.choice([10, 50, 2_000]),
            renew_enabled=False,
        )
        self.producer = Producer()
        self.members = {m: Member() for m in MEMBERS}
        self.broker = self._start()
        self.faults.enabled = False
        error = self.broker.persister.initialize(key=KEY, state_epoch=0, start_offset=0)
        assert error is None, error
        self.faults.enabled = True
        self.disk.settle()  # the set-up is on disk before the run starts
        self.checker = Checker(self)
        self.checker.check_step()

    def _start(self) -> Broker:
        return Broker(
            directory=self.directory,
            clock=self.clock,
            faults=self.faults,
            share_config=self.share_config,
            flush_per_write=self.flush_per_write,
        )

    # ---- the run

    def _one_step(self) -> None:
        ops: list[tuple[int, Operation]] = [
            (4, self.produce),
            (6, self.fetch),
            (5, self.acknowledge),
            (2, self.advance_clock),
            (1, self.close_session),
            (1, self.delete_records),
            (1, self.crash_now),
        ]
        op = self.choose(ops)
        self.broker.last_write = None
        self.broker.states_after_writes.clear()
        try:
            op()
        except SimCrash as crash:
            self._crash_and_recover(crash.point)
        self.checker.check_step()

    # ---- producer

    def produce(self) -> None:
        producer = self.producer
        if producer.in_flight is None:
            count = self.rng.randint(1, 6)
            producer.in_flight = (producer.next_sequence, count)
            producer.next_sequence += count
        self._send_produce()

    def _send_produce(self) -> None:
        producer = self.producer
        assert producer.in_flight is not None
        sequence, count = producer.in_flight
        records = produced_batch(
            base_sequence=sequence,
            count=count,
            first_value=sequence,
            producer_id=producer.producer_id,
        )
        result = self.broker.append(records)
        kind = "duplicate of" if result.duplicate else "appended"
        self.note(f"produce seq {sequence}+{count}: {kind} offsets {result.base_offset}..")
        self.faults.crash_point("crash_after_append")
        sent = producer.in_flight

        def deliver() -> None:
            if producer.in_flight == sent:
                for index in range(count):
                    key = (producer.producer_id, sequence + index)
                    producer.acked[key] = result.base_offset + index
                producer.in_flight = None

        self._respond(f"produce seq {sequence}+{count}", deliver, retry=self._send_produce)

    # ---- share members

    def fetch(self) -> None:
        name = self.rng.choice(MEMBERS)
        fetched = self.broker.manager.acquire(
            group_id=GROUP,
            member_id=name,
            partitions=[TP],
            max_records=self.rng.choice([1, 3, 10, 50]),
            batch_size=self.rng.choice([1, 5, 50]),
            max_bytes=self.rng.choice([200, 1 << 20]),
        )
        (part,) = fetched.partitions
        got = [(r.first_offset, r.last_offset, r.delivery_count) for r in part.acquired]
        self.note(f"fetch {name}: error={part.error} acquired={got}")
        self.checker.check_acquired(part.acquired)
        member = self.members[name]

        def deliver() -> None:
            for r in part.acquired:
                for offset in range(r.first_offset, r.last_offset + 1):
                    member.held[offset] = r.delivery_count

        # A lost fetch response is not retried: the records stay locked until expiry.
        self._respond(f"fetch {name} {got}", deliver, retry=lambda: None)

    def acknowledge(self) -> None:
        holders = [m for m in MEMBERS if self.members[m].held]
        if not holders:
            return
        name = self.rng.choice(holders)
        member = self.members[name]
        offsets = sorted(member.held)
        chosen = offsets[: self.rng.randint(1, len(offsets))]
        batches = [
            AckBatch(first, last, (int(self.rng.choice(ACK_TYPES)),))
            for first, last in _runs(chosen)
        ]
        for offset in chosen:
            del member.held[offset]
        self._send_ack(name, batches)

    def _send_ack(self, name: str, batches: list[AckBatch]) -> None:
        # Acks below the SPSO succeed silently (docs/design/share-partition.md §8): nothing is
        # promised for those offsets, so only the ones at or above it are confirmed.
        loaded = self.broker.manager.load(KEY)
        spso = None if isinstance(loaded, ErrorCode) else loaded.start_offset
        answer = self.broker.manager.acknowledge(
            group_id=GROUP, member_id=name, partition=TP, batches=batches
        )
        shown = [(b.first_offset, b.last_offset, AcknowledgeType(b.types[0]).name) for b in batches]
        self.note(f"ack {name} {shown}: error={answer.error}")

        def deliver() -> None:
            if answer.error is None and spso is not None:
                self.checker.confirmed(batches, at_or_above=spso)

        self._respond(f"ack {name} {shown}", deliver, retry=lambda: self._send_ack(name, batches))

    def close_session(self) -> None:
        name = self.rng.choice(MEMBERS)
        self.note(f"close session {name}: its records are released")
        self.members[name].held.clear()
        self.broker.manager.release(group_id=GROUP, member_id=name, partitions=[TP])

    def delete_records(self) -> None:
        """DeleteRecords: the log start moves up; share-partitions follow it."""
        log = self.broker.data_log
        target = min(log.log_end_offset, log.log_start_offset + self.rng.randint(1, 10))
        start = log.delete_records_before(target)
        self.note(f"delete records before {target}: log start offset {start}")
        self.broker.manager.on_log_start_offset(
            topic_id=TP.topic_id, partition=TP.partition, log_start_offset=start
        )

    # ---- time

    def advance_clock(self) -> None:
        if self.faults.fires("clock_jump"):
            advance = self.rng.randint(60_000, 3_600_000)
            self.note(f"clock jumps {advance} ms")
        else:
            advance = self.rng.choice([0, 100, 1_000, 5_000, 31_000])
            self.note(f"clock advances {advance} ms")
        self.clock.advance(advance)
        expired = self.broker.manager.expire_locks(now_ms=self.clock.monotonic_ms())
        if expired.writes:
            self.note(f"  {expired.writes} lock expiry writes")

    # ---- crashes

    def _crash_and_recover(self, point: str) -> None:
        self.crashes += 1
        self.note(f"CRASH at {point}")
        self.checker.before_crash()
        self.broker.crash()
        if point in ("crash_after_state_write", "crash_after_append") and self.faults.fires(
            "torn_write"
        ):
            torn = self.broker.tear_last_write(self.rng.randint(1, 1 << 16))
            if torn is not None:
                self.note(f"  {torn}")
        lossy = self._maybe_power_loss()
        self.late.clear()
        for member in self.members.values():
            member.held.clear()
        self.broker = self._start()
        self.note(
            f"  recovered: data log end {self.broker.data_log.log_end_offset}, "
            f"state log end {self.broker.state_log.log_end_offset}"
        )
        if lossy and KEY not in self.broker.coordinator.shard(0).states:
            # The loss took the state's initialisation: the group coordinator would
            # initialise it again (its retry); this world has none, so it does it.
            self.note("  the share state was lost whole: initialised again")
            error = self.broker.persister.initialize(key=KEY, state_epoch=0, start_offset=0)
            assert error is None, error
        self.checker.after_recovery(lossy=lossy)
        if self.producer.in_flight is not None:
            self._send_produce_after_restart()

    def _maybe_power_loss(self) -> bool:
        """A power loss (drawn from the disk stream): unflushed bytes lost. True if
        it lost bytes under the page cache's durability, where confirmed writes may
        go: the producer then starts afresh under a new id (its idempotence state may
        be gone) and the checker keeps only the consistency checks for the past."""
        if not self.faults.enabled or self.disk_rng.random() >= self.faults.rates.power_loss:
            return False
        self.faults.injected["power_loss"] += 1
        lost = self.disk.power_loss(self.disk_rng)
        self.note(f"  POWER LOSS: {len(lost)} files lost unflushed bytes")
        for line in lost:
            self.note(f"    {line}")
        if not lost or self.flush_per_write:
            return False
        producer = self.producer
        producer.producer_id += 1
        if producer.in_flight is not None:
            producer.in_flight = (0, producer.in_flight[1])
            producer.next_sequence = producer.in_flight[1]
        else:
            producer.next_sequence = 0
        return True

    def _send_produce_after_restart(self) -> None:
        try:
            self._send_produce()
        except SimCrash as crash:
            self._crash_and_recover(crash.point)

    # ---- the end

    def _drain(self) -> None:
        self._deliver_all_late()
        while self.producer.in_flight is not None:
            self._send_produce()
        for _ in range(1_000):
            if self.broker.manager.get(KEY) is not None and self._drained():
                return
            for name in MEMBERS:
                self.broker.manager.release(group_id=GROUP, member_id=name, partitions=[TP])
                self.members[name].held.clear()
            progressed = False
            for name in MEMBERS:
                fetched = self.broker.manager.acquire(
                    group_id=GROUP,
                    member_id=name,
                    partitions=[TP],
                    max_records=500,
                    batch_size=500,
                    max_bytes=1 << 20,
                )
                (part,) = fetched.partitions
                self.checker.check_acquired(part.acquired)
                for r in part.acquired:
                    progressed = True
                    batch = AckBatch(r.first_offset, r.last_offset, (int(AcknowledgeType.ACCEPT),))
                    answer = self.broker.manager.acknowledge(
                        group_id=GROUP, member_id=name, partition=TP, batches=[batch]
                    )
                    assert answer.error is None, (batch, answer)
                    self.checker.confirmed([batch])
            if not progressed:
                self.clock.advance(self.share_config.record_lock_duration_ms + 1)
                self.broker.manager.expire_locks(now_ms=self.clock.monotonic_ms())
            self.checker.check_step()
        raise AssertionError("the drain did not reach the log end")

    def _drained(self) -> bool:
        sp = self.broker.manager.get(KEY)
        assert sp is not None
        return sp.start_offset >= self.broker.data_log.log_end_offset


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for offset in offsets:
        if runs and runs[-1][1] == offset - 1:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return runs
