"""The invariants a simulation run checks, after every step and every recovery.

Owns: the oracle of what clients were confirmed (acked produce sequences, ACCEPTed or
REJECTed offsets whose answer arrived) and the checks against the broker:

- acquisition: every acquired range has a delivery count within
  `group.share.delivery.count.limit`, lies below the log end, and holds no offset
  whose ACCEPT or REJECT was confirmed (a confirmed record is never delivered again);
- persisted delivery counts are within the limit too;
- durability: every confirmed ACCEPT / REJECT is terminal in the share-partition and
  in the share coordinator's state (or below its start offset, or below the log start
  offset: the share-partition follows a log start move in memory and persists it with
  its next write, as Kafka does);
- the SPSO never moves back within a process lifetime, nor below the durable start
  offset of the last completed step across a crash;
- replay equals live: the coordinator rebuilt from its state log equals the live one
  (after every step), and after a crash the recovered state equals the state after
  one of the crashed step's writes (or before them: a crash loses at most the last,
  torn, write);
- the log: every produced-and-acked sequence is in the data log exactly once, at the
  offset its answer gave (unless DeleteRecords removed it), and no sequence is there
  twice;
- the share-partition's own `check_invariants`.

A violation raises `InvariantViolated`, naming the invariant; `counts` says how many
checks of each kind ran.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from shoal.log.partition import PartitionLog
from shoal.protocol.share import AcknowledgeType
from shoal.share.acknowledge import AckBatch
from shoal.share.acquire import AcquiredRecords
from shoal.share.partition import RecordView
from shoal.share.persister import DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED
from shoal.share.states import RecordState
from shoal.share_coordinator.shard import KeyState
from shoal.share_coordinator.state import SharePartitionKey
from shoal.sim.broker import KEY, PRODUCER_ID

if TYPE_CHECKING:
    from shoal.sim.world import World

TERMINAL_PERSISTED = {DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED}
CONFIRMED_TYPES = {int(AcknowledgeType.ACCEPT), int(AcknowledgeType.REJECT)}
READ_BYTES = 64 * 1024

States = dict[SharePartitionKey, KeyState]


class InvariantViolated(AssertionError):
    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant


def _require(condition: bool, invariant: str, detail: object) -> None:
    if not condition:
        raise InvariantViolated(invariant, str(detail))


class Checker:
    """The invariants of one `World` (module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.counts: Counter[str] = Counter()
        self.confirmed_terminal: dict[int, str] = {}
        """Offset -> the confirmed acknowledgement that made it terminal."""
        self.spso = -1
        """The live SPSO seen last in this process lifetime."""
        self.durable_spso = -1
        """The durable start offset at the end of the last completed step."""
        self.step_states: States = {}
        """The coordinator's states at the end of the last completed step."""
        self.crash_states: list[States] = []
        self.lossy = False
        """A page-cache power loss lost bytes: the durable start offset may then stay
        above the log end (the coordinator never moves it back) while the live
        share-partition starts at the recovered log end."""
        self._rebuilt: tuple[int, States] | None = None
        """(state log end offset, the states replayed from the log up to it)."""

    # ---- hooks the world calls

    def confirmed(self, batches: Sequence[AckBatch], *, at_or_above: int = 0) -> None:
        """A successful answer to `batches` reached the client; offsets below
        `at_or_above` (the SPSO when the ack was made) were acked silently, with no
        promise."""
        for batch in batches:
            if batch.types[0] in CONFIRMED_TYPES:
                name = AcknowledgeType(batch.types[0]).name
                for offset in range(max(at_or_above, batch.first_offset), batch.last_offset + 1):
                    self.confirmed_terminal[offset] = name

    def check_acquired(self, acquired: Sequence[AcquiredRecords]) -> None:
        limit = self.world.share_config.delivery_count_limit
        log_end = self.world.broker.data_log.log_end_offset
        for records in acquired:
            self.counts["acquired ranges"] += 1
            _require(
                1 <= records.delivery_count <= limit,
                "delivery count within the limit",
                (records, limit),
            )
            _require(records.last_offset < log_end, "acquired below the log end", records)
            for offset in range(records.first_offset, records.last_offset + 1):
                _require(
                    offset not in self.confirmed_terminal,
                    "a confirmed record is never delivered again",
                    (offset, self.confirmed_terminal.get(offset), records),
                )

    def check_step(self) -> None:
        broker = self.world.broker
        live = dict(broker.coordinator.shard(0).states)
        self._check_replay(live)
        self._check_share_partition(live)
        self._check_log(broker.data_log)
        self.step_states = live
        state = live.get(KEY)
        self.durable_spso = -1 if state is None else state.start_offset

    def before_crash(self) -> None:
        """The states after each write of the crashed step: a crash loses at most the
        last write (torn), so the recovered state must be one of them."""
        broker = self.world.broker
        self.crash_states = [
            self.step_states,
            *broker.states_after_writes,
            dict(broker.coordinator.shard(0).states),
        ]

    def after_recovery(self, *, lossy: bool = False) -> None:
        """`lossy`: a power loss under the page cache lost bytes, so confirmed
        acknowledgements and produced records may be gone (that flush policy's
        promise); what remains must be consistent."""
        broker = self.world.broker
        recovered = dict(broker.coordinator.shard(0).states)
        self.counts["recoveries checked"] += 1
        if lossy:
            self.counts["lossy power losses"] += 1
            self.lossy = True
            self.confirmed_terminal.clear()
            self.world.producer.acked.clear()
            self.durable_spso = -1
            self.spso = -1
            self._rebuilt = None
            self.check_step()
            return
        _require(
            recovered in self.crash_states,
            "recovery equals a prefix of the writes",
            (recovered, self.crash_states[-1]),
        )
        state = recovered.get(KEY)
        start = -1 if state is None else state.start_offset
        _require(
            start >= self.durable_spso,
            "the durable SPSO never moves back across a crash",
            (start, self.durable_spso),
        )
        self.spso = -1
        self._rebuilt = None
        self.check_step()

    def check_final(self) -> None:
        broker = self.world.broker
        sp = broker.manager.get(KEY)
        _require(sp is not None, "loaded at the end", KEY)
        assert sp is not None
        _require(
            sp.start_offset >= broker.data_log.log_end_offset,
            "the drain reached the log end",
            (sp.start_offset, broker.data_log.log_end_offset),
        )
        producer = self.world.producer
        _require(producer.in_flight is None, "every produce answered", producer.in_flight)
        self.counts["final checks"] += 1

    # ---- the checks

    def _check_replay(self, live: Mapping[SharePartitionKey, KeyState]) -> None:
        """The live states against the state log replayed into a fresh coordinator
        (re-read only when the log grew: the same log replays to the same states)."""
        broker = self.world.broker
        end = broker.state_log.log_end_offset
        if self._rebuilt is None or self._rebuilt[0] != end:
            self._rebuilt = (end, dict(broker.load_coordinator().shard(0).states))
        rebuilt = self._rebuilt[1]
        self.counts["replay equals live"] += 1
        _require(rebuilt == live, "replay equals live", (rebuilt, live))

    def _check_share_partition(self, live: Mapping[SharePartitionKey, KeyState]) -> None:
        broker = self.world.broker
        durable = live.get(KEY)
        sp = broker.manager.get(KEY)
        if sp is not None:
            sp.check_invariants()
            self.counts["share-partition invariants"] += 1
            _require(
                sp.start_offset <= broker.data_log.log_end_offset,
                "the SPSO is within the recoverable log",
                (sp.start_offset, broker.data_log.log_end_offset),
            )
            _require(sp.start_offset >= self.spso, "the SPSO never moves back", (sp, self.spso))
            self.spso = sp.start_offset
            if durable is not None and not self.lossy:
                _require(
                    sp.start_offset >= durable.start_offset,
                    "the live SPSO is at or past the durable one",
                    (sp.start_offset, durable.start_offset),
                )
        if durable is not None:
            limit = self.world.share_config.delivery_count_limit
            for batch in durable.state_batches:
                _require(
                    batch.delivery_count <= limit,
                    "a persisted delivery count within the limit",
                    (batch, limit),
                )
        live_states = {} if sp is None else _live_states(sp.in_flight(), sp.start_offset)
        log_start = broker.data_log.log_start_offset
        for offset in sorted(self.confirmed_terminal):
            if offset < log_start:
                continue  # DeleteRecords removed it: nothing left to deliver
            self.counts["confirmed records durable"] += 1
            if durable is not None and offset >= durable.start_offset:
                _require(
                    _persisted_terminal(durable, offset),
                    "a confirmed acknowledgement is durable",
                    (offset, self.confirmed_terminal[offset], durable),
                )
            if sp is not None and offset >= sp.start_offset:
                _require(
                    live_states.get(offset, False),
                    "a confirmed acknowledgement stands in memory",
                    (offset, self.confirmed_terminal[offset]),
                )

    def _check_log(self, log: PartitionLog) -> None:
        seen: dict[tuple[int, int], int] = {}
        """(producer id, sequence) -> offset, as found in the log."""
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            read = log.read(offset, max_bytes=READ_BYTES)
            _require(bool(read.headers), "the log reads to its end", offset)
            for header in read.headers:
                _require(header.producer_id >= PRODUCER_ID, "only our producer", header)
                for index in range(header.records_count):
                    sequence = (header.producer_id, header.base_sequence + index)
                    _require(sequence not in seen, "a produced record is in the log once", header)
                    seen[sequence] = header.base_offset + index
            offset = read.headers[-1].next_offset
        start = log.log_start_offset
        wrong = [
            (sequence, offset, seen.get(sequence))
            for sequence, offset in sorted(self.world.producer.acked.items())
            if offset >= start and seen.get(sequence) != offset
        ]
        self.counts["log scans"] += 1
        _require(not wrong, "every acked record is in the log, at its offset", wrong[:10])


def _persisted_terminal(state: KeyState, offset: int) -> bool:
    for batch in state.state_batches:
        if batch.first_offset <= offset <= batch.last_offset:
            return batch.delivery_state in TERMINAL_PERSISTED
    return False


def _live_states(views: Sequence[RecordView], start: int) -> dict[int, bool]:
    found: dict[int, bool] = {}
    for view in views:
        terminal = view.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        for offset in range(max(view.first_offset, start), view.last_offset + 1):
            found[offset] = terminal
    return found
