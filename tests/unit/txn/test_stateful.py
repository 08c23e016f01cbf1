"""A hypothesis state machine of the transaction coordinator: producers of a few
transactional ids initialise, add partitions, end transactions, time out, and the
coordinator restarts from its records. Checked after every step: only the latest
producer of an id is accepted (every older one is fenced); an id is preparing exactly
when its markers are pending; a restart rebuilds the same state."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from shoal.protocol.errors import ErrorCode
from shoal.txn import TxnState, WriteMarkers
from tests.unit.txn.support import Rig

IDS = ("a", "b", "c")
PARTITIONS = (("t", 0), ("t", 1), ("u", 0))
_OK_OR_BUSY = {ErrorCode.none, ErrorCode.concurrent_transactions}
_COMPLETE = {TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.rig = Rig()
        self.latest: dict[str, tuple[int, int]] = {}
        """The producer (id, epoch) each transactional id last handed out."""
        self.fenced: dict[str, list[tuple[int, int]]] = {tid: [] for tid in IDS}
        self.pending: list[WriteMarkers] = []

    def _hand_out(self, tid: str, pid: int, epoch: int) -> None:
        old = self.latest.get(tid)
        if old is not None and old != (pid, epoch):
            self.fenced[tid].append(old)
        self.latest[tid] = (pid, epoch)

    @rule(tid=st.sampled_from(IDS), timeout_ms=st.integers(1, 20_000))
    def init(self, tid: str, timeout_ms: int) -> None:
        answer, effects = self.rig.init(tid, timeout_ms=timeout_ms)
        self.pending.extend(effects)
        assert answer.error in _OK_OR_BUSY
        if answer.error == ErrorCode.none:
            self._hand_out(tid, answer.producer_id, answer.producer_epoch)
        elif effects:  # the ongoing transaction was aborted with the epoch bumped
            old = self.latest[tid]
            self.fenced[tid].append(old)

    @rule(tid=st.sampled_from(IDS), partitions=st.sets(st.sampled_from(PARTITIONS), min_size=1))
    def add(self, tid: str, partitions: set[tuple[str, int]]) -> None:
        if tid not in self.latest:
            return
        pid, epoch = self.latest[tid]
        answer = self.rig.add(tid, pid, epoch, *partitions)
        assert set(answer) == partitions
        errors = set(answer.values())
        assert len(errors) == 1
        error = errors.pop()
        assert error in _OK_OR_BUSY | {ErrorCode.producer_fenced}
        if error == ErrorCode.none:
            metadata = self.rig.coordinator.metadata(tid)
            assert metadata is not None and metadata.state == TxnState.ONGOING
            assert partitions <= metadata.partitions

    @rule(tid=st.sampled_from(IDS), commit=st.booleans(), bump=st.booleans())
    def end(self, tid: str, commit: bool, bump: bool) -> None:
        if tid not in self.latest:
            return
        pid, epoch = self.latest[tid]
        before = self.rig.coordinator.metadata(tid)
        answer, effects = self.rig.end(tid, pid, epoch, commit=commit, bump=bump)
        self.pending.extend(effects)
        if effects:
            assert before is not None and answer.error == ErrorCode.none
            # an ongoing transaction ends; with a bump (v5) an abort of none too
            assert before.state == TxnState.ONGOING or (
                bump and not commit and before.state in _COMPLETE
            )
            if bump:
                self._hand_out(tid, answer.producer_id, answer.producer_epoch)

    @rule(tid=st.sampled_from(IDS))
    def stale_producer_is_fenced(self, tid: str) -> None:
        for pid, epoch in self.fenced[tid]:
            answer = self.rig.add(tid, pid, epoch, PARTITIONS[0])
            assert answer[PARTITIONS[0]] in {
                ErrorCode.producer_fenced,
                ErrorCode.invalid_producer_id_mapping,
            }
            assert self.rig.end(tid, pid, epoch, commit=True)[0].error != ErrorCode.none or (
                (pid, epoch) == self.latest.get(tid)
            )

    @rule()
    def markers_arrive(self) -> None:
        self.rig.complete(tuple(self.pending))
        self.pending.clear()

    @rule(ms=st.integers(0, 25_000))
    def time_passes(self, ms: int) -> None:
        self.rig.clock.advance(ms)
        effects = self.rig.coordinator.abort_timed_out(self.rig.clock.wall_ms())
        for markers in effects:
            self.fenced[markers.transactional_id].append(self.latest[markers.transactional_id])
        self.pending.extend(effects)

    @rule(window=st.integers(0, 5))
    def rewrite_idle_ids(self, window: int) -> None:
        before = {tid: self.rig.coordinator.metadata(tid) for tid in IDS}
        self.rig.coordinator.rewrite_stale(window_records=window, records_per_append=10)
        assert {tid: self.rig.coordinator.metadata(tid) for tid in IDS} == before

    @rule()
    def ids_expire(self) -> None:
        self.rig.clock.advance(604_800_000)
        self.rig.coordinator.expire_transactional_ids(self.rig.clock.wall_ms())
        for tid in IDS:
            metadata = self.rig.coordinator.metadata(tid)
            if metadata is None:
                if tid in self.latest:
                    self.fenced[tid].append(self.latest.pop(tid))
            else:
                assert metadata.state in (
                    TxnState.ONGOING,
                    TxnState.PREPARE_COMMIT,
                    TxnState.PREPARE_ABORT,
                )

    @rule()
    def restart(self) -> None:
        before = {tid: self.rig.coordinator.metadata(tid) for tid in IDS}
        self.rig.restart()
        assert {tid: self.rig.coordinator.metadata(tid) for tid in IDS} == before
        self.pending = list(self.rig.coordinator.pending_markers())

    @invariant()
    def preparing_exactly_when_markers_are_pending(self) -> None:
        preparing = {
            tid
            for tid in IDS
            if (m := self.rig.coordinator.metadata(tid)) is not None
            and m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
        }
        assert preparing == {m.transactional_id for m in self.rig.coordinator.pending_markers()}
        assert preparing <= {m.transactional_id for m in self.pending}


CoordinatorMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCoordinator = CoordinatorMachine.TestCase
