"""Idempotent producers: duplicates, sequence gaps, epochs, and state across restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.log.api import LogError
from shoal.log.producer_state import ProducerStateTable
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import BASE_TIMESTAMP_MS, append, headers_of, make_batch
from tests.unit.log.conftest import LogOpener

PID = 4000


def batch(sequence: int, count: int = 2, *, epoch: int = 0, pid: int = PID, seed: int = 0) -> bytes:
    return make_batch(
        count, producer_id=pid, producer_epoch=epoch, base_sequence=sequence, seed=seed
    )


def _codes(log: object, *batches: bytes) -> str:
    with pytest.raises(LogError) as info:
        append(log, *batches)  # type: ignore[arg-type]
    return info.value.code


def test_duplicate_retry_returns_original_offsets_and_stores_once(open_log: LogOpener) -> None:
    log = open_log()
    append(log, make_batch(3))  # a non-idempotent batch first: offsets 0-2
    first = append(log, batch(0))
    second = append(log, batch(2))
    size = log.size_bytes
    retry = append(log, batch(0))
    assert retry.duplicate
    assert (
        (retry.base_offset, retry.last_offset) == (first.base_offset, first.last_offset) == (3, 4)
    )
    assert log.size_bytes == size
    assert log.log_end_offset == second.last_offset + 1 == 7
    retry_latest = append(log, batch(2))
    assert retry_latest.duplicate and retry_latest.base_offset == 5


def test_only_the_last_five_batches_are_remembered(open_log: LogOpener) -> None:
    log = open_log()
    for i in range(6):
        append(log, batch(2 * i))
    assert append(log, batch(2)).duplicate  # second batch: among the last five
    assert _codes(log, batch(0)) == ErrorCode.out_of_order_sequence_number  # sixth back: forgotten


def test_sequence_gap_is_out_of_order(open_log: LogOpener) -> None:
    log = open_log()
    append(log, batch(0))
    assert _codes(log, batch(3)) == ErrorCode.out_of_order_sequence_number
    assert (
        _codes(log, batch(1)) == ErrorCode.out_of_order_sequence_number
    )  # overlaps, not a duplicate
    assert log.log_end_offset == 2
    assert not append(log, batch(2)).duplicate


def test_old_epoch_is_fenced_and_new_epoch_starts_at_zero(open_log: LogOpener) -> None:
    log = open_log()
    append(log, batch(0, epoch=3))
    assert _codes(log, batch(2, epoch=2)) == ErrorCode.invalid_producer_epoch
    assert _codes(log, batch(5, epoch=4)) == ErrorCode.out_of_order_sequence_number
    append(log, batch(0, epoch=4))
    assert _codes(log, batch(2, epoch=3)) == ErrorCode.invalid_producer_epoch
    append(log, batch(2, epoch=4))


def test_unknown_producer_may_start_at_any_sequence(open_log: LogOpener) -> None:
    log = open_log()
    append(log, batch(1234, epoch=7))
    append(log, batch(1236, epoch=7))
    append(log, batch(50, pid=PID + 1))
    assert log.log_end_offset == 6


def test_sequence_wraps_around(open_log: LogOpener) -> None:
    log = open_log()
    top = 2**31 - 2
    append(log, batch(top, count=2))  # sequences 2**31-2 .. 2**31-1
    append(log, batch(0, count=2))
    assert log.log_end_offset == 4


def test_all_batches_of_an_append_are_checked_before_any_is_written(open_log: LogOpener) -> None:
    log = open_log()
    append(log, batch(0))
    assert (
        _codes(log, batch(2), batch(4, pid=PID + 1), batch(9))
        == ErrorCode.out_of_order_sequence_number
    )
    assert log.log_end_offset == 2
    result = append(log, batch(2), batch(4), batch(0, pid=PID + 1))
    assert (result.base_offset, result.last_offset) == (2, 7)


def test_non_idempotent_batches_are_not_checked(open_log: LogOpener) -> None:
    log = open_log()
    for i in range(3):
        append(log, make_batch(1, seed=i))
        append(log, make_batch(1, producer_id=PID, base_sequence=-1, seed=i))
    assert log.log_end_offset == 6


def test_a_lone_batch_without_producer_id_passes_the_producer_state_by(
    open_log: LogOpener,
) -> None:
    """`append` skips the producer state for one batch of producer id -1 (coordinator
    batches, plain producers): the table ends as checking and recording it would
    leave it (the reference), and idempotent batches around it are still checked."""
    log = open_log()
    plain = make_batch(2)
    reference = ProducerStateTable()
    headers = headers_of(plain)
    assert reference.check(headers) is None
    reference.record(headers, timestamp_ms=0)
    append(log, plain)
    assert log.producers() == reference.entries() == []
    append(log, batch(0))
    append(log, make_batch(1, seed=1))
    assert append(log, batch(0)).duplicate
    assert _codes(log, batch(5)) == ErrorCode.out_of_order_sequence_number
    assert [entry.producer_id for entry in log.producers()] == [PID]


def _produce_history(log: object) -> None:
    for i in range(8):
        append(log, batch(2 * i, seed=i))  # type: ignore[arg-type]
        append(log, batch(3 * i, pid=PID + 1, epoch=2, count=3, seed=i))  # type: ignore[arg-type]


def _assert_state_survived(log: object) -> None:
    retry = append(log, batch(14, seed=7))  # type: ignore[arg-type]
    assert retry.duplicate and retry.base_offset == 35
    assert _codes(log, batch(17)) == ErrorCode.out_of_order_sequence_number
    assert _codes(log, batch(0, pid=PID + 1, epoch=1)) == ErrorCode.invalid_producer_epoch
    assert not append(log, batch(16)).duplicate  # type: ignore[arg-type]


@pytest.mark.parametrize("restart", ["clean", "crash", "crash-no-snapshots", "bad-snapshot"])
def test_producer_state_survives_restart(open_log: LogOpener, log_dir: Path, restart: str) -> None:
    log = open_log(segment_bytes=600)
    _produce_history(log)
    assert len(log.segment_base_offsets()) > 2
    if restart == "clean":
        log.close()
    else:
        log.abandon()
    snapshots = sorted(log_dir.glob("*.snapshot"))
    assert snapshots
    if restart == "crash-no-snapshots":
        for path in snapshots:
            path.unlink()
    elif restart == "bad-snapshot":
        snapshots[-1].write_bytes(snapshots[-1].read_bytes()[:-1] + b"\x00")
    _assert_state_survived(open_log(segment_bytes=600))


def test_snapshot_round_trip() -> None:
    table = ProducerStateTable()
    from tests.unit.log.batches import headers_of

    for i in range(7):
        headers = headers_of(batch(2 * i))
        table.record([h._replace(base_offset=10 * i) for h in headers], timestamp_ms=5)
    copy = ProducerStateTable.from_snapshot(table.to_snapshot())
    assert copy.to_snapshot() == table.to_snapshot()
    entry = copy.get(PID)
    assert entry is not None and len(entry.batches) == 5
    with pytest.raises(ValueError):
        ProducerStateTable.from_snapshot(table.to_snapshot()[:-2])


def test_idle_producers_expire(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(producer_id_expiration_ms=60_000, retention_ms=-1)
    append(log, batch(0))
    clock.advance(30_000)
    append(log, batch(0, pid=PID + 1))
    log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + 70_000)
    # PID expired, so it is unknown again and may start anywhere; PID+1 is remembered.
    append(log, batch(100))
    assert _codes(log, batch(100, pid=PID + 1)) == ErrorCode.out_of_order_sequence_number


def test_producers_whose_data_was_deleted_are_forgotten(open_log: LogOpener) -> None:
    log = open_log()
    append(log, batch(0))
    append(log, make_batch(1))
    log.delete_records_before(2)
    append(log, batch(77))  # unknown again
