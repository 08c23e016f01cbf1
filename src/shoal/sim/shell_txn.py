"""The transactional clients of the shell scenario: a transactional producer and the
zombie that holds its previous epoch, over the wire (`ShellWorld`'s actors).

The producer: InitProducerId, AddPartitionsToTxn, transactional Produce into
`sim-data-0`, AddOffsetsToTxn + TxnOffsetCommit to a group of its own, EndTxn commit
or abort (retried while the coordinator is busy); after a failure mid-transaction it
aborts and bumps its epoch with InitProducerId, as Kafka's producer recovers an
abortable error; sometimes it stalls past its transaction timeout. What it was told
goes to the checker (shoal.sim.shell_invariants). The zombie sends EndTxn or Produce
at the previous epoch now and then; each must be refused.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoal.client.errors import ErrorCode
from shoal.client.requests import produce, txn_offset_commit
from shoal.protocol.schema import request_schema
from shoal.sim.broker import produced_batch
from shoal.sim.shell_connection import (
    DATA_TOPIC,
    STALL_MS,
    TOPIC,
    TOPIC_PARTITIONS,
    TXN_GROUP,
    TXN_ID,
    TXN_TIMEOUT_MS,
    VALUES_PER_TXN,
    RequestFailed,
    SimConnection,
)

if TYPE_CHECKING:
    from shoal.sim.shell_world import ShellWorld

FENCED_PRODUCER = {
    ErrorCode.producer_fenced,
    ErrorCode.invalid_producer_epoch,
    ErrorCode.invalid_producer_id_mapping,
}
BUSY = {
    ErrorCode.concurrent_transactions,
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
}
"""Answers after which the same request is sent again a little later."""


@dataclass(slots=True)
class Producer:
    producer_id: int = -1
    epoch: int = -1
    serial: int = 0
    sequence: int = 0
    """The next batch's base sequence (per epoch, across transactions)."""
    records: int = 0
    """Records the current transaction has sent (its values are serial * VALUES_PER_TXN
    + 0, 1, ...)."""


class TxnClients:
    """The transactional producer and its zombie, actors of `world`."""

    def __init__(self, world: ShellWorld) -> None:
        self.world = world

    async def run_producer(self) -> None:
        connection = SimConnection(self.world, "sim-producer")
        producer = self.world.producer
        while True:
            if producer.producer_id < 0 and not await self._init(connection):
                await asyncio.sleep(self.world.rng.randint(100, 1_000) / 1000)
                continue
            if not self.world.running:
                break
            try:
                await self._transaction(connection)
            except RequestFailed as exc:
                self.world.note(f"producer: {exc}: aborts and bumps its epoch")
                await self._abort_after_failure(connection)
            except _Fenced as exc:
                self.world.note(f"producer fenced ({exc}): starts again with InitProducerId")
                producer.producer_id = -1
            await asyncio.sleep(self.world.rng.randint(10, 2_000) / 1000)
        await connection.close()

    async def _init(self, connection: SimConnection) -> bool:
        producer = self.world.producer
        request = request_schema(22, 4).make(
            "InitProducerIdRequest",
            transactional_id=TXN_ID,
            transaction_timeout=datetime.timedelta(milliseconds=TXN_TIMEOUT_MS),
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
        )
        try:
            response = await connection.call(request)
        except RequestFailed as exc:
            self.world.note(f"init producer id: {exc}")
            return False
        error = ErrorCode(response.error_code)
        got = f"{response.producer_id}/{response.producer_epoch}"
        self.world.note(f"init producer id: {error.name} {got}")
        if error in (ErrorCode.invalid_producer_epoch, ErrorCode.producer_fenced):
            producer.producer_id = producer.epoch = -1  # start afresh
            return False
        if error != ErrorCode.none:
            return False
        if producer.producer_id >= 0:
            self.world.zombie = (producer.producer_id, producer.epoch)
        producer.producer_id, producer.epoch = response.producer_id, response.producer_epoch
        producer.sequence = 0
        return True

    async def _abort_after_failure(self, connection: SimConnection) -> None:
        producer = self.world.producer
        try:
            error = await self._end_txn(connection, commit=False)
            self.world.note(f"abort after failure: {error.name}")
        except RequestFailed as exc:
            self.world.note(f"abort after failure: {exc}")
        # The epoch bump: sequences start again, and an open transaction is aborted.
        while not await self._init(connection):
            if producer.producer_id < 0 and not self.world.running:
                return
            await asyncio.sleep(self.world.rng.randint(100, 1_000) / 1000)

    async def _transaction(self, connection: SimConnection) -> None:
        producer = self.world.producer
        producer.serial += 1
        serial = producer.serial
        producer.records = 0
        self.world.checker.txn_begun(serial)
        await self._add_partitions(connection, [(DATA_TOPIC, 0)])
        for _ in range(self.world.rng.randint(1, 4)):
            await self._produce(connection, serial)
        if self.world.faults.fires("client_stall"):
            pause_s = self.world.rng.randint(*STALL_MS) / 1000
            self.world.note(f"producer stalls {pause_s:.0f} s inside transaction {serial}")
            await asyncio.sleep(pause_s)
        if self.world.rng.random() < 0.5:
            await self._txn_offsets(connection, serial)
        commit = self.world.rng.random() < 0.75 or not self.world.running
        while True:
            error = await self._end_txn(connection, commit=commit)
            self.world.note(f"end txn {serial} ({'commit' if commit else 'abort'}): {error.name}")
            if error == ErrorCode.none:
                self.world.checker.txn_ended(serial, commit)
                return
            if error in (
                ErrorCode.concurrent_transactions,
                ErrorCode.coordinator_load_in_progress,
                ErrorCode.not_coordinator,
                ErrorCode.coordinator_not_available,
            ):
                await asyncio.sleep(0.1)
                continue
            raise _Fenced(error.name)

    async def _add_partitions(
        self, connection: SimConnection, partitions: list[tuple[str, int]]
    ) -> None:
        producer = self.world.producer
        schema = request_schema(24, 3)
        request = schema.make(
            "AddPartitionsToTxnRequest",
            v3_and_below_transactional_id=TXN_ID,
            v3_and_below_producer_id=producer.producer_id,
            v3_and_below_producer_epoch=producer.epoch,
            v3_and_below_topics=tuple(
                schema.make("AddPartitionsToTxnTopic", name=t, partitions=(p,))
                for t, p in partitions
            ),
        )
        while True:
            response = await connection.call(request)
            errors = {
                ErrorCode(p.partition_error_code)
                for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition
            }
            if errors == {ErrorCode.none}:
                return
            if errors & {
                ErrorCode.concurrent_transactions,
                ErrorCode.coordinator_load_in_progress,
                ErrorCode.not_coordinator,
                ErrorCode.coordinator_not_available,
            }:
                await asyncio.sleep(0.05)
                continue
            raise _Fenced(f"add partitions: {sorted(e.name for e in errors)}")

    async def _produce(self, connection: SimConnection, serial: int) -> None:
        producer = self.world.producer
        count = self.world.rng.randint(1, 4)
        first = serial * VALUES_PER_TXN + producer.records
        producer.records += count
        batch = produced_batch(
            base_sequence=producer.sequence,
            count=count,
            first_value=first,
            producer_epoch=producer.epoch,
            producer_id=producer.producer_id,
            transactional=True,
        )
        producer.sequence += count
        response = await connection.call(produce({(DATA_TOPIC, 0): batch}, transactional_id=TXN_ID))
        (part,) = response.responses[0].partition_responses
        error = ErrorCode(part.error_code)
        self.world.note(f"produce txn {serial} values {first}+{count}: {error.name}")
        if error != ErrorCode.none:
            raise _Fenced(f"produce: {error.name}")
        self.world.checker.txn_acked(serial, range(first, first + count))

    async def _txn_offsets(self, connection: SimConnection, serial: int) -> None:
        producer = self.world.producer
        schema = request_schema(25, 3)
        while True:
            response = await connection.call(
                schema.make(
                    "AddOffsetsToTxnRequest",
                    transactional_id=TXN_ID,
                    producer_id=producer.producer_id,
                    producer_epoch=producer.epoch,
                    group_id=TXN_GROUP,
                )
            )
            error = ErrorCode(response.error_code)
            if error == ErrorCode.none:
                break
            if error == ErrorCode.concurrent_transactions:
                await asyncio.sleep(0.05)
                continue
            raise _Fenced(f"add offsets: {error.name}")
        values = {}
        rng = self.world.rng
        for partition in rng.sample(range(TOPIC_PARTITIONS), rng.randint(1, 2)):
            values[partition] = self.world.next_value
            self.world.next_value += 1
        self.world.checker.txn_offsets_sent(serial, values)
        response = await connection.call(
            txn_offset_commit(
                transactional_id=TXN_ID,
                group_id=TXN_GROUP,
                producer_id=producer.producer_id,
                producer_epoch=producer.epoch,
                offsets={(TOPIC, p): v for p, v in values.items()},
            )
        )
        errors = {
            p.partition_index: ErrorCode(p.error_code)
            for t in response.topics
            for p in t.partitions
        }
        self.world.note(f"txn offsets {serial} {values}: {sorted(e.name for e in errors.values())}")
        if any(e != ErrorCode.none for e in errors.values()):
            raise _Fenced("txn offset commit refused")
        self.world.checker.txn_offsets_written(serial, values)

    async def _end_txn(self, connection: SimConnection, *, commit: bool) -> ErrorCode:
        producer = self.world.producer
        response = await connection.call(
            request_schema(26, 4).make(
                "EndTxnRequest",
                transactional_id=TXN_ID,
                producer_id=producer.producer_id,
                producer_epoch=producer.epoch,
                committed=commit,
            )
        )
        return ErrorCode(response.error_code)

    async def run_zombie(self) -> None:
        """The producer's previous epoch: whatever it sends is refused."""
        connection = SimConnection(self.world, "sim-zombie")
        while self.world.running:
            await asyncio.sleep(self.world.rng.randint(1_000, 8_000) / 1000)
            if self.world.zombie is None:
                continue
            producer_id, epoch = self.world.zombie
            try:
                if self.world.rng.random() < 0.5:
                    response = await connection.call(
                        request_schema(26, 4).make(
                            "EndTxnRequest",
                            transactional_id=TXN_ID,
                            producer_id=producer_id,
                            producer_epoch=epoch,
                            committed=True,
                        )
                    )
                    error = ErrorCode(response.error_code)
                    what = "EndTxn"
                else:
                    batch = produced_batch(
                        base_sequence=0,
                        count=1,
                        first_value=0,
                        producer_epoch=epoch,
                        producer_id=producer_id,
                        transactional=True,
                    )
                    response = await connection.call(
                        produce({(DATA_TOPIC, 0): batch}, transactional_id=TXN_ID)
                    )
                    (part,) = response.responses[0].partition_responses
                    error = ErrorCode(part.error_code)
                    what = "Produce"
            except RequestFailed:
                continue
            self.world.note(f"zombie {producer_id}/{epoch} {what}: {error.name}")
            self.world.checker.zombie_answered(what, error)
        await connection.close()


class _Fenced(Exception):
    """The producer cannot go on with this transaction (the reason)."""
