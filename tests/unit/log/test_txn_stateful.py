"""A stateful property test of the log's transaction state against a simple model:
plain and transactional appends by several producers, COMMIT and ABORT markers,
DeleteRecords, segment rolls (small segments), clean restarts and crashes.

The model keeps, per producer, the first offset of its open transaction and its next
sequence, and the list of aborted transactions (producer, first offset, marker
offset). After every step the log must agree: the last stable offset is the earliest
open first offset (else the log end), `open_transactions()` lists the open ones,
`aborted_transactions` answers the model's entries overlapping the asked range, and
a read bounded by the LSO returns only batches below it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog
from shoal.log.transactions import AbortedTxn, ControlType
from tests.unit.log.batches import append, make_batch

CONFIG = {"segment.bytes": 700, "index.interval.bytes": 200}
PRODUCERS = (1, 2, 3)


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Process crashes only (the page cache survives): fsync changes nothing here."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


class TransactionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="shoal-txn-stateful-"))
        self.clock = ManualClock()
        self.log = self._open()
        self.open: dict[int, int] = {}
        self.sequence = dict.fromkeys(PRODUCERS, 0)
        self.aborted: list[AbortedTxn] = []
        self.log_start = 0
        self.seed = 0

    def _open(self) -> PartitionLog:
        return PartitionLog.open(directory=self.root / "t-0", config=CONFIG, clock=self.clock)

    def teardown(self) -> None:
        self.log.abandon()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(count=st.integers(1, 3))
    def plain_append(self, count: int) -> None:
        self.seed += 1
        append(self.log, make_batch(count, value_size=40, seed=self.seed))

    @rule(producer=st.sampled_from(PRODUCERS), count=st.integers(1, 3))
    def transactional_append(self, producer: int, count: int) -> None:
        batch = make_batch(
            count,
            value_size=40,
            producer_id=producer,
            base_sequence=self.sequence[producer],
            transactional=True,
            seed=self.sequence[producer],
        )
        result = append(self.log, batch)
        self.sequence[producer] += count
        self.open.setdefault(producer, result.base_offset)

    @rule(producer=st.sampled_from(PRODUCERS), commit=st.booleans())
    def end_transaction(self, producer: int, commit: bool) -> None:
        offset = self.log.append_control(
            producer_id=producer,
            producer_epoch=0,
            control=ControlType.COMMIT if commit else ControlType.ABORT,
            coordinator_epoch=0,
            timestamp_ms=self.clock.wall_ms(),
        )
        first = self.open.pop(producer, None)
        if first is not None and not commit:
            self.aborted.append(AbortedTxn(producer, first, offset))

    @rule(fraction=st.floats(0, 1))
    def delete_records(self, fraction: float) -> None:
        stable = self.log.last_stable_offset
        target = self.log_start + int((stable - self.log_start) * fraction)
        self.log_start = max(self.log_start, self.log.delete_records_before(target))

    @rule()
    def clean_restart(self) -> None:
        self.log.close()
        self.log = self._open()

    @rule()
    def crash(self) -> None:
        self.log.abandon()
        self.log = self._open()

    @invariant()
    def agrees_with_the_model(self) -> None:
        log = self.log
        end = log.log_end_offset
        assert log.last_stable_offset == min(self.open.values(), default=end)
        expected_open = sorted(self.open.items(), key=lambda item: (item[1], item[0]))
        assert log.open_transactions() == expected_open
        start = log.log_start_offset
        mid = (start + end) // 2
        ranges = ((start, end), (start, log.last_stable_offset), (end, end + 1), (start, mid))
        for low, high in (*ranges, (mid, end), (mid, mid + 2)):
            expected = sorted(
                (a for a in self.aborted if a.last_offset >= low and a.first_offset < high),
                key=lambda a: (a.first_offset, a.last_offset),
            )
            assert log.aborted_transactions(low, high) == expected, (low, high)
        stable = log.last_stable_offset
        read = log.read(start, max_bytes=1 << 20, max_offset=stable)
        assert all(h.base_offset < stable for h in read.headers)
        if start < stable:  # every batch below the LSO, the last one ending at it
            assert read.headers[-1].next_offset == stable
        else:
            assert read.records == b""


TransactionLogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("SHOAL_STATEFUL_EXAMPLES", "30")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_transaction_log_state_machine = TransactionLogMachine.TestCase
