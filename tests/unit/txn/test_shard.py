"""The transaction coordinator's operations, on the manual clock."""

from __future__ import annotations

from dataclasses import replace

from shoal.protocol.errors import ErrorCode
from shoal.txn import ABORT, COMMIT, TxnState
from shoal.txn.records import CODEC, metadata_record
from shoal.txn.state import PRODUCER_EPOCH_MAX
from tests.unit.txn.support import MAX_TIMEOUT_MS, Rig

TP = ("t", 0)
TP2 = ("t", 1)


def test_new_transactional_id_gets_a_producer_id_at_epoch_zero() -> None:
    rig = Rig()
    answer, effects = rig.init("a")
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (ErrorCode.none, 1000, 0)
    assert effects == ()
    assert rig.coordinator.metadata("a").state == TxnState.EMPTY  # type: ignore[union-attr]


def test_reinit_bumps_the_epoch_and_fences_the_old_producer() -> None:
    rig = Rig()
    first, _ = rig.init("a")
    second, _ = rig.init("a")
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    stale = rig.add("a", first.producer_id, 0, TP)
    assert stale == {TP: ErrorCode.producer_fenced}
    answer, _ = rig.end("a", first.producer_id, 0, commit=True)
    assert answer.error == ErrorCode.producer_fenced


def test_timeout_outside_bounds_is_invalid() -> None:
    rig = Rig()
    assert (
        rig.init("a", timeout_ms=MAX_TIMEOUT_MS + 1)[0].error
        == ErrorCode.invalid_transaction_timeout
    )
    assert rig.init("a", timeout_ms=0)[0].error == ErrorCode.invalid_transaction_timeout
    assert rig.init("", timeout_ms=1000)[0].error == ErrorCode.invalid_request
    assert rig.coordinator.metadata("a") is None


def test_commit_prepares_then_markers_complete_it() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    assert rig.add("a", p.producer_id, 0, TP, TP2) == {TP: ErrorCode.none, TP2: ErrorCode.none}
    answer, effects = rig.end("a", p.producer_id, 0, commit=True)
    assert answer.error == ErrorCode.none
    (markers,) = effects
    assert (markers.control, markers.partitions, markers.producer_epoch) == (COMMIT, (TP, TP2), 0)
    assert rig.coordinator.metadata("a").state == TxnState.PREPARE_COMMIT  # type: ignore[union-attr]
    # while markers are pending, the next transaction must wait
    assert rig.add("a", p.producer_id, 0, TP) == {TP: ErrorCode.concurrent_transactions}
    assert rig.end("a", p.producer_id, 0, commit=True)[0].error == ErrorCode.concurrent_transactions
    rig.complete(effects)
    done = rig.coordinator.metadata("a")
    assert done is not None and done.state == TxnState.COMPLETE_COMMIT and not done.partitions
    assert rig.end("a", p.producer_id, 0, commit=True)[0].error == ErrorCode.none  # retry
    assert rig.end("a", p.producer_id, 0, commit=False)[0].error == ErrorCode.invalid_txn_state


def test_end_without_a_transaction_is_invalid_state() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    assert rig.end("a", p.producer_id, 0, commit=True)[0].error == ErrorCode.invalid_txn_state
    assert rig.end("b", 5, 0, commit=True)[0].error == ErrorCode.invalid_producer_id_mapping
    assert rig.end("a", p.producer_id + 1, 0, commit=True)[0].error == (
        ErrorCode.invalid_producer_id_mapping
    )


def test_reinit_during_a_transaction_aborts_it_first() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    rig.add("a", p.producer_id, 0, TP)
    answer, effects = rig.init("a")
    assert answer.error == ErrorCode.concurrent_transactions
    (markers,) = effects
    assert (markers.control, markers.producer_epoch, markers.partitions) == (ABORT, 1, (TP,))
    assert rig.init("a")[0].error == ErrorCode.concurrent_transactions
    rig.complete(effects)
    again, _ = rig.init("a")
    assert (again.error, again.producer_epoch) == (ErrorCode.none, 2)


def test_expected_producer_checks() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    # another producer id: PRODUCER_FENCED, as Kafka 4.2 (Kafka's isValidProducerId)
    assert rig.init("a", pid=p.producer_id + 7, epoch=0)[0].error == ErrorCode.producer_fenced
    bumped, _ = rig.init("a", pid=p.producer_id, epoch=0)
    assert bumped.producer_epoch == 1
    retry, _ = rig.init("a", pid=p.producer_id, epoch=0)  # the same request again
    assert (retry.error, retry.producer_epoch) == (ErrorCode.none, 1)
    rig.init("a")
    assert rig.init("a", pid=p.producer_id, epoch=0)[0].error == ErrorCode.producer_fenced


def test_epoch_exhaustion_gives_a_new_producer_id() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    metadata = rig.coordinator.metadata("a")
    assert metadata is not None
    shard = rig.coordinator.shard_of("a")
    shard.replay(metadata_record(replace(metadata, producer_epoch=32766)))
    answer, _ = rig.init("a")
    assert answer.producer_id != p.producer_id and answer.producer_epoch == 0
    assert rig.coordinator.metadata("a").previous_producer_id == p.producer_id  # type: ignore[union-attr]


def test_verify_only_reports_membership_without_writing() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    rig.add("a", p.producer_id, 0, TP)
    written = sum(len(s) for s in rig.sinks)
    assert rig.add("a", p.producer_id, 0, TP, TP2, verify=True) == {
        TP: ErrorCode.none,
        TP2: ErrorCode.transaction_abortable,
    }
    assert sum(len(s) for s in rig.sinks) == written


def test_verify_only_checks_the_producer_then_the_state() -> None:
    """Kafka's handleVerifyPartitionsInTransaction: producer id, epoch, a transaction
    being ended, then membership (no transaction: none is a member)."""
    rig = Rig()
    p, _ = rig.init("a")
    assert rig.add("a", p.producer_id, 0, TP, verify=True) == {TP: ErrorCode.transaction_abortable}
    rig.add("a", p.producer_id, 0, TP)
    assert rig.add("a", p.producer_id + 1, 0, TP, verify=True) == {
        TP: ErrorCode.invalid_producer_id_mapping
    }
    assert rig.add("a", p.producer_id, 1, TP, verify=True) == {TP: ErrorCode.producer_fenced}
    _, effects = rig.end("a", p.producer_id, 0, commit=True)
    assert rig.add("a", p.producer_id, 0, TP, verify=True) == {
        TP: ErrorCode.concurrent_transactions
    }
    rig.complete(effects)
    assert rig.add("a", p.producer_id, 0, TP, verify=True) == {TP: ErrorCode.transaction_abortable}


def test_adding_known_partitions_writes_nothing() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    rig.add("a", p.producer_id, 0, TP)
    written = sum(len(s) for s in rig.sinks)
    assert rig.add("a", p.producer_id, 0, TP) == {TP: ErrorCode.none}
    assert sum(len(s) for s in rig.sinks) == written


def test_timed_out_transaction_is_aborted_and_its_producer_fenced() -> None:
    rig = Rig()
    p, _ = rig.init("a", timeout_ms=10_000)
    rig.add("a", p.producer_id, 0, TP)
    rig.clock.advance(9_999)
    assert rig.coordinator.abort_timed_out(rig.clock.wall_ms()) == ()
    rig.clock.advance(1)
    (markers,) = rig.coordinator.abort_timed_out(rig.clock.wall_ms())
    assert (markers.control, markers.producer_epoch) == (ABORT, 1)
    rig.complete((markers,))
    assert rig.coordinator.metadata("a").state == TxnState.COMPLETE_ABORT  # type: ignore[union-attr]
    assert rig.add("a", p.producer_id, 0, TP) == {TP: ErrorCode.producer_fenced}
    assert rig.end("a", p.producer_id, 0, commit=True)[0].error == ErrorCode.producer_fenced
    # the producer whose transaction was aborted may re-initialise with its old epoch
    again, _ = rig.init("a", pid=p.producer_id, epoch=0)
    assert (again.error, again.producer_epoch) == (ErrorCode.none, 2)


def test_idle_transactional_ids_expire() -> None:
    rig = Rig()
    rig.init("a")
    rig.clock.advance(604_800_000 - 1)
    assert rig.coordinator.expire_transactional_ids(rig.clock.wall_ms()) == 0
    rig.clock.advance(1)
    assert rig.coordinator.expire_transactional_ids(rig.clock.wall_ms()) == 1
    assert rig.coordinator.metadata("a") is None
    rig.restart()
    assert rig.coordinator.metadata("a") is None


def test_ongoing_transactions_do_not_expire() -> None:
    rig = Rig()
    p, _ = rig.init("a", timeout_ms=MAX_TIMEOUT_MS)
    rig.add("a", p.producer_id, 0, TP)
    rig.clock.advance(604_800_000)
    assert rig.coordinator.expire_transactional_ids(rig.clock.wall_ms()) == 0


def test_end_txn_v5_bumps_the_epoch() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    rig.add("a", p.producer_id, 0, TP)
    answer, effects = rig.end("a", p.producer_id, 0, commit=True, bump=True)
    assert (answer.error, answer.producer_epoch) == (ErrorCode.none, 1)
    assert effects[0].producer_epoch == 1
    rig.complete(effects)
    retry, _ = rig.end("a", p.producer_id, 0, commit=True, bump=True)
    assert (retry.error, retry.producer_epoch) == (ErrorCode.none, 1)
    assert rig.add("a", p.producer_id, 1, TP) == {TP: ErrorCode.none}


def test_restart_replays_state_and_reports_pending_markers() -> None:
    rig = Rig()
    p, _ = rig.init("a")
    rig.add("a", p.producer_id, 0, TP)
    q, _ = rig.init("b")
    rig.add("b", q.producer_id, 0, TP2)
    _answer, effects = rig.end("b", q.producer_id, 0, commit=False)
    before = {tid: rig.coordinator.metadata(tid) for tid in ("a", "b")}
    rig.restart()
    assert {tid: rig.coordinator.metadata(tid) for tid in ("a", "b")} == before
    assert rig.coordinator.pending_markers() == effects


def test_record_bytes_round_trip() -> None:
    rig = Rig()
    p, _ = rig.init("tx-é")
    rig.add("tx-é", p.producer_id, 0, ("b", 2), ("a", 1), ("a", 0))
    metadata = rig.coordinator.metadata("tx-é")
    assert metadata is not None
    key, value = CODEC.encode(metadata_record(metadata))
    assert key[:2] == b"\x00\x00" and value is not None and value[:2] == b"\x00\x01"
    assert CODEC.decode(key, value) == metadata_record(metadata)


def test_pruning_keeps_each_ids_latest_record_and_rewrites_idle_ones() -> None:
    rig = Rig()
    shard_of = rig.coordinator.shard_of
    rig.init("a")
    partition = rig.coordinator.runtime.partition_of("a")
    same = next(
        tid
        for tid in (f"b{i}" for i in range(100))
        if rig.coordinator.runtime.partition_of(tid) == partition
    )
    for _ in range(5):
        rig.init(same)
    assert rig.coordinator.prune_offsets()[partition] == 0  # "a" is pinned at 0
    assert shard_of("a").rewrite_stale(window_records=10, records_max=10).records == ()
    assert rig.coordinator.rewrite_stale(window_records=1, records_per_append=10) == 1
    before = rig.coordinator.metadata("a")
    assert rig.coordinator.prune_offsets()[partition] == 5  # the last init of `same`
    rig.restart()
    assert rig.coordinator.metadata("a") == before


def test_v5_abort_of_no_transaction_bumps_the_epoch() -> None:
    """Kafka 4.2 with transaction version 2 (EndTxn v5): an abort while Empty or
    completed is answered NONE with the epoch bumped; a retry of it (the old epoch)
    the same; a commit of no transaction INVALID_TXN_STATE; v0-v4 unchanged."""
    rig = Rig()
    p, _ = rig.init("a")
    assert rig.end("a", p.producer_id, 0, commit=False)[0].error == ErrorCode.invalid_txn_state
    assert rig.end("a", p.producer_id, 0, commit=True, bump=True)[0].error == (
        ErrorCode.invalid_txn_state
    )
    answer, effects = rig.end("a", p.producer_id, 0, commit=False, bump=True)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (
        ErrorCode.none,
        p.producer_id,
        1,
    )
    (markers,) = effects
    assert (markers.control, markers.partitions, markers.producer_epoch) == (ABORT, (), 1)
    assert rig.coordinator.metadata("a").state == TxnState.PREPARE_ABORT  # type: ignore[union-attr]
    rig.complete(effects)
    assert rig.coordinator.metadata("a").state == TxnState.COMPLETE_ABORT  # type: ignore[union-attr]
    retry, effects = rig.end("a", p.producer_id, 0, commit=False, bump=True)
    assert (retry.error, retry.producer_epoch, effects) == (ErrorCode.none, 1, ())
    assert rig.end("a", p.producer_id, 1, commit=True, bump=True)[0].error == (
        ErrorCode.invalid_txn_state
    )
    again, effects = rig.end("a", p.producer_id, 1, commit=False, bump=True)
    assert (again.error, again.producer_epoch) == (ErrorCode.none, 2)
    rig.complete(effects)
    rig.restart()  # the records replay along the transitions
    assert rig.coordinator.metadata("a").producer_epoch == 2  # type: ignore[union-attr]


def _at_epoch(rig: Rig, tid: str, epoch: int, *partitions: tuple[str, int]) -> int:
    """A transactional id whose producer reached `epoch` (as after that many EndTxn v5)
    with a transaction ongoing over `partitions`; replayed as a reload would."""
    p, _ = rig.init(tid)
    rig.add(tid, p.producer_id, 0, *partitions)
    stored = rig.coordinator.metadata(tid)
    assert stored is not None
    rig.coordinator.shard_of(tid).replay(metadata_record(replace(stored, producer_epoch=epoch)))
    return int(p.producer_id)


def test_v5_end_at_the_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    """Kafka's TV2 overflow (checked against Kafka 4.2 in tests/differential/
    test_transactions.py): from epoch 32766 an EndTxn v5 prepares at 32767 with a new
    producer id recorded as the next one, the markers go out under the old id, the
    answer is the new id at epoch 0 and completing moves the id there; a retry of that
    end by the old id is answered the new one."""
    rig = Rig()
    old = _at_epoch(rig, "a", 32766, TP)
    answer, effects = rig.end("a", old, 32766, commit=True, bump=True)
    new = answer.producer_id
    assert (answer.error, answer.producer_epoch) == (ErrorCode.none, 0) and new != old
    (markers,) = effects
    assert (markers.producer_id, markers.producer_epoch, markers.control) == (old, 32767, COMMIT)
    preparing = rig.coordinator.metadata("a")
    assert preparing is not None
    assert (preparing.producer_id, preparing.producer_epoch) == (old, 32767)
    assert preparing.next_producer_id == new
    busy, _ = rig.end("a", old, 32766, commit=True, bump=True)
    assert busy.error == ErrorCode.concurrent_transactions
    rig.complete(effects)
    done = rig.coordinator.metadata("a")
    assert done is not None
    assert (done.state, done.producer_id, done.producer_epoch) == (TxnState.COMPLETE_COMMIT, new, 0)
    assert (done.previous_producer_id, done.next_producer_id) == (old, -1)
    retry, effects = rig.end("a", old, 32766, commit=True, bump=True)
    assert (retry.error, retry.producer_id, retry.producer_epoch, effects) == (
        ErrorCode.none,
        new,
        0,
        (),
    )
    other_end, _ = rig.end("a", old, 32766, commit=False, bump=True)
    assert other_end.error == ErrorCode.invalid_txn_state
    assert rig.add("a", new, 0, TP) == {TP: ErrorCode.none}
    rig.restart()
    assert rig.coordinator.metadata("a").producer_id == new  # type: ignore[union-attr]


def test_v5_abort_of_nothing_at_the_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    rig = Rig()
    old = _at_epoch(rig, "a", 32765, TP)
    answer, effects = rig.end("a", old, 32765, commit=False, bump=True)
    assert (answer.producer_id, answer.producer_epoch) == (old, 32766)
    rig.complete(effects)
    answer, effects = rig.end("a", old, 32766, commit=False, bump=True)
    assert (answer.error, answer.producer_epoch) == (ErrorCode.none, 0)
    assert answer.producer_id != old
    assert [(m.producer_id, m.producer_epoch, m.partitions) for m in effects] == [(old, 32767, ())]
    rig.complete(effects)
    assert rig.coordinator.metadata("a").producer_id == answer.producer_id  # type: ignore[union-attr]


def test_v4_end_at_the_exhausted_epoch_keeps_the_producer_id() -> None:
    """Transaction version 1 ends do not bump the epoch; InitProducerId rotates it."""
    rig = Rig()
    old = _at_epoch(rig, "a", 32766, TP)
    answer, effects = rig.end("a", old, 32766, commit=True)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (ErrorCode.none, old, 32766)
    rig.complete(effects)
    assert rig.coordinator.metadata("a").producer_id == old  # type: ignore[union-attr]


def test_v5_end_at_the_last_epoch_stays_in_range() -> None:
    """An id left at 32767 (a coordinator's fence from 32766) still ends within int16."""
    rig = Rig()
    old = _at_epoch(rig, "a", PRODUCER_EPOCH_MAX, TP)
    answer, effects = rig.end("a", old, PRODUCER_EPOCH_MAX, commit=False, bump=True)
    assert (answer.error, answer.producer_epoch) == (ErrorCode.none, 0)
    assert [m.producer_epoch for m in effects] == [PRODUCER_EPOCH_MAX]
    rig.complete(effects)
    rig.restart()
    assert rig.coordinator.metadata("a").producer_epoch == 0  # type: ignore[union-attr]


def test_the_client_transaction_version_is_recorded() -> None:
    """Kafka's ClientTransactionVersion (tagged field 2 of the value): 2 once Produce
    v12+ / TxnOffsetCommit v5 added a partition or EndTxn v5 ended; 0 for AddPartitionsToTxn
    and EndTxn v0-v4."""
    rig = Rig()
    p, _ = rig.init("a")

    def recorded() -> int:
        value = rig.sinks[rig.coordinator.runtime.partition_of("a")].records[-1].value
        assert value is not None
        return int(value.client_transaction_version)

    rig.add("a", p.producer_id, 0, TP)
    assert recorded() == 0
    rig.complete(rig.end("a", p.producer_id, 0, commit=True)[1])
    assert recorded() == 0
    rig.add("a", p.producer_id, 0, TP, tv=2)
    assert recorded() == 2
    rig.complete(rig.end("a", p.producer_id, 0, commit=True, bump=True)[1])
    assert recorded() == 2
    rig.restart()
    assert rig.coordinator.metadata("a").client_transaction_version == 2  # type: ignore[union-attr]


def test_init_by_the_id_an_end_ran_out_is_answered_the_new_one() -> None:
    """Kafka 4.2: InitProducerId naming the old id at its exhausted epoch after EndTxn
    v5 moved to a new id answers the new id at epoch 0, writing nothing."""
    rig = Rig()
    old = _at_epoch(rig, "a", 32766, TP)
    answer, effects = rig.end("a", old, 32766, commit=True, bump=True)
    rig.complete(effects)
    again, effects = rig.init("a", pid=old, epoch=32766)
    assert (again.error, again.producer_id, again.producer_epoch, effects) == (
        ErrorCode.none,
        answer.producer_id,
        0,
        (),
    )
    assert rig.coordinator.metadata("a").state == TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]
    earlier, _ = rig.init("a", pid=old, epoch=32765)
    assert earlier.error == ErrorCode.producer_fenced
