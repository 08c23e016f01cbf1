"""The invariants of the shell scenario, checked over the wire at every world tick,
after every recovery and at the end.

Owns the oracle of what the clients were told (the offset commits sent and
confirmed, the transactions' acknowledged records, their confirmed outcomes and
transactional offsets) and the checks, each asked of the broker as a client asks
(OffsetFetch, Fetch read_committed, ListOffsets, DescribeTransactions), so that the
broker's insides may change freely:

- a committed offset was sent by a member; a confirmed commit stands and never goes
  back (unless a commit of the same partition sent before it was confirmed was
  still in flight: the later write of two racing members wins, as in Kafka);
- read_committed shows each transactional record once; a transaction's records all
  or none; none of a transaction confirmed aborted; every acknowledged record of one
  confirmed committed, once a later transaction has begun or the run has drained;
- the last stable offset never moves back, across crashes too; no transaction is open
  in the data log for a producer its coordinator does not know (a hanging one);
- transactional offsets: only ones a transaction sent, never those of a
  transaction confirmed aborted; those of a committed one are there once settled;
- a zombie (the producer's previous epoch) is refused, whatever it sends;
- the consumer group (ConsumerGroupDescribe): no partition assigned to two members;
  no member's epoch above the assignment epoch, nor that above the group epoch (holds
  after any power loss: a group that reloads members without its epoch record fails
  it); the group epoch never goes back, nor a member's epoch while it stays a member;
- a long-polling read_committed Fetch answers within its wait (plus the network's
  delays): the purgatory and the timers wake it; it returns records from the offset
  asked, each value once over the consumer's whole read;
- at the end nothing hangs: the transaction is not left preparing or ongoing, and
  the last stable offset is the log end (no open transaction in the log);
- no broker task fails with nobody to hear it (sim/loop.py `errors`), and the broker
  logs no error (a handler that raised closes its connection: the client would only
  reconnect, so the log is where it shows).

Reads that race with the writes they check take the oracle as it was when the read
was sent: what was confirmed after may not be in the answer yet.

Power losses: under `log.flush.interval.messages=1` a power loss is a crash and every
check holds. Under Kafka's default (the page cache) one may lose confirmed writes, each
log on its own: after a loss that took bytes, what must survive starts again from what
did (`power_lost`: commits confirmed before it and transactions begun before it
promise nothing more, epochs may go back), while every
consistency check still holds; after every restart no data log holds the producer at
an epoch above its coordinator's (`__transaction_state` is fsynced at every write,
server/txn_service.py, "Durability"). A transaction whose records a data log kept
while it lost the marker stays open in the log (no coordinator knows it): at the end
the world aborts it as an operator would (`shoal transactions abort`,
WriteTxnMarkers), and the final checks follow.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.records.readers import read_batch

from shoal.client.errors import ErrorCode
from shoal.client.requests import (
    READ_COMMITTED,
    FetchPosition,
    fetch,
    fetched_offsets,
    list_offsets,
    offset_fetch,
)
from shoal.protocol.record_batch import CONTROL_MASK, iter_headers
from shoal.protocol.schema import request_schema
from shoal.sim.invariants import InvariantViolated, _require
from shoal.sim.shell_connection import (
    CONSUMER_GROUP,
    DATA_TOPIC,
    TOPIC,
    TXN_GROUP,
    TXN_ID,
    VALUES_PER_TXN,
    RequestFailed,
    SimConnection,
)

if TYPE_CHECKING:
    from shoal.sim.shell_world import ShellWorld

__all__ = ["InvariantViolated", "ShellChecker"]

FETCH_BYTES = 1 << 20
CHECKS_TRIES = 40


@dataclass(slots=True)
class _Attempt:
    values: dict[int, int]


class ShellChecker:
    """The invariants of one `ShellWorld` (module docstring)."""

    def __init__(self, world: ShellWorld) -> None:
        self.world = world
        self.counts: Counter[str] = Counter()
        self.topic_id = uuid.UUID(int=0)
        self.attempted: dict[int, set[int]] = {}
        self.confirmed: dict[int, int] = {}
        self.in_flight: list[_Attempt] = []
        self.may_trail: dict[tuple[int, int], set[int]] = {}
        """(partition, confirmed value) -> values sent before it, still in flight when
        it was confirmed (one of them may land after it)."""
        self.acked: dict[int, set[int]] = {}
        self.outcome: dict[int, bool] = {}
        self.txn_sent: dict[tuple[int, int], int] = {}
        self.txn_written: dict[int, dict[int, int]] = {}
        self.lso = -1
        self.trusted_from = 1
        """Transactions from this serial on keep every promise (module docstring)."""
        self.lossy = False
        self._connection: Any = None
        self.group_epoch = -1
        self.member_epochs: dict[str, int] = {}
        self.consumed: set[int] = set()
        """The values the read_committed consumer got."""
        self.fetch_waits: list[int] = []

    # ---- what clients were told

    def commit_sent(self, values: dict[int, int]) -> _Attempt:
        for partition, value in values.items():
            self.attempted.setdefault(partition, set()).add(value)
        attempt = _Attempt(values)
        self.in_flight.append(attempt)
        return attempt

    def commit_ended(self, attempt: _Attempt) -> None:
        self.in_flight.remove(attempt)

    def commit_confirmed(self, values: dict[int, int]) -> None:
        for partition, value in values.items():
            racing = {
                a.values[partition]
                for a in self.in_flight
                if partition in a.values and a.values[partition] < value
            }
            if racing:
                self.may_trail[(partition, value)] = racing
            if value > self.confirmed.get(partition, -1):
                self.confirmed[partition] = value

    def txn_begun(self, serial: int) -> None:
        self.acked.setdefault(serial, set())

    def txn_acked(self, serial: int, values: range) -> None:
        self.acked.setdefault(serial, set()).update(values)

    def txn_offsets_sent(self, serial: int, values: dict[int, int]) -> None:
        for partition, value in values.items():
            self.txn_sent[(partition, value)] = serial

    def txn_offsets_written(self, serial: int, values: dict[int, int]) -> None:
        self.txn_written.setdefault(serial, {}).update(values)

    def txn_ended(self, serial: int, committed: bool) -> None:
        self.outcome[serial] = committed

    def zombie_answered(self, what: str, error: ErrorCode) -> None:
        self.counts["zombies fenced"] += 1
        _require(error != ErrorCode.none, "a zombie's epoch is fenced", (what, error))

    # ---- the wire

    async def call(self, call: Any) -> Any:

        if self._connection is None:
            self._connection = SimConnection(self.world, "sim-checker")
        for _ in range(CHECKS_TRIES):
            try:
                return await self._connection.call(call)
            except RequestFailed:
                import asyncio

                await asyncio.sleep(0.25)
        raise InvariantViolated("the broker answers the checker", call)

    async def describe_topic_id(self, topic: str) -> uuid.UUID:
        from shoal.client.requests import metadata

        response = await self.call(metadata([topic]))
        (found,) = response.topics
        return uuid.UUID(str(found.topic_id))

    # ---- when

    async def check_tick(self) -> None:
        _require(
            not self.world.broker_errors,
            "the broker logs no error (a handler that raised is one)",
            self.world.broker_errors[:3],
        )
        await self._check_no_foreign_transaction()
        await self._check_offsets()
        await self._check_group()
        await self._check_transactions(final=False)

    def before_crash(self) -> None:
        self.counts["crashes"] += 1

    async def after_recovery(self) -> None:
        self.counts["recoveries checked"] += 1
        await self._check_epoch_not_behind()
        await self.check_tick()

    def power_lost(self) -> None:
        """A page-cache power loss took bytes: what was promised before it promises
        nothing more (module docstring). Called at the crash, before the broker is
        back, so that no client's answer from the new broker is judged by the old
        promises."""
        self.counts["lossy power losses"] += 1
        self.lossy = True
        self.confirmed = {}
        self.may_trail.clear()
        self.outcome = {}
        self.trusted_from = self.world.producer.serial + 1
        self.member_epochs.clear()
        self.group_epoch = -1
        self.lso = -1
        self.consumed.clear()
        self.world.fetch_reset = True
        self.world.share.forget_lost()
        self.world.idempotent.forget_lost()

    async def _check_epoch_not_behind(self) -> None:
        """No data log holds the coordinator's producer id at a higher epoch: it would
        refuse the markers, and the transaction would stay preparing for ever. The data
        log is read first: an epoch it holds was the coordinator's (durably) before, and
        the coordinator's epoch only grows, so a client acting between the two reads
        cannot make the check fail (the other order could: a fence in between)."""
        from shoal.client.requests import describe_producers

        held = await self._producers(describe_producers, DATA_TOPIC)
        response = await self.call(
            request_schema(65, 0).make("DescribeTransactionsRequest", transactional_ids=(TXN_ID,))
        )
        (state,) = response.transaction_states
        if state.error_code != ErrorCode.none or state.producer_id < 0:
            return
        self.counts["producer epochs checked after a restart"] += 1
        for entry in held:
            if entry.producer_id == state.producer_id:
                _require(
                    entry.producer_epoch <= state.producer_epoch,
                    "no data log is ahead of the coordinator's producer epoch",
                    (entry, state.producer_epoch, state.transaction_state),
                )

    async def _check_no_foreign_transaction(self) -> None:
        """No transaction is open in the data log for a producer its coordinator does
        not know (the LSO would stay there: a hanging transaction), unless a lossy
        power loss left one for the operator (`abort_hanging`)."""
        from shoal.client.requests import describe_producers

        if self.lossy:
            return
        response = await self.call(
            request_schema(65, 0).make("DescribeTransactionsRequest", transactional_ids=(TXN_ID,))
        )
        (state,) = response.transaction_states
        known = state.producer_id if state.error_code == ErrorCode.none else None
        for entry in await self._producers(describe_producers, DATA_TOPIC):
            if entry.current_txn_start_offset >= 0:
                _require(
                    entry.producer_id == known,
                    "no transaction open in the log that its coordinator does not know",
                    (entry, known),
                )

    async def _producers(self, describe: Any, topic: str) -> list[Any]:
        response = await self.call(describe([(topic, 0)]))
        (part,) = response.topics[0].partitions
        _require(part.error_code == 0, "DescribeProducers answers", part)
        return list(part.active_producers)

    async def abort_hanging(self) -> None:
        """What `shoal transactions find-hanging` / `abort` do: a transaction open in
        the data log that its coordinator does not hold (a lossy power loss kept its
        records and lost its marker) is ended with an ABORT marker."""
        from shoal.client.requests import describe_producers, write_txn_markers

        if not self.lossy:
            return
        state = await self._txn_state()
        if state in ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            return
        for entry in await self._producers(describe_producers, DATA_TOPIC):
            if entry.current_txn_start_offset < 0:
                continue
            self.world.note(
                f"operator aborts the hanging transaction of {entry.producer_id} at "
                f"{entry.current_txn_start_offset}"
            )
            await self.call(
                write_txn_markers(
                    [(DATA_TOPIC, 0)],
                    producer_id=entry.producer_id,
                    producer_epoch=entry.producer_epoch,
                    coordinator_epoch=max(0, entry.coordinator_epoch),
                    commit=False,
                )
            )

    async def check_final(self) -> None:
        import asyncio

        world = self.world
        # The transaction timeout passes: the abort timer ends what a client left open.
        for _ in range(CHECKS_TRIES):
            state = await self._txn_state()
            if state not in ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
                break
            await asyncio.sleep(5)
        state = await self._txn_state()
        _require(
            state not in ("PrepareCommit", "PrepareAbort", "PrepareEpochFence", "Ongoing"),
            "no transaction hangs (its coordinator finishes it)",
            state,
        )
        await self.abort_hanging()
        await self._check_offsets()
        end, lso = await self._ends()
        _require(end == lso, "no transaction is left open in the log", (end, lso, state))
        await self._check_transactions(final=True)
        await self.world.share.check_final(self.world)
        await self.world.idempotent.check_final()
        self.counts["final checks"] += 1
        if self._connection is not None:
            await self._connection.close()
        _require(not world.loop.errors, "no broker task fails unobserved", world.loop.errors)

    # ---- the checks

    async def _fetched(self, group: str) -> dict[int, int]:

        answer = fetched_offsets(await self.call(offset_fetch(group, None)))
        _require(answer.error_code == 0, "OffsetFetch answers", (group, answer))
        return {p: o for (t, p), o in answer.offsets.items() if t == TOPIC and o >= 0}

    async def _check_offsets(self) -> None:

        confirmed = dict(self.confirmed)
        fetched = await self._fetched(CONSUMER_GROUP)
        for partition, value in fetched.items():
            self.counts["committed offsets"] += 1
            _require(
                value in self.attempted.get(partition, set()),
                "a committed offset was sent by a member",
                (partition, value),
            )
        for partition, value in confirmed.items():
            got = fetched.get(partition, -1)
            trailing = self.may_trail.get((partition, value), set())
            _require(
                got >= value or got in trailing,
                "a confirmed offset commit stands and never goes back",
                (partition, got, value),
            )
        txn_fetched = await self._fetched(TXN_GROUP)
        for partition, value in txn_fetched.items():
            self.counts["transactional offsets"] += 1
            serial = self.txn_sent.get((partition, value))
            _require(serial is not None, "a transactional offset was sent", (partition, value))
            _require(
                self.outcome.get(serial or 0) is not False or (serial or 0) < self.trusted_from,
                "an aborted transaction's offsets are never committed",
                (serial, partition, value),
            )

    async def _ends(self) -> tuple[int, int]:

        ends = []
        for isolation in (0, READ_COMMITTED):
            response = await self.call(
                list_offsets({(DATA_TOPIC, 0): -1}, isolation_level=isolation)
            )
            (part,) = response.topics[0].partitions
            _require(part.error_code == 0, "ListOffsets answers", part)
            ends.append(int(part.offset))
        return ends[0], ends[1]

    async def _txn_state(self) -> str:

        response = await self.call(
            request_schema(65, 0).make("DescribeTransactionsRequest", transactional_ids=(TXN_ID,))
        )
        (state,) = response.transaction_states
        if state.error_code != ErrorCode.none:
            return ErrorCode(state.error_code).name
        return str(state.transaction_state)

    async def _read_committed(self) -> tuple[list[int], int]:
        """The values a read_committed consumer gets from the start, and the LSO."""

        values: list[int] = []
        offset = 0
        while True:
            response = await self.call(
                fetch(
                    {(DATA_TOPIC, 0): FetchPosition(offset, FETCH_BYTES)},
                    max_wait_ms=0,
                    isolation_level=READ_COMMITTED,
                )
            )
            got, after, lso = _decoded(response, offset)
            values.extend(got)
            if after == offset:
                return values, lso
            offset = after

    async def fetch_from(
        self, connection: Any, offset: int, *, max_wait_ms: int
    ) -> tuple[list[int], int] | None:
        """The read_committed consumer's Fetch from `offset`: its values and the next
        offset (RequestFailed if unanswered); None when the offset is out of range
        after a lossy power loss (the log lost what the consumer had read)."""

        response = await connection.call(
            fetch(
                {(DATA_TOPIC, 0): FetchPosition(offset, FETCH_BYTES)},
                max_wait_ms=max_wait_ms,
                isolation_level=READ_COMMITTED,
            )
        )
        (part,) = response.responses[0].partitions
        if self.lossy and part.error_code == ErrorCode.offset_out_of_range:
            return None
        values, after, _lso = _decoded(response, offset)
        return values, after

    def fetched(
        self, values: list[int], offset: int, after: int, wait_ms: int, sent_ms: int
    ) -> None:
        """The consumer's answer to a Fetch from `offset` sent at `sent_ms`."""
        from shoal.sim.pipes import SLOW_NS

        took_ms = self.world.clock.monotonic_ms() - sent_ms
        self.counts["long polls checked"] += 1
        slack_ms = 4 * SLOW_NS[1] // 1_000_000 + 1_000
        _require(
            took_ms <= wait_ms + slack_ms,
            "a Fetch answers within its wait",
            (offset, wait_ms, took_ms),
        )
        _require(after >= offset, "a Fetch never goes back", (offset, after))
        for value in values:
            _require(value not in self.consumed, "a consumer gets a record once", value)
            self.consumed.add(value)

    async def _check_group(self) -> None:

        response = await self.call(
            request_schema(69, 0).make(
                "ConsumerGroupDescribeRequest",
                group_ids=(CONSUMER_GROUP,),
                include_authorized_operations=False,
            )
        )
        (group,) = response.groups
        if group.error_code != ErrorCode.none:
            return
        self.counts["group checks"] += 1
        _require(
            group.group_epoch >= self.group_epoch,
            "the group epoch never goes back",
            (group.group_epoch, self.group_epoch),
        )
        self.group_epoch = group.group_epoch
        owner: dict[tuple[object, int], str] = {}
        members = {}
        for member in group.members:
            members[member.member_id] = member.member_epoch
            _require(
                member.member_epoch <= group.assignment_epoch <= group.group_epoch,
                "member epoch <= assignment epoch <= group epoch (KIP-848)",
                (member.member_id, member.member_epoch, group.assignment_epoch, group.group_epoch),
            )
            before = self.member_epochs.get(member.member_id, -1)
            _require(
                member.member_epoch >= before,
                "a member epoch never goes back",
                (member.member_id, member.member_epoch, before),
            )
            for tp in member.assignment.topic_partitions:
                for partition in tp.partitions:
                    other = owner.setdefault((tp.topic_id, partition), member.member_id)
                    _require(
                        other == member.member_id,
                        "no partition owned by two members",
                        (partition, other, member.member_id, group.group_epoch),
                    )
        self.member_epochs = members

    async def _check_transactions(self, *, final: bool) -> None:

        outcome = dict(self.outcome)
        acked = {serial: set(values) for serial, values in self.acked.items()}
        current = self.world.producer.serial
        visible, lso = await self._read_committed()
        self.counts["read_committed scans"] += 1
        _require(lso >= self.lso, "the LSO never moves back", (lso, self.lso))
        self.lso = lso
        seen: set[int] = set()
        by_serial: dict[int, set[int]] = {}
        for value in visible:
            _require(value not in seen, "a transactional record is visible once", value)
            seen.add(value)
            by_serial.setdefault(value // VALUES_PER_TXN, set()).add(value)
        for serial, shown in by_serial.items():
            if serial < self.trusted_from:
                continue  # begun before a lossy power loss: it promises nothing
            _require(
                outcome.get(serial) is not False,
                "an aborted transaction is never visible",
                (serial, sorted(shown)),
            )
            _require(
                acked.get(serial, set()) <= shown,
                "a transaction is visible whole",
                (serial, sorted(acked.get(serial, set()) - shown)),
            )
        for serial, committed in outcome.items():
            # After a lossy loss a hanging transaction may hold the LSO until the
            # operator's abort at the end.
            settled = final or (serial < current and not self.lossy)
            if committed and settled and serial >= self.trusted_from:
                self.counts["committed transactions checked"] += 1
                _require(
                    acked.get(serial, set()) <= by_serial.get(serial, set()),
                    "a committed transaction is visible",
                    (serial, sorted(acked.get(serial, set()) - by_serial.get(serial, set()))),
                )


def _decoded(response: Any, offset: int) -> tuple[list[int], int, int]:
    """A read_committed Fetch answer of one partition: the values it shows (control
    batches and aborted transactions' batches dropped, as a consumer drops them), the
    next offset to fetch, and the last stable offset."""
    (part,) = response.responses[0].partitions
    _require(part.error_code == 0, "Fetch answers", ErrorCode(part.error_code))
    lso = int(part.last_stable_offset)
    records = bytes(part.records or b"")
    headers = iter_headers(records)
    aborted = [(int(a.producer_id), int(a.first_offset)) for a in (part.aborted_transactions or ())]
    values: list[int] = []
    for header in headers:
        _require(
            header.base_offset + header.last_offset_delta >= offset,
            "records from the offset asked",
            (offset, header.base_offset),
        )
        _require(
            header.base_offset < lso, "read_committed stops at the LSO", (header.base_offset, lso)
        )
        offset = header.base_offset + header.last_offset_delta + 1
        if header.attributes & CONTROL_MASK:
            continue
        if _aborted(header.producer_id, header.base_offset, aborted, records, headers):
            continue
        batch, _ = read_batch(records, header.position)
        values.extend(int(r.value or b"-1") for r in batch.records)
    return values, offset, lso


def _aborted(
    producer_id: int,
    base_offset: int,
    aborted: list[tuple[int, int]],
    records: bytes,
    headers: list[Any],
) -> bool:
    """Whether the batch at `base_offset` of `producer_id` is in an aborted
    transaction: an aborted entry of that producer starts at or before it and no
    control batch of that producer ends it in between (as a consumer decides)."""
    for pid, first in aborted:
        if pid != producer_id or first > base_offset:
            continue
        ended = any(
            h.producer_id == producer_id
            and h.attributes & CONTROL_MASK
            and first <= h.base_offset < base_offset
            for h in headers
        )
        if not ended:
            return True
    return False
