"""The idempotent producer of the shell scenario: retries across lost connections and
restarts, and every acknowledged record in the log exactly once.

The producer (a task of `ShellWorld`) takes a producer id with InitProducerId (no
transactional id) and sends batches of records with values unique in the run to
`sim-idem-0`, each batch with its sequence. A batch whose answer does not come (the
connection broke, the broker died) is sent again, the same bytes, until it is
answered, as Kafka's idempotent producer does: the broker must answer a retry of a
batch it already wrote as a duplicate (with the original offsets) and write nothing,
and must not acknowledge it before the original's fsync under
`log.flush.interval.messages=1` (server/disk_io.py `flushed`). A producer id the broker
no longer knows, or a sequence it refuses, makes the producer take a new producer id
and resend the batch (a record then may be written twice: Kafka's idempotence holds
per producer id, so such batches are noted and not counted as duplicates).

Checked at the end (read_uncommitted Fetch from the start): every acknowledged value
is in the log (unless a lossy power loss came after), and none is there twice unless
its batch went out under two producer ids.
"""

from __future__ import annotations

import asyncio
import datetime
from collections import Counter
from typing import TYPE_CHECKING

from kio.records.readers import read_batch

from shoal.client.errors import ErrorCode
from shoal.client.requests import FetchPosition, create_topic, fetch, produce
from shoal.protocol.record_batch import CONTROL_MASK, encode_batch, iter_headers
from shoal.protocol.schema import request_schema
from shoal.sim.invariants import _require
from shoal.sim.shell_connection import RequestFailed, SimConnection

if TYPE_CHECKING:
    from shoal.sim.shell_world import ShellWorld

IDEMPOTENT_TOPIC = "sim-idem"
FIRST_VALUE = 2_000_000_000
FETCH_BYTES = 1 << 20
RESEND = {
    ErrorCode.unknown_producer_id,
    ErrorCode.out_of_order_sequence_number,
    ErrorCode.invalid_producer_epoch,
}
"""Answers after which the producer takes a new producer id and sends the batch again."""


class IdempotentOracle:
    """What the idempotent producer was told (module docstring)."""

    def __init__(self, world: ShellWorld) -> None:
        self.world = world
        self.counts: Counter[str] = world.checker.counts
        self.acked: set[int] = set()
        self.reissued: set[int] = set()
        """Values whose batch went out under more than one producer id."""
        self.trusted: set[int] = set()
        """Acknowledged values no lossy power loss came after."""

    def forget_lost(self) -> None:
        self.trusted.clear()

    async def check_final(self) -> None:
        seen: Counter[int] = Counter()
        offset = 0
        while True:
            response = await self.world.checker.call(
                fetch({(IDEMPOTENT_TOPIC, 0): FetchPosition(offset, FETCH_BYTES)}, max_wait_ms=0)
            )
            (part,) = response.responses[0].partitions
            _require(part.error_code == 0, "Fetch answers", ErrorCode(part.error_code))
            records = bytes(part.records or b"")
            headers = iter_headers(records)
            if not headers:
                break
            for header in headers:
                offset = header.base_offset + header.last_offset_delta + 1
                if header.attributes & CONTROL_MASK:
                    continue
                batch, _ = read_batch(records, header.position)
                seen.update(int(r.value or b"-1") for r in batch.records)
        twice = sorted(v for v, n in seen.items() if n > 1 and v not in self.reissued)
        _require(not twice, "an idempotent producer's record is written once", twice[:10])
        missing = sorted(self.trusted - set(seen))
        _require(not missing, "an acknowledged record is in the log", missing[:10])
        self.counts["idempotent records checked"] += len(seen)


async def producer(world: ShellWorld, oracle: IdempotentOracle) -> None:

    connection = SimConnection(world, "sim-idempotent")
    await world.retry(lambda: connection.call(create_topic(IDEMPOTENT_TOPIC, partitions=1)))
    producer_id = epoch = -1
    sequence = 0
    next_value = FIRST_VALUE
    while True:
        await asyncio.sleep(world.rng.randint(50, 1_500) / 1000)
        if not world.running:
            break
        count = world.rng.randint(1, 4)
        values = list(range(next_value, next_value + count))
        next_value += count
        ids = 0
        while True:  # until this batch is answered
            if producer_id < 0:
                try:
                    response = await connection.call(
                        request_schema(22, 4).make(
                            "InitProducerIdRequest",
                            transactional_id=None,
                            transaction_timeout=datetime.timedelta(minutes=1),
                            producer_id=-1,
                            producer_epoch=-1,
                        )
                    )
                except RequestFailed:
                    await asyncio.sleep(0.3)
                    continue
                if response.error_code != ErrorCode.none:
                    await asyncio.sleep(0.3)
                    continue
                producer_id, epoch, sequence = response.producer_id, response.producer_epoch, 0
                ids += 1
                if ids > 1:
                    oracle.reissued.update(values)
            batch = encode_batch(
                [(None, str(v).encode()) for v in values],
                timestamp_ms=world.clock.wall_ms(),
                producer_id=producer_id,
                producer_epoch=epoch,
                base_sequence=sequence,
            )
            try:
                answer = await connection.call(produce({(IDEMPOTENT_TOPIC, 0): batch}))
            except RequestFailed:
                await asyncio.sleep(world.rng.randint(50, 500) / 1000)
                continue  # the same batch again
            (part,) = answer.responses[0].partition_responses
            error = ErrorCode(part.error_code)
            if error == ErrorCode.none:
                world.note(f"idempotent {values[0]}+{count} seq {sequence} at {part.base_offset}")
                oracle.acked.update(values)
                oracle.trusted.update(values)
                sequence += count
                break
            world.note(f"idempotent {values[0]}+{count} seq {sequence}: {error.name}")
            if error in RESEND:
                producer_id = -1  # a new producer id, the batch again
                oracle.reissued.update(values)
            else:
                await asyncio.sleep(0.2)
    await connection.close()
