"""A stateful property test of the cleaner (docs/design/compaction.md): keyed appends (values,
tombstones, keyless records, idempotent and transactional producers with commits and
aborts), cleans with key maps of random size, the clock moving past delete horizons,
DeleteRecords, and restarts, in random order.

The model: every record read back is the record appended at its offset (cleaning
removes records, never changes or moves one); no offset is read twice; the log end
offset and log start offset are what the appends and DeleteRecords made them;
reading the whole log ends, for every key, with the value of its last committed
record at or after the log start (a tombstone read or no record at all both mean
"deleted": a tombstone may go once its horizon passed), never with a value from an
aborted transaction; producers keep their epoch and last sequence across cleans and
restarts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog
from shoal.log.transactions import ControlType
from tests.unit.log.cleaning import append_batch, keyed, read_all

HOUR_MS = 3_600_000
CONFIG = {
    "cleanup.policy": ["compact"],
    "segment.bytes": 200,
    "index.interval.bytes": 100,
    "min.cleanable.dirty.ratio": 0.0,
    "delete.retention.ms": HOUR_MS,
}
KEYS = [b"a", b"b", b"c", b"d", None]
PRODUCER = 21
"""The idempotent producer; TXN_PRODUCER writes transactions."""
TXN_PRODUCER = 22


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Process restarts only (the page cache survives): fsync changes nothing here."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


class CleanerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="shoal-clean-stateful-"))
        self.directory = self.root / "topic-0"
        self.clock = ManualClock()
        self.log = self._open()
        self.records: dict[int, tuple[bytes | None, bytes | None]] = {}
        """Offset -> (key, value) of every data record appended."""
        self.aborted: set[int] = set()
        """Offsets of records in aborted transactions."""
        self.pending: list[int] = []
        """Offsets of the open transaction's records."""
        self.log_start = 0
        self.sequence = 0
        self.txn_sequence = 0
        self.counter = 0
        self.last_offsets: dict[int, int] = {}
        """Producer id -> last offset of its last batch (DeleteRecords beyond it makes
        the log forget the producer, as Kafka's does)."""

    def _open(self) -> PartitionLog:
        return PartitionLog.open(directory=self.directory, config=CONFIG, clock=self.clock)

    def teardown(self) -> None:
        self.log.abandon()
        shutil.rmtree(self.root, ignore_errors=True)

    @initialize()
    def start(self) -> None:
        assert self.log.log_end_offset == 0

    def _value(self, tombstone: bool) -> bytes | None:
        self.counter += 1
        return None if tombstone else b"v%d" % self.counter

    def _remember(self, base: int, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
        for delta, pair in enumerate(pairs):
            self.records[base + delta] = pair

    # -- rules

    @rule(
        data=st.lists(st.tuples(st.sampled_from(KEYS), st.booleans()), min_size=1, max_size=4),
        idempotent=st.booleans(),
    )
    def produce(self, data: list[tuple[bytes | None, bool]], idempotent: bool) -> None:
        pairs = [(key, self._value(tombstone)) for key, tombstone in data]
        if idempotent:
            batch = keyed(
                self.clock, *pairs, producer_id=PRODUCER, producer_epoch=0,
                base_sequence=self.sequence,
            )  # fmt: skip
            self.sequence += len(pairs)
        else:
            batch = keyed(self.clock, *pairs)
        base = append_batch(self.log, batch)
        self._remember(base, pairs)
        if idempotent:
            self.last_offsets[PRODUCER] = base + len(pairs) - 1

    @rule(keys=st.lists(st.sampled_from(KEYS[:-1]), min_size=1, max_size=3))
    def produce_in_transaction(self, keys: list[bytes]) -> None:
        pairs = [(key, self._value(False)) for key in keys]
        batch = keyed(
            self.clock, *pairs, producer_id=TXN_PRODUCER, producer_epoch=0,
            base_sequence=self.txn_sequence, transactional=True,
        )  # fmt: skip
        self.txn_sequence += len(pairs)
        base = append_batch(self.log, batch)
        self._remember(base, pairs)
        self.pending += range(base, base + len(pairs))
        self.last_offsets[TXN_PRODUCER] = base + len(pairs) - 1

    @precondition(lambda self: bool(self.pending))
    @rule(commit=st.booleans())
    def end_transaction(self, commit: bool) -> None:
        self.log.append_control(
            producer_id=TXN_PRODUCER, producer_epoch=0,
            control=ControlType.COMMIT if commit else ControlType.ABORT,
            coordinator_epoch=0, timestamp_ms=self.clock.wall_ms(),
        )  # fmt: skip
        if not commit:
            self.aborted.update(self.pending)
        self.pending = []

    @rule(entries=st.integers(1, 6))
    def clean(self, entries: int) -> None:
        plan = self.log.clean_plan(self.clock.wall_ms())
        if plan is None:
            return
        result = plan.run(key_map_entries=entries)
        assert result.error is None, result.error
        stats = self.log.finish_clean(result)
        assert stats.discarded is None
        assert stats.end_offset <= self.log.last_stable_offset

    @rule(minutes=st.sampled_from([1, 30, 61, 120]))
    def advance(self, minutes: int) -> None:
        self.clock.advance(minutes * 60_000)

    @rule()
    def restart(self) -> None:
        self.log.close()
        self.log = self._open()

    @rule()
    def crash(self) -> None:
        self.log.abandon()
        self.log = self._open()

    @rule(fraction=st.floats(0, 1))
    def delete_records(self, fraction: float) -> None:
        target = self.log_start + int((self.log.last_stable_offset - self.log_start) * fraction)
        self.log_start = self.log.delete_records_before(target)
        assert self.log_start == max(target, self.log_start)

    # -- the model

    @invariant()
    def records_are_originals_and_latest_values_survive(self) -> None:
        log = self.log
        end = max(self.records, default=-1) + 1
        assert log.log_end_offset >= end
        assert log.log_start_offset == self.log_start
        seen: dict[int, tuple[bytes | None, bytes | None]] = {}
        for record in read_all(log):
            if record.offset in seen:
                raise AssertionError(f"offset {record.offset} read twice")
            if record.offset not in self.records or record.offset < self.log_start:
                continue  # a transaction marker; a record below the log start in its batch
            assert (record.key, record.value) == self.records[record.offset], record.offset
            seen[record.offset] = (record.key, record.value)
        read_latest: dict[bytes, bytes | None] = {}
        for offset in sorted(seen):
            key, value = seen[offset]
            if key is not None and offset not in self.aborted and offset not in self.pending:
                read_latest[key] = value
        expected: dict[bytes, bytes | None] = {}
        for offset in sorted(self.records):
            key, value = self.records[offset]
            if key is not None and offset >= self.log_start and offset not in self.aborted:
                if offset in self.pending:
                    continue
                expected[key] = value
        for key in set(expected) | set(read_latest):
            assert read_latest.get(key) == expected.get(key), (key, read_latest, expected)

    @invariant()
    def producers_keep_their_sequence(self) -> None:
        entries = {e.producer_id: e for e in self.log.producers()}
        for producer, sequence in ((PRODUCER, self.sequence), (TXN_PRODUCER, self.txn_sequence)):
            if self.last_offsets.get(producer, -1) >= self.log_start:
                assert entries[producer].batches[-1].last_sequence == sequence - 1
                assert entries[producer].epoch == 0


CleanerMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("SHOAL_STATEFUL_EXAMPLES", "100")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_cleaner_state_machine = CleanerMachine.TestCase
