"""The share coordinator's append linger in a broker on the manual clock
(`share.coordinator.append.linger.ms`): state writes of a linger become one batch
on `__share_group_state`, fired by the broker's timer driver; a request waits until
its writes are in the log and a request that wrote nothing does not wait; a lost
batch fails its waiters and the shard is rebuilt from the log; -1 (the default)
writes each state write at once; the config's lower bound is -1."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig, ConfigError
from shoal.coordinator import RecordSinkUnavailable
from shoal.coordinator.log_sink import LogRecordSink
from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.server.broker import Broker
from shoal.share.persister import SharePartitionKey, StateBatch, StateWrite

TOPIC_ID = uuid.UUID(int=7)
BUFFER = 1 << 20


def make_broker(tmp_path: Path, clock: ManualClock, linger_ms: int | None) -> Broker:
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }
    if linger_ms is not None:
        raw["share.coordinator.append.linger.ms"] = str(linger_ms)
    return Broker(BrokerConfig.from_raw(raw), clock=clock)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def lingering(tmp_path: Path, clock: ManualClock) -> Iterator[Broker]:
    built = make_broker(tmp_path, clock, 5)
    yield built
    built.logs.close()


def state_log(broker: Broker) -> PartitionLog:
    (partition,) = broker.share_state.partitions
    return partition


def batch_sizes(log: PartitionLog) -> list[int]:
    headers = log.read(log.log_start_offset, max_bytes=BUFFER).headers
    return [h.next_offset - h.base_offset for h in headers]


def key(partition: int) -> SharePartitionKey:
    return SharePartitionKey("g", TOPIC_ID, partition)


def accept(partition: int, first: int, last: int) -> StateWrite:
    return StateWrite(
        key=key(partition),
        state_epoch=0,
        leader_epoch=0,
        start_offset=-1,
        delivery_complete_count=-1,
        state_batches=(StateBatch(first, last, 2, 1),),
    )


def fire_timers(broker: Broker) -> list[str]:
    return broker.timers.schedule.fire_due(broker.clock.monotonic_ms())


def test_writes_of_a_linger_are_one_batch_and_the_request_waits_for_it(
    lingering: Broker, clock: ManualClock
) -> None:
    async def scenario() -> None:
        linger = lingering.services.state_writes
        persister = lingering.persister
        mark = linger.mark()
        assert persister.initialize(key=key(0), state_epoch=0, start_offset=0) is None
        assert persister.initialize(key=key(1), state_epoch=0, start_offset=0) is None
        assert persister.write(write=accept(0, 0, 9)) is None
        assert batch_sizes(state_log(lingering)) == [], "staged, not written yet"
        waiting = asyncio.create_task(linger.written(mark))
        await asyncio.sleep(0)
        assert not waiting.done(), "the answer waits for the log"
        clock.advance(4)
        assert "share-coordinator-append-linger" not in fire_timers(lingering)
        await asyncio.sleep(0)
        assert not waiting.done()
        clock.advance(1)
        assert "share-coordinator-append-linger" in fire_timers(lingering)
        await asyncio.wait_for(waiting, 1)
        assert batch_sizes(state_log(lingering)) == [3], "three writes, one batch"
        # the shard replayed exactly what the log holds: reading it back gives the same
        read = persister.read(key=key(0), leader_epoch=0)
        assert read.error is None and read.state is not None
        assert [(b.first_offset, b.last_offset) for b in read.state.state_batches] == [(0, 9)]

    asyncio.run(scenario())


def test_a_request_that_wrote_nothing_does_not_wait(lingering: Broker) -> None:
    async def scenario() -> None:
        linger = lingering.services.state_writes
        lingering.persister.initialize(key=key(0), state_epoch=0, start_offset=0)
        mark = linger.mark()  # a request starting while another's write is staged
        await asyncio.wait_for(linger.written(mark), 0.5)
        assert batch_sizes(state_log(lingering)) == []

    asyncio.run(scenario())


def test_a_lost_batch_fails_its_waiters_and_the_shard_is_rebuilt_from_the_log(
    lingering: Broker, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        linger = lingering.services.state_writes
        persister = lingering.persister
        persister.initialize(key=key(0), state_epoch=0, start_offset=0)
        clock.advance(5)
        fire_timers(lingering)
        mark = linger.mark()
        assert persister.write(write=accept(0, 0, 9)) is None
        assert persister.shard(0).states[key(0)].state_batches != ()
        waiting = asyncio.create_task(linger.written(mark))
        await asyncio.sleep(0)

        def storage_error(*_args: object, **_kwargs: object) -> None:
            raise LogError(ErrorCode.kafka_storage_error, "injected: the disk refused")

        monkeypatch.setattr(state_log(lingering), "append", storage_error)
        clock.advance(5)
        fire_timers(lingering)
        with pytest.raises(RecordSinkUnavailable):
            await asyncio.wait_for(waiting, 1)
        assert persister.shard(0).states[key(0)].state_batches == (), (
            "the lost write is not in the shard rebuilt from the log"
        )
        assert persister.shard(0).states[key(0)].start_offset == 0

    asyncio.run(scenario())


def test_shutdown_writes_what_is_staged(lingering: Broker) -> None:
    lingering.persister.initialize(key=key(0), state_epoch=0, start_offset=0)
    lingering.share_state.append_linger.flush_all()
    assert batch_sizes(state_log(lingering)) == [1]


def test_the_default_writes_every_state_write_at_once(tmp_path: Path, clock: ManualClock) -> None:
    broker = make_broker(tmp_path, clock, None)
    try:
        linger = broker.share_state.append_linger
        assert not linger.enabled
        assert "share-coordinator-append-linger" not in [
            s.name for s in broker.share_state.timer_sources()
        ]
        broker.persister.initialize(key=key(0), state_epoch=0, start_offset=0)
        broker.persister.write(write=accept(0, 0, 9))
        assert batch_sizes(state_log(broker)) == [1, 1]
        assert linger.mark() == 0
    finally:
        broker.logs.close()


def test_linger_zero_writes_when_the_timer_driver_next_runs(
    tmp_path: Path, clock: ManualClock
) -> None:
    broker = make_broker(tmp_path, clock, 0)
    try:
        broker.persister.initialize(key=key(0), state_epoch=0, start_offset=0)
        broker.persister.initialize(key=key(1), state_epoch=0, start_offset=0)
        assert batch_sizes(state_log(broker)) == []
        assert "share-coordinator-append-linger" in fire_timers(broker)
        assert batch_sizes(state_log(broker)) == [2]
    finally:
        broker.logs.close()


def test_the_linger_is_bounded_below_by_minus_one(tmp_path: Path) -> None:
    raw = {"log.dirs": str(tmp_path), "share.coordinator.append.linger.ms": "-2"}
    with pytest.raises(ConfigError):
        BrokerConfig.from_raw(raw)
    raw["share.coordinator.append.linger.ms"] = "-1"
    assert BrokerConfig.from_raw(raw).get_int("share.coordinator.append.linger.ms") == -1


def test_the_plain_sink_is_used_without_a_linger(tmp_path: Path, clock: ManualClock) -> None:
    broker = make_broker(tmp_path, clock, -1)
    try:
        sinks = broker.share_state.append_linger.sinks(
            broker.share_state.partitions, encode=lambda _r: (b"k", b"v")
        )
        assert all(isinstance(s, LogRecordSink) for s in sinks)
    finally:
        broker.logs.close()


def test_pruning_waits_while_state_writes_are_staged(tmp_path: Path, clock: ManualClock) -> None:
    """A snapshot staged under the linger makes the shard need nothing below it, but the
    log does not hold it yet: pruning then would delete the snapshot a reload needs if
    the staged batch were lost. Pruning skips the partition until the batch is written."""
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        "share.coordinator.append.linger.ms": "5",
        "share.coordinator.snapshot.update.records.per.snapshot": "0",
    }
    broker = Broker(BrokerConfig.from_raw(raw), clock=clock)

    async def scenario() -> None:
        persister = broker.persister
        assert persister.initialize(key=key(0), state_epoch=0, start_offset=0) is None
        clock.advance(5)
        fire_timers(broker)
        log = state_log(broker)
        assert log.log_end_offset == 1, "the first snapshot is in the log"
        assert persister.write(write=accept(0, 0, 9)) is None  # a snapshot, staged
        assert broker.share_state.coordinator.prune_offsets() == {0: 1}
        assert broker.share_state.prune() == 0, "nothing pruned while the batch is staged"
        assert log.log_start_offset == 0
        clock.advance(5)
        fire_timers(broker)
        assert log.log_end_offset == 2
        assert broker.share_state.prune() == 1, "written: the old snapshot goes"
        assert log.log_start_offset == 1

    try:
        asyncio.run(scenario())
    finally:
        broker.logs.close()
