"""Transactions in the partition log: markers, the last stable offset, the aborted
index, fencing, reads bounded by the LSO, deletion bounds, and recovery."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from shoal.clock import ManualClock
from shoal.log.api import LogError
from shoal.log.events import LogEvents
from shoal.log.partition import PartitionLog
from shoal.log.producer_state import ProducerStateTable
from shoal.log.transactions import (
    AbortedTxn,
    AbortEntry,
    ControlType,
    encode_control_batch,
    read_marker,
    read_txn_index,
)
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import parse_header
from tests.unit.log.batches import append, headers_of, make_batch
from tests.unit.log.conftest import LogOpener

HOUR_MS = 3_600_000


class Producer:
    """A transactional producer's batches with running sequences."""

    def __init__(self, producer_id: int, epoch: int = 0) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.sequence = 0

    def batch(self, count: int = 2, *, transactional: bool = True, value_size: int = 16) -> bytes:
        batch = make_batch(
            count,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            transactional=transactional,
            value_size=value_size,
            seed=self.sequence,
        )
        self.sequence += count
        return batch


def marker(log: PartitionLog, producer: Producer, control: ControlType, **kw: int) -> int:
    return log.append_control(
        producer_id=producer.producer_id,
        producer_epoch=kw.get("epoch", producer.epoch),
        control=control,
        coordinator_epoch=kw.get("coordinator_epoch", 0),
        timestamp_ms=1_700_000_000_000,
    )


def test_control_batch_round_trip() -> None:
    batch = encode_control_batch(
        producer_id=7,
        producer_epoch=3,
        control=ControlType.COMMIT,
        coordinator_epoch=12,
        timestamp_ms=99,
    )
    header = parse_header(batch)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 3, -1)
    assert (header.records_count, header.max_timestamp) == (1, 99)
    assert read_marker(batch, header) == (ControlType.COMMIT, 12)


@pytest.mark.parametrize(
    ("control", "producer_id", "producer_epoch", "coordinator_epoch", "timestamp_ms", "expected"),
    [
        (
            ControlType.COMMIT,
            7,
            2,
            5,
            1_764_236_056_123,
            "000000000000000000000042000000000220be521b0030000000000000019ac4a9d63b0000019ac4a9"
            "d63b00000000000000070002ffffffff000000012000000008000000010c00000000000500",
        ),
        (
            ControlType.ABORT,
            2**40,
            32767,
            -1,
            0,
            "0000000000000000000000420000000002b0eec76100300000000000000000000000000000000000"
            "00000000000100000000007fffffffffff000000012000000008000000000c0000ffffffff00",
        ),
        (
            ControlType.ABORT,
            300,
            0,
            2**31 - 1,
            2**41,
            "0000000000000000000000420000000002be1013b40030000000000000020000000000000002000000"
            "0000000000000000012c0000ffffffff000000012000000008000000000c00007fffffff00",
        ),
    ],
)
def test_control_batch_bytes_are_unchanged(
    control: ControlType,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp_ms: int,
    expected: str,
) -> None:
    """The markers written by the shared batch writer are byte for byte those of the
    hand-built writer they replaced (its output, recorded)."""
    batch = encode_control_batch(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        control=control,
        coordinator_epoch=coordinator_epoch,
        timestamp_ms=timestamp_ms,
    )
    assert batch.hex() == expected


def test_lso_follows_the_earliest_open_transaction(open_log: LogOpener) -> None:
    log = open_log()
    a, b = Producer(1), Producer(2)
    append(log, make_batch(3))  # 0-2 plain
    assert log.last_stable_offset == 3
    append(log, a.batch())  # 3-4 a
    append(log, b.batch())  # 5-6 b
    append(log, a.batch())  # 7-8 a (same transaction)
    assert log.last_stable_offset == 3
    assert log.open_transactions() == [(1, 3), (2, 5)]
    assert marker(log, a, ControlType.COMMIT) == 9
    assert log.last_stable_offset == 5
    assert log.open_transactions() == [(2, 5)]
    assert marker(log, b, ControlType.ABORT) == 10
    assert log.last_stable_offset == log.log_end_offset == 11
    assert log.open_transactions() == []
    assert log.aborted_transactions(0, 11) == [AbortedTxn(2, 5, 10)]
    assert log.aborted_transactions(0, 5) == []  # records end before the transaction
    assert log.aborted_transactions(11, 20) == []  # starts after its marker
    assert log.aborted_transactions(6, 7) == [AbortedTxn(2, 5, 10)]


def test_marker_without_open_transaction_is_written_and_changes_nothing(
    open_log: LogOpener,
) -> None:
    log = open_log()
    producer = Producer(4)
    assert marker(log, producer, ControlType.ABORT) == 0
    assert log.last_stable_offset == 1
    assert log.aborted_transactions(0, 1) == []
    assert log.read(0, max_bytes=1000).headers[0].is_control


def test_aborted_transactions_are_ordered_by_first_offset(open_log: LogOpener) -> None:
    log = open_log()
    a, b = Producer(1), Producer(2)
    append(log, a.batch())  # 0-1
    append(log, b.batch())  # 2-3
    marker(log, b, ControlType.ABORT)  # 4
    marker(log, a, ControlType.ABORT)  # 5
    assert log.aborted_transactions(0, 6) == [AbortedTxn(1, 0, 5), AbortedTxn(2, 2, 4)]


def test_markers_are_fenced_by_producer_and_coordinator_epochs(open_log: LogOpener) -> None:
    log = open_log()
    producer = Producer(1, epoch=5)
    append(log, producer.batch())
    marker(log, producer, ControlType.COMMIT, coordinator_epoch=3)
    with pytest.raises(LogError) as old_epoch:
        marker(log, producer, ControlType.ABORT, epoch=4)
    assert old_epoch.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(LogError) as old_coordinator:
        marker(log, producer, ControlType.ABORT, coordinator_epoch=2)
    assert old_coordinator.value.code == ErrorCode.transaction_coordinator_fenced
    assert log.log_end_offset == 3  # nothing written by the fenced markers
    # A bumped epoch (a coordinator aborting a timed-out transaction) is accepted.
    assert marker(log, producer, ControlType.ABORT, epoch=6, coordinator_epoch=3) == 3


def test_plain_batch_from_a_producer_in_a_transaction_is_refused(open_log: LogOpener) -> None:
    log = open_log()
    producer = Producer(1)
    append(log, producer.batch())
    with pytest.raises(LogError) as info:
        append(log, producer.batch(transactional=False))
    assert info.value.code == ErrorCode.invalid_txn_state


def test_read_up_to_max_offset_returns_whole_batches_below_it(open_log: LogOpener) -> None:
    log = open_log()
    producer = Producer(1)
    append(log, make_batch(2))  # 0-1
    append(log, make_batch(2, seed=1))  # 2-3
    append(log, producer.batch())  # 4-5 open
    append(log, make_batch(2, seed=2))  # 6-7
    stable = log.last_stable_offset
    assert stable == 4
    read = log.read(0, max_bytes=1 << 20, max_offset=stable)
    assert [h.base_offset for h in read.headers] == [0, 2]
    assert len(read.records) == sum(h.size for h in read.headers)
    assert log.read(4, max_bytes=1 << 20, max_offset=stable).records == b""
    assert log.read(6, max_bytes=1 << 20, max_offset=stable).records == b""
    assert [h.base_offset for h in log.read(0, max_bytes=1 << 20).headers] == [0, 2, 4, 6]


def test_lso_move_tells_listeners(tmp_path: Path, clock: ManualClock) -> None:
    events = LogEvents()
    heard: list[tuple[str, int]] = []
    events.on_appended(lambda topic, partition: heard.append((topic, partition)))
    log = PartitionLog.open(
        directory=tmp_path / "t-0", config={}, clock=clock, events=events.for_partition("t", 0)
    )
    producer = Producer(1)
    append(log, producer.batch())
    heard.clear()
    marker(log, producer, ControlType.COMMIT)
    assert heard == [("t", 0)]
    log.close()


def test_delete_records_stops_at_the_lso(open_log: LogOpener) -> None:
    log = open_log()
    producer = Producer(1)
    append(log, make_batch(2))  # 0-1
    append(log, producer.batch())  # 2-3 open
    append(log, make_batch(2, seed=1))  # 4-5
    assert log.delete_records_before(2) == 2
    with pytest.raises(LogError) as info:
        log.delete_records_before(3)
    assert info.value.code == ErrorCode.offset_out_of_range
    marker(log, producer, ControlType.COMMIT)
    assert log.delete_records_before(6) == 6


def test_retention_stops_at_the_segment_holding_the_lso(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=600, retention_ms=HOUR_MS)
    producer = Producer(1)
    for i in range(4):
        append(log, make_batch(2, value_size=120, seed=i))
    append(log, producer.batch(value_size=120))
    first_open = log.last_stable_offset
    for i in range(4):
        append(log, make_batch(2, value_size=120, seed=10 + i))
    bases = log.segment_base_offsets()
    assert len(bases) > 3
    clock.advance(2 * HOUR_MS)
    log.enforce_retention(now_wall_ms=clock.wall_ms())
    assert log.log_start_offset <= first_open
    holding = max(b for b in bases if b <= first_open)
    assert log.segment_base_offsets()[0] == holding
    marker(log, producer, ControlType.COMMIT)
    log.enforce_retention(now_wall_ms=clock.wall_ms())
    assert log.log_start_offset == log.log_end_offset


def test_expiry_keeps_producers_with_open_transactions(open_log: LogOpener) -> None:
    log = open_log(producer_id_expiration_ms=1000)
    producer, idle = Producer(1), Producer(2)
    append(log, producer.batch())
    append(log, idle.batch(transactional=False))
    log._producers.expire(now_ms=10**15, expiration_ms=1000)
    assert log.open_transactions() == [(1, 0)]
    assert log._producers.get(2) is None


def _transactions(log: PartitionLog) -> PartitionLog:
    """Offsets: 0-1 a (aborted by 4), 2-3 b (committed by 5), 6-7 c (open)."""
    a, b, c = Producer(1), Producer(2), Producer(3)
    append(log, a.batch())
    append(log, b.batch())
    marker(log, a, ControlType.ABORT)
    marker(log, b, ControlType.COMMIT)
    append(log, c.batch())
    return log


@pytest.mark.parametrize("shutdown", ["clean", "crash"])
def test_open_transactions_and_aborted_index_survive_a_restart(
    open_log: LogOpener, log_dir: Path, shutdown: str
) -> None:
    log = _transactions(open_log())
    if shutdown == "clean":
        log.close()
    else:
        log.abandon()
    reopened = open_log()
    assert reopened.open_transactions() == [(3, 6)]
    assert reopened.last_stable_offset == 6
    assert reopened.aborted_transactions(0, 8) == [AbortedTxn(1, 0, 4)]
    # The producer's sequence state is intact too: its next batch follows.
    c = Producer(3)
    c.sequence = 2
    append(reopened, c.batch())
    marker(reopened, c, ControlType.ABORT)
    assert reopened.aborted_transactions(0, 20) == [AbortedTxn(1, 0, 4), AbortedTxn(3, 6, 10)]


@pytest.mark.parametrize("snapshots", ["kept", "lost"])
def test_sealed_segments_keep_their_txnindex_and_a_lost_one_is_rebuilt(
    open_log: LogOpener, log_dir: Path, snapshots: str
) -> None:
    log = _transactions(open_log(segment_bytes=300))
    for i in range(6):
        append(log, make_batch(2, value_size=60, seed=i))
    bases = log.segment_base_offsets()
    assert len(bases) >= 3
    holding = max(b for b in bases if b <= 4)
    index_file = log_dir / f"{holding:020d}.txnindex"
    sealed_end = bases[bases.index(holding) + 1]
    assert read_txn_index(index_file) == ([AbortEntry(AbortedTxn(1, 0, 4), 2)], sealed_end)
    log.close()
    index_file.unlink()
    if snapshots == "lost":
        for snapshot in log_dir.glob("*.snapshot"):
            snapshot.unlink()
    reopened = open_log(segment_bytes=300)
    assert reopened.aborted_transactions(0, 100) == [AbortedTxn(1, 0, 4)]
    assert reopened.open_transactions() == [(3, 6)]
    assert read_txn_index(index_file) == (
        [AbortEntry(AbortedTxn(1, 0, 4), 2)],
        sealed_end,
    )  # rewritten


def test_damaged_txnindex_is_rebuilt(open_log: LogOpener, log_dir: Path) -> None:
    log = _transactions(open_log(segment_bytes=300))
    for i in range(6):
        append(log, make_batch(2, value_size=60, seed=i))
    bases = log.segment_base_offsets()
    holding = max(b for b in bases if b <= 4)
    log.close()
    index_file = log_dir / f"{holding:020d}.txnindex"
    index_file.write_bytes(index_file.read_bytes()[:-3])
    reopened = open_log(segment_bytes=300)
    assert reopened.aborted_transactions(0, 100) == [AbortedTxn(1, 0, 4)]


def test_snapshot_keeps_open_transactions_and_coordinator_epochs() -> None:
    table = ProducerStateTable()
    opened = headers_of(Producer(1).batch())[0]._replace(base_offset=40)
    table.record([opened], timestamp_ms=5)
    ended = Producer(2)
    table.record([headers_of(ended.batch())[0]._replace(base_offset=10)], timestamp_ms=5)
    table.end_transaction(
        producer_id=2,
        producer_epoch=0,
        coordinator_epoch=9,
        control=ControlType.COMMIT,
        offset=12,
        timestamp_ms=6,
    )
    copy = ProducerStateTable.from_snapshot(table.to_snapshot())
    assert copy.open_transactions() == [(1, 40)]
    assert copy.first_unstable_offset() == 40
    entry = copy.get(2)
    assert entry is not None and entry.coordinator_epoch == 9
    with pytest.raises(LogError) as info:
        copy.check_marker(producer_id=2, producer_epoch=0, coordinator_epoch=8)
    assert info.value.code == ErrorCode.transaction_coordinator_fenced


def test_crash_keeps_the_index_entry_of_a_transaction_begun_in_a_deleted_segment(
    open_log: LogOpener,
) -> None:
    """Found by the state machine: the active segment's .txnindex from the last clean
    close covers its markers, so a crash does not need the (pruned) snapshot from
    before the transaction to rebuild them."""
    log = open_log(segment_bytes=500)
    append(log, make_batch(3, value_size=40))  # 0-2
    producer = Producer(1)
    append(log, producer.batch(3, value_size=40))  # 3-5
    append(log, make_batch(3, value_size=40, seed=1))  # 6-8, a new segment at 6
    assert log.segment_base_offsets() == [0, 6]
    log.close()
    log = open_log(segment_bytes=500)
    assert marker(log, producer, ControlType.ABORT) == 9
    log.close()
    log = open_log(segment_bytes=500)
    assert log.delete_records_before(7) == 7
    log.abandon()
    reopened = open_log(segment_bytes=500)
    assert reopened.segment_base_offsets() == [6]
    assert reopened.aborted_transactions(7, 10) == [AbortedTxn(1, 3, 9)]


def test_version_1_snapshots_are_still_read() -> None:
    """Written before transactions: no open transaction, sequences intact."""
    body = struct.pack(">i", 1) + struct.pack(">qhqqb", 5, 2, 1000, 41, 1)
    body += struct.pack(">iiqq", 0, 1, 40, 41)
    data = struct.pack(">4shI", b"SHPS", 1, crc32c.crc32c(body)) + body
    table = ProducerStateTable.from_snapshot(data)
    entry = table.get(5)
    assert entry is not None and (entry.epoch, entry.last_offset) == (2, 41)
    assert entry.batches[-1].last_sequence == 1
    assert table.open_transactions() == [] and table.first_unstable_offset() is None


def test_producers_show_open_transactions_and_marker_epochs(open_log: LogOpener) -> None:
    log = open_log()
    a, b = Producer(2), Producer(1)
    append(log, a.batch(3))  # 0-2 a
    append(log, b.batch())  # 3-4 b
    assert marker(log, a, ControlType.COMMIT, coordinator_epoch=4) == 5
    states = [
        (p.producer_id, p.batches[-1].last_sequence, p.txn_first_offset, p.coordinator_epoch)
        for p in log.producers()
    ]
    assert states == [(1, 1, 3, -1), (2, 2, -1, 4)]
