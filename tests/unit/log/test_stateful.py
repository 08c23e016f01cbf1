"""A stateful property test of PartitionLog: appends, reads, DeleteRecords, clean
restarts and crashes (with and without a torn last write) in random order.

The model: every acknowledged batch (its append returned) at offsets at or above the
log start offset reads back byte-exact; offsets are never handed out twice; the log
end offset never decreases, except that a crash tearing the last write removes
exactly that write, which the model treats as never acknowledged.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from bisect import bisect_right
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from shoal.clock import ManualClock
from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import append, make_batch, stored

CONFIG = {"segment.bytes": 900, "index.interval.bytes": 200}


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """The crashes here are process crashes (the page cache survives), so fsync does
    not change what the model may see; skipping it keeps the test fast on any disk."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="shoal-stateful-"))
        self.directory = self.root / "topic-0"
        self.clock = ManualClock()
        self.log = self._open()
        self.batches: dict[int, bytes] = {}
        """Base offset -> stored bytes of every acknowledged batch."""
        self.bases: list[int] = []
        self.log_start = 0
        self.log_end = 0
        self.last_write: tuple[int, int] | None = None
        """(base offset, size) of the last batch, while the last change was its append."""
        self.seed = 0
        self.consumer_offset = 0
        """Where a sequential consumer's next read starts."""

    def _open(self) -> PartitionLog:
        return PartitionLog.open(directory=self.directory, config=CONFIG, clock=self.clock)

    def teardown(self) -> None:
        self.log.abandon()
        shutil.rmtree(self.root, ignore_errors=True)

    @initialize()
    def start(self) -> None:
        assert self.log.log_end_offset == 0

    # -- rules

    @rule(sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 400)), min_size=1, max_size=3))
    def append(self, sizes: list[tuple[int, int]]) -> None:
        batches = []
        for count, value_size in sizes:
            self.seed += 1
            batches.append(make_batch(count, value_size=value_size, seed=self.seed))
        if sum(map(len, batches)) > CONFIG["segment.bytes"]:  # as Kafka: refused, no change
            with pytest.raises(LogError) as info:
                append(self.log, *batches, leader_epoch=self.seed % 7)
            assert info.value.code == ErrorCode.record_list_too_large
            return
        result = append(self.log, *batches, leader_epoch=self.seed % 7)
        assert result.base_offset == self.log_end, "offsets continue where the log ended"
        offset = self.log_end
        for batch, (count, _) in zip(batches, sizes, strict=True):
            self.batches[offset] = stored(batch, base_offset=offset, leader_epoch=self.seed % 7)
            self.bases.append(offset)
            offset += count
        assert result.last_offset == offset - 1
        self.log_end = offset
        last_base = self.bases[-1]
        self.last_write = (last_base, len(self.batches[last_base]))

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.log_end), label="offset")
        max_bytes = data.draw(st.integers(0, 2500), label="max_bytes")
        min_one = data.draw(st.booleans(), label="min_one_batch")
        result = self.log.read(offset, max_bytes=max_bytes, min_one_batch=min_one)
        assert result.records == self._expected(offset, max_bytes, min_one)
        assert result.high_watermark == self.log_end
        assert [h.base_offset for h in result.headers] == [
            b for b in self.bases if b in self._bases_read(offset, len(result.records))
        ]

    @rule(max_bytes=st.integers(0, 2500))
    def read_sequentially(self, max_bytes: int) -> None:
        """A consumer reading on from where its previous read ended."""
        offset = min(max(self.consumer_offset, self.log_start), self.log_end)
        result = self.log.read(offset, max_bytes=max_bytes)
        assert result.records == self._expected(offset, max_bytes, True)
        if result.headers:
            self.consumer_offset = result.headers[-1].next_offset

    @rule(data=st.data())
    def read_out_of_range(self, data: st.DataObject) -> None:
        offset = data.draw(
            st.one_of(
                st.integers(-5, self.log_start - 1), st.integers(self.log_end + 1, self.log_end + 5)
            )
        )
        with pytest.raises(LogError) as info:
            self.log.read(offset, max_bytes=1000)
        assert info.value.code == ErrorCode.offset_out_of_range

    @rule(data=st.data())
    def delete_records_before(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.log_end), label="delete before")
        assert self.log.delete_records_before(offset) == max(offset, self.log_start)
        self.log_start = max(offset, self.log_start)
        self.last_write = None

    @rule()
    def clean_restart(self) -> None:
        self.log.close()
        self.log = self._open()
        self.last_write = None

    @rule()
    def crash_restart(self) -> None:
        self.log.abandon()
        self.log = self._open()
        self.last_write = None

    @precondition(lambda self: self.last_write is not None)
    @rule(data=st.data())
    def crash_tearing_the_last_write(self, data: st.DataObject) -> None:
        assert self.last_write is not None
        base, size = self.last_write
        cut = data.draw(st.integers(1, size), label="bytes torn off")
        self.log.abandon()
        active = sorted(self.directory.glob("*.log"))[-1]
        os.truncate(active, active.stat().st_size - cut)
        # The torn batch was never acknowledged.
        del self.batches[base]
        self.bases.pop()
        self.log_end = base
        self.log = self._open()
        self.last_write = None

    # -- invariants

    @invariant()
    def offsets_match_the_model(self) -> None:
        assert self.log.log_start_offset == self.log_start
        assert self.log.log_end_offset == self.log_end

    @invariant()
    def everything_acknowledged_reads_back(self) -> None:
        if self.log_start == self.log_end:
            return
        result = self.log.read(self.log_start, max_bytes=1 << 30)
        assert result.records == self._expected(self.log_start, 1 << 30, True)

    # -- model helpers

    def _expected(self, offset: int, max_bytes: int, min_one: bool) -> bytes:
        if offset == self.log_end:
            return b""
        first = bisect_right(self.bases, offset) - 1
        parts: list[bytes] = []
        total = 0
        for base in self.bases[first:]:
            batch = self.batches[base]
            if total + len(batch) > max_bytes and (parts or not min_one):
                break
            parts.append(batch)
            total += len(batch)
        return b"".join(parts)

    def _bases_read(self, offset: int, length: int) -> set[int]:
        if not length:
            return set()
        first = bisect_right(self.bases, offset) - 1
        seen = set()
        total = 0
        for base in self.bases[first:]:
            if total >= length:
                break
            seen.add(base)
            total += len(self.batches[base])
        return seen


PartitionLogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("SHOAL_STATEFUL_EXAMPLES", "30")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_partition_log_state_machine = PartitionLogMachine.TestCase
