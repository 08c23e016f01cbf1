"""The invariants of the coordinator scenario, checked after every step and recovery.

Owns the oracle of what clients were told (confirmed offset commits, transactions
confirmed committed or aborted, the records each transaction had acknowledged, the
offsets each sent) and the checks against the broker:

- replay equals live: both coordinators rebuilt from their logs equal the live ones;
- recovery: the state a restart replays equals a state after the crashed step (the
  live state at the crash, or the logs as written up to it: a torn last write is one
  that was never answered);
- consumer group: no partition owned (assigned or being revoked) by two members;
  member and group epochs never go back; every confirmed offset commit is there and
  never goes back (a later confirmed commit of the key wins); no committed value that
  was never sent;
- transactions: read_committed (the log up to its LSO, aborted ranges dropped as a
  consumer drops them) shows a transaction's records all or none, every acknowledged
  record of a transaction confirmed committed, none of one confirmed aborted, none
  twice; the transaction's offsets are committed when it committed, never when it
  aborted; the LSO never moves back; a zombie (the previous epoch) is refused; at the
  end nothing is left preparing or open.

Durability promises depend on the flush policy. With `flush.messages=1` a power loss
is a crash: every check holds. With Kafka's default (the page cache), a power loss
may lose confirmed writes: after one that lost bytes, the checks that a confirmed
thing survives restart from what survived (`after_recovery(lossy=True)`), and every
consistency check (logs that read to their end, coordinators that load, replay equals
live, ownership, all-or-nothing transactions, nothing left preparing, no data log
ahead of the coordinator's producer epoch) still holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.records.readers import read_batch

from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import CONTROL_MASK
from shoal.sim.coord_broker import (
    CONSUMER_GROUP,
    TOPIC,
    TXN_GROUP,
    TXN_ID,
    CoordBroker,
    Snapshot,
)
from shoal.sim.invariants import InvariantViolated, _require
from shoal.txn import TxnState

if TYPE_CHECKING:
    from shoal.sim.coord_world import CoordWorld

__all__ = ["CoordChecker", "InvariantViolated"]

READ_BYTES = 64 * 1024
PREPARING = {TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE}


class CoordChecker:
    """The invariants of one `CoordWorld` (module docstring)."""

    def __init__(self, world: CoordWorld) -> None:
        self.world = world
        self.counts: Counter[str] = Counter()
        self.confirmed: dict[int, int] = {}
        """Consumer group: partition -> the latest confirmed committed offset."""
        self.attempted: dict[int, set[int]] = {}
        self.acked: dict[int, set[int]] = {}
        """Transaction serial -> values of its acknowledged records."""
        self.outcome: dict[int, bool] = {}
        """Transaction serial -> committed (True) or aborted (False), as confirmed."""
        self.txn_sent: dict[tuple[int, int], int] = {}
        """(partition, value) -> the serial of the transaction that sent it."""
        self.txn_written: dict[int, dict[int, int]] = {}
        """Transaction serial -> the offsets it was told are pending (partition -> value)."""
        self.trusted_from = 1
        """Transactions from this serial on are checked all-or-nothing (a lossy power
        loss may leave older ones half-lost)."""
        self.member_epochs: dict[str, int] = {}
        self.group_epoch = -1
        self.lso = -1
        self.step_lso = -1
        self.crash_candidates: list[Snapshot] = []
        self.lossy = False
        """A page-cache power loss lost bytes in this run (see the module docstring)."""
        self._rebuilt: tuple[tuple[int, ...], Snapshot] | None = None

    # ---- what clients were told

    def commit_attempted(self, values: dict[int, int]) -> None:
        for partition, value in values.items():
            self.attempted.setdefault(partition, set()).add(value)

    def commit_confirmed(self, values: dict[int, int]) -> None:
        for partition, value in values.items():
            if value > self.confirmed.get(partition, -1):
                self.confirmed[partition] = value

    def txn_begun(self, serial: int) -> None:
        self.acked.setdefault(serial, set())

    def txn_acked(self, serial: int, values: Iterable[int]) -> None:
        self.acked.setdefault(serial, set()).update(values)

    def txn_offsets_sent(self, serial: int, values: dict[int, int]) -> None:
        for partition, value in values.items():
            self.txn_sent[(partition, value)] = serial

    def txn_offsets_written(self, serial: int, values: dict[int, int]) -> None:
        self.txn_written.setdefault(serial, {}).update(values)

    def txn_ended(self, serial: int, committed: bool) -> None:
        self.outcome[serial] = committed

    def producer_epoch(self, producer_id: int, epoch: int) -> None:
        self.counts["producer epochs"] += 1

    def zombie_refused(self, what: str, outcome: object) -> None:
        self.counts["zombies fenced"] += 1
        _require(
            isinstance(outcome, ErrorCode) and outcome != ErrorCode.none,
            "a zombie's epoch is fenced",
            (what, outcome),
        )

    # ---- steps and crashes

    def step_started(self) -> None:
        self.step_lso = self.world.broker.data_log.last_stable_offset

    def check_step(self, *, replay: bool = True) -> None:
        """Every check; `replay` False skips rebuilding the coordinators from their
        logs (the costliest check: the world asks for it every few steps, and after
        every crash and log maintenance)."""
        if replay:
            self._check_replay()
        self.check_group()
        self._check_offsets()
        self._check_transactions()

    def _check_replay(self) -> None:
        broker = self.world.broker
        live = broker.snapshot()
        ends = tuple(log.log_end_offset for log in broker.logs)
        if self._rebuilt is None or self._rebuilt[0] != ends:
            self._rebuilt = (ends, broker.rebuilt())
        self.counts["replay equals live"] += 1
        _require(self._rebuilt[1] == live, "replay equals live", (self._rebuilt[1], live))

    def before_crash(self) -> None:
        broker = self.world.broker
        self.crash_candidates = [broker.snapshot()]
        try:
            self.crash_candidates.append(broker.rebuilt())
        except Exception as exc:  # the logs as written must replay
            raise InvariantViolated("the logs replay at a crash", repr(exc)) from exc

    def after_recovery(self, *, lossy: bool) -> None:
        broker = self.world.broker
        self.counts["recoveries checked"] += 1
        self._rebuilt = None
        if lossy:
            self._forget_lost()
        else:
            _require(
                broker.recovered in self.crash_candidates,
                "recovery equals a state after the crashed step",
                (broker.recovered, self.crash_candidates[-1]),
            )
            lso = broker.data_log.last_stable_offset
            _require(
                lso >= self.step_lso,
                "the LSO never moves back across a crash",
                (lso, self.step_lso),
            )
        self.lso = -1
        self._check_epoch_not_behind()
        self.check_step()

    def _check_epoch_not_behind(self) -> None:
        """After a restart, no data log holds the coordinator's producer id at an epoch
        above the coordinator's: else the log would refuse its markers (a marker below
        the producer's epoch) and a transaction would stay preparing for ever. Holds
        under both flush policies because `__transaction_state` is fsynced at every
        write (server/txn_service.py, "Durability")."""
        broker = self.world.broker
        metadata = broker.txn.metadata(TXN_ID)
        if metadata is None:
            return
        self.counts["producer epochs checked after a restart"] += 1
        for entry in broker.data_log.producers():
            if entry.producer_id == metadata.producer_id:
                _require(
                    entry.epoch <= metadata.producer_epoch,
                    "no data log is ahead of the coordinator's producer epoch",
                    (entry.producer_id, entry.epoch, metadata),
                )

    def _forget_lost(self) -> None:
        """A page-cache power loss lost confirmed writes: what must survive restarts
        from what did (the promise of that flush policy)."""
        self.counts["lossy power losses"] += 1
        self.lossy = True
        broker = self.world.broker
        fetched = self._fetched(CONSUMER_GROUP)
        self.confirmed = {p: v for p, v in self.confirmed.items() if fetched.get(p) == v}
        self.outcome = {}  # an ABORT marker lost too: a later commit may take its records
        self.trusted_from = self.world.producer.serial + 1
        self.member_epochs.clear()
        self.group_epoch = -1
        self.step_lso = broker.data_log.last_stable_offset

    def check_final(self) -> None:
        broker = self.world.broker
        metadata = broker.txn.metadata(TXN_ID)
        stuck = metadata is not None and metadata.state in PREPARING
        _require(not stuck, "every prepared transaction completes", metadata)
        log = broker.data_log
        _require(
            log.last_stable_offset == log.log_end_offset,
            "no transaction is left open in the log",
            (log.last_stable_offset, log.log_end_offset, log.open_transactions(), metadata),
        )
        self.counts["final checks"] += 1

    # ---- the checks

    def check_group(self) -> None:
        group = self.world.broker.group.shard.consumer_group(CONSUMER_GROUP)
        if group is None:
            return
        self.counts["group checks"] += 1
        _require(group.group_epoch >= self.group_epoch, "the group epoch never goes back", group)
        self.group_epoch = group.group_epoch
        owner: dict[tuple[object, int], str] = {}
        for member_id, member in group.members.items():
            before = self.member_epochs.get(member_id, -1)
            _require(
                member.member_epoch >= before,
                "a member epoch never goes back",
                (member_id, member.member_epoch, before),
            )
            self.member_epochs[member_id] = member.member_epoch
            for assignment in (member.assigned, member.revoking):
                for topic_id, partitions in assignment.items():
                    for partition in partitions:
                        other = owner.setdefault((topic_id, partition), member_id)
                        _require(
                            other == member_id,
                            "no partition owned by two members",
                            (partition, other, member_id, group.group_epoch),
                        )

    def _fetched(self, group_id: str) -> dict[int, int]:
        shard = self.world.broker.group.shard
        error, fetched = shard.classic.fetch_offsets(group_id=group_id, partitions=None)
        if error is not None:
            return {}
        return {f.partition: f.offset for f in fetched if f.topic == TOPIC and f.offset >= 0}

    def _check_offsets(self) -> None:
        fetched = self._fetched(CONSUMER_GROUP)
        for partition, value in fetched.items():
            self.counts["committed offsets"] += 1
            _require(
                value in self.attempted.get(partition, set()),
                "a committed offset was sent by a member",
                (partition, value),
            )
        for partition, value in self.confirmed.items():
            _require(
                fetched.get(partition, -1) >= value,
                "a confirmed offset commit stands and never goes back",
                (partition, fetched.get(partition), value),
            )
        txn_fetched = self._fetched(TXN_GROUP)
        for partition, value in txn_fetched.items():
            serial = self.txn_sent.get((partition, value))
            self.counts["transactional offsets"] += 1
            _require(serial is not None, "a transactional offset was sent", (partition, value))
            assert serial is not None
            _require(
                self.outcome.get(serial) is not False or serial < self.trusted_from,
                "an aborted transaction's offsets are never committed",
                (serial, partition, value),
            )
        for serial, committed in self.outcome.items():
            if not committed or not self._whole(serial):
                continue
            for partition, value in self.txn_written.get(serial, {}).items():
                _require(
                    txn_fetched.get(partition, -1) >= value,
                    "a committed transaction's offsets are committed",
                    (serial, partition, txn_fetched.get(partition), value),
                )

    def _settled(self, serial: int) -> bool:
        """False for the producer's transaction while its markers are not all written
        (EndTxn was answered once PrepareCommit was: the markers follow, retried)."""
        metadata = self.world.broker.txn.metadata(TXN_ID)
        preparing = metadata is not None and metadata.state in PREPARING
        if not preparing:
            return True
        committed = [s for s, c in self.outcome.items() if c]
        return bool(committed) and serial < max(committed)

    def _whole(self, serial: int) -> bool:
        """Whether every record the transaction had acknowledged must be there: it
        began after the last lossy power loss, and its markers are all written."""
        return serial >= self.trusted_from and self._settled(serial)

    def _check_transactions(self) -> None:
        log = self.world.broker.data_log
        lso = log.last_stable_offset
        _require(lso <= log.log_end_offset, "the LSO is within the log", lso)
        _require(lso >= self.lso, "the LSO never moves back", (lso, self.lso))
        self.lso = lso
        hanging = hanging_transactions(self.world.broker)
        if hanging:
            self.counts["steps with a hanging transaction"] += 1
        _require(
            self.lossy or not hanging,
            "no transaction open in the log that its coordinator does not know",
            (hanging, self.world.broker.txn.metadata(TXN_ID)),
        )
        visible = _read_committed(log)
        self.counts["read_committed scans"] += 1
        seen: set[int] = set()
        by_serial: dict[int, set[int]] = {}
        for value in visible:
            _require(value not in seen, "a transactional record is visible once", value)
            seen.add(value)
            by_serial.setdefault(value // 10_000, set()).add(value)
        for serial, acked in self.acked.items():
            shown = by_serial.get(serial, set())
            outcome = self.outcome.get(serial)
            if outcome is False and serial >= self.trusted_from:
                _require(not shown, "an aborted transaction is never visible", (serial, shown))
            elif outcome is True and self._whole(serial) and not hanging:
                _require(
                    acked <= shown,
                    "a committed transaction is visible",
                    (serial, sorted(acked - shown)),
                )
            if shown and self._whole(serial):
                _require(acked <= shown, "a transaction is visible whole", (serial, acked - shown))


def hanging_transactions(broker: CoordBroker) -> list[tuple[int, int]]:
    """(producer id, first offset) of the transactions open in the data log whose
    coordinator holds no ongoing or preparing transaction of that producer id: after
    a page-cache power loss kept a transaction's records but lost the coordinator's
    record of it, the LSO stays there until an operator aborts it."""
    metadata = broker.txn.metadata(TXN_ID)
    live = {TxnState.ONGOING, *PREPARING}
    known = metadata.producer_id if metadata is not None and metadata.state in live else None
    return [(pid, first) for pid, first in broker.data_log.open_transactions() if pid != known]


def _read_committed(log: PartitionLog) -> list[int]:
    """The values a read_committed consumer gets: below the LSO, control batches and
    aborted transactions' batches skipped (the aborted list a Fetch carries)."""
    start, lso = log.log_start_offset, log.last_stable_offset
    aborted = log.aborted_transactions(start, lso)
    values: list[int] = []
    offset = start
    while offset < lso:
        read = log.read(offset, max_bytes=READ_BYTES)
        _require(bool(read.headers), "the log reads to its LSO", offset)
        for header in read.headers:
            if header.base_offset >= lso:
                return values
            if header.attributes & CONTROL_MASK:
                continue
            if any(
                a.producer_id == header.producer_id
                and a.first_offset <= header.base_offset <= a.last_offset
                for a in aborted
            ):
                continue
            batch, _ = read_batch(read.records, header.position)
            values.extend(int(record.value or b"-1") for record in batch.records)
        offset = read.headers[-1].next_offset
    return values
