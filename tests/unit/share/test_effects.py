"""The share-partition manager performs no I/O (docs/design/share-leader.md): a state write
is made only by its caller and decides the outcome it is handed back, and an
acquisition names each log read it needs and goes on from the result it is fed."""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode
from shoal.share.acknowledge import AckBatch
from shoal.share.log_read import LogSlice, perform_read
from shoal.share.manager import SharePartitionManager
from shoal.share.states import RecordState
from tests.unit.share.test_manager import ACCEPT, GROUP, P0, Rig, ranges


def loaded(rig: Rig) -> SharePartitionManager:
    """The rig's manager itself (not its driving shell), P0 loaded with 10 records."""
    rig.topic(P0)
    rig.logs[P0].append(10)
    assert not isinstance(rig.manager.load(rig.key()), ErrorCode)
    return rig.manager.manager


def test_an_acknowledgement_is_written_by_the_caller_and_decided_by_its_outcome() -> None:
    rig = Rig()
    manager = loaded(rig)
    rig.fetch("a")
    sp = manager.get(rig.key())
    assert sp is not None
    writes = len(rig.persister.writes)
    acked = manager.acknowledge(
        group_id=GROUP,
        member_id="a",
        partition=P0,
        batches=[AckBatch(0, 9, (ACCEPT,))],
        settings=rig.config,
    )
    assert acked.pending is not None and acked.error is None
    assert len(rig.persister.writes) == writes, "the manager wrote nothing itself"
    assert all(view.pending for view in sp.in_flight()), "tentative until the outcome"
    failed = manager.acknowledge_written(acked.pending, ErrorCode.coordinator_load_in_progress)
    assert failed.error is ErrorCode.coordinator_not_available
    assert len(rig.persister.writes) == writes
    assert {(v.state, v.pending) for v in sp.in_flight()} == {(RecordState.ACQUIRED, False)}


def test_an_acquisition_names_its_reads_and_reads_again_past_a_moved_log_start() -> None:
    rig = Rig()
    manager = loaded(rig)
    log = rig.logs[P0]
    round_ = manager.acquire(
        group_id=GROUP,
        member_id="a",
        partitions=[P0],
        max_records=500,
        batch_size=500,
        max_bytes=1 << 20,
        settings=rig.config,
    )
    read = round_.next_read()
    assert read is not None and read.partition == P0 and read.offset == 0
    assert read.min_one_batch and read.max_records == 500
    # Retention moved the log start to 5 meanwhile: the read from 0 failed.
    round_.feed(LogSlice(None, ErrorCode.offset_out_of_range, log_start_offset=5, read_limit=10))
    again = round_.next_read()
    assert again is not None and again.offset == 5, "the start moved first, then reads again"
    round_.feed(perform_read(log, again))
    assert round_.next_read() is None
    (fetched,) = round_.done().partitions
    assert ranges(fetched) == [(5, 9, 1)]
