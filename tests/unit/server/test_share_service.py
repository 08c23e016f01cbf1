"""ShareService built from its collaborators (no broker): a share fetch acquires,
lock expiry fired through its timer source wakes the parked fetches of that
share-partition (the manager's Effects performed as purgatory notifies), the idle
unload is a periodic source on the configured interval, operations re-arm, and the
Shoal extensions: a delayed redelivery wakes through its own source, a pause stops
acquisitions and a resume wakes the group."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.manager import LogManager
from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.server.metadata.group_config_store import GroupConfigStore
from shoal.server.services.purgatory import Purgatory
from shoal.server.services.share_service import (
    ShareAcknowledgeCall,
    ShareFetchCall,
    ShareOutcome,
    ShareService,
    share_wait_key,
)
from shoal.server.services.timers import TimerSource
from shoal.share.acknowledge import AckBatch
from shoal.share.persister import InMemoryPersister, SharePartitionKey
from shoal.share.sessions import TopicIdPartition
from tests.support.metadata import metadata_at
from tests.support.share_rig import fetch_acquired
from tests.unit.log.batches import append, make_batch


class RecordingPurgatory(Purgatory):
    """The real purgatory, recording the keys notified."""

    def __init__(self) -> None:
        super().__init__()
        self.notified: list[Hashable] = []

    def notify(self, key: Hashable) -> None:
        self.notified.append(key)
        super().notify(key)


class Rig:
    def __init__(self, tmp_path: Path, **raw: object) -> None:
        self.clock = ManualClock()
        self.config = BrokerConfig.from_raw({"log.dirs": str(tmp_path / "data"), **raw})
        self.logs = LogManager.open(
            data_dir=tmp_path / "data", broker_config=self.config, clock=self.clock
        )
        info = self.logs.create_topic("t", partitions=1, configs={})
        self.tp = TopicIdPartition(info.topic_id, 0)
        self.key = SharePartitionKey("g", info.topic_id, 0)
        self.persister = InMemoryPersister()
        assert self.persister.initialize(key=self.key, state_epoch=1, start_offset=0) is None
        self.purgatory = RecordingPurgatory()
        self.rearms = 0
        self.rearmed: list[tuple[str, ...]] = []
        self.service = ShareService(
            clock=self.clock,
            config=lambda: self.config,
            logs=self.logs,
            group_configs=GroupConfigStore(
                metadata=metadata_at(tmp_path / "data"),
                broker_config=lambda: self.config,
            ),
            persister=self.persister,
            purgatory=self.purgatory,
            rearm=self.rearm,
        )

    def rearm(self, *sources: TimerSource) -> None:
        self.rearms += 1
        self.rearmed.append(tuple(s.name for s in sources))

    def produce(self, count: int) -> None:
        partition = self.logs.partition("t", 0)
        assert partition is not None
        append(partition, make_batch(count))

    def fetch(self, epoch: int = 0) -> int:
        return fetch_acquired(self.service, member_id="m", epoch=epoch, partitions=(self.tp,))


def test_lock_expiry_fired_by_its_source_wakes_the_share_partition(tmp_path: Path) -> None:
    rig = Rig(tmp_path, **{"group.share.record.lock.duration.ms": "15000"})
    rig.produce(3)
    before = rig.rearms
    assert rig.fetch() == 3
    assert rig.rearms > before, "a fetch re-arms the timer driver"
    # only the sources a share operation moves are named (the driver re-asks those)
    assert rig.rearmed[-1] == ("share-lock-expiry", "share-redelivery")
    lock_source = next(s for s in rig.service.timer_sources() if s.name == "share-lock-expiry")
    now = rig.clock.monotonic_ms()
    assert lock_source.next_deadline_ms(now) == 15_000
    rig.purgatory.notified.clear()
    rig.clock.advance(15_000)
    lock_source.fire(rig.clock.monotonic_ms())
    assert rig.purgatory.notified == [share_wait_key(rig.key)]
    assert lock_source.next_deadline_ms(rig.clock.monotonic_ms()) is None
    assert rig.fetch(epoch=1) == 3, "expired records are acquirable again"


def test_idle_unload_is_periodic_on_half_the_idle_period(tmp_path: Path) -> None:
    rig = Rig(tmp_path, **{"shoal.share.partition.idle.unload.ms": "4000"})
    rig.produce(1)
    assert rig.fetch() == 1
    idle = next(s for s in rig.service.timer_sources() if s.name == "share-idle-unload")
    assert idle.next_deadline_ms(0) == 2_000
    rig.clock.advance(5_000)
    idle.fire(rig.clock.monotonic_ms())
    assert rig.service.partitions.get(rig.key) is not None, "acquired records keep it loaded"
    outcome = rig.service.share_acknowledge(
        ShareAcknowledgeCall(
            group_id="g",
            member_id="m",
            epoch=1,
            acknowledgements={rig.tp: [AckBatch(0, 0, (AcknowledgeType.ACCEPT,))]},
        )
    )
    assert outcome.error is None and outcome.partitions[0].acknowledge_error is None
    assert idle.next_deadline_ms(rig.clock.monotonic_ms()) == 7_000
    rig.clock.advance(4_000)
    idle.fire(rig.clock.monotonic_ms())
    assert rig.service.partitions.get(rig.key) is None, "idle and nothing acquired: unloaded"


def _parked_fetch(rig: Rig, member_id: str, max_records: int) -> ShareFetchCall:
    return ShareFetchCall(
        group_id="g",
        member_id=member_id,
        epoch=0,
        max_wait_ms=5_000,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=max_records,
        batch_size=max_records,
        partitions=(rig.tp,),
    )


def _acquired(outcome: ShareOutcome) -> int:
    return sum(r.count for p in outcome.partitions for r in p.acquired)


def test_an_append_wakes_one_parked_fetch_of_the_group(tmp_path: Path) -> None:
    rig = Rig(tmp_path)

    async def run() -> None:
        first = asyncio.create_task(
            rig.service.share_fetch(_parked_fetch(rig, "m1", 500), connection_id=1)
        )
        await asyncio.sleep(0.01)
        second = asyncio.create_task(
            rig.service.share_fetch(_parked_fetch(rig, "m2", 500), connection_id=2)
        )
        await asyncio.sleep(0.01)
        rig.produce(3)
        rig.purgatory.notify(("t", 0))
        assert _acquired(await first) == 3
        await asyncio.sleep(0.01)
        assert not second.done(), "the other fetch is not woken to find nothing"
        rig.produce(2)
        rig.purgatory.notify(("t", 0))
        assert _acquired(await second) == 2

    asyncio.run(run())


def test_a_woken_fetch_that_leaves_records_wakes_the_next(tmp_path: Path) -> None:
    rig = Rig(tmp_path)

    async def run() -> None:
        first = asyncio.create_task(
            rig.service.share_fetch(_parked_fetch(rig, "m1", 6), connection_id=1)
        )
        await asyncio.sleep(0.01)
        second = asyncio.create_task(
            rig.service.share_fetch(_parked_fetch(rig, "m2", 6), connection_id=2)
        )
        await asyncio.sleep(0.01)
        for _ in range(10):
            rig.produce(1)  # one-record batches: the first fetch stops at 6
        rig.purgatory.notify(("t", 0))
        assert _acquired(await first) == 6
        assert _acquired(await asyncio.wait_for(second, 2)) == 4, "the wake was passed on"

    asyncio.run(run())


def test_a_fetch_carrying_acknowledgements_queues_behind_the_parked_fetches(
    tmp_path: Path,
) -> None:
    """At the in-flight cap, m2 is parked; m1's next fetch accepts its 100 records:
    m2 takes the next 100 (the cap again) and m1, queued behind it, gets nothing
    until its MaxWaitMs, as in Kafka (the acknowledgement completes the parked
    fetches before the fetch that carried it)."""
    rig = Rig(tmp_path, **{"group.share.partition.max.record.locks": "100"})
    for _ in range(3):
        rig.produce(100)

    def fetch(member_id: str, epoch: int, max_wait_ms: int, acks: bool = False) -> ShareFetchCall:
        return ShareFetchCall(
            group_id="g",
            member_id=member_id,
            epoch=epoch,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=500,
            batch_size=500,
            partitions=(rig.tp,),
            acknowledgements=(
                {rig.tp: [AckBatch(0, 99, (AcknowledgeType.ACCEPT,))]} if acks else {}
            ),
        )

    async def run() -> None:
        first = await rig.service.share_fetch(fetch("m1", 0, 0), connection_id=1)
        assert _acquired(first) == 100, "the cap"
        parked = asyncio.create_task(
            rig.service.share_fetch(fetch("m2", 0, 5_000), connection_id=2)
        )
        await asyncio.sleep(0.01)
        assert not parked.done(), "nothing acquirable at the cap"
        again = asyncio.create_task(
            rig.service.share_fetch(fetch("m1", 1, 200, acks=True), connection_id=1)
        )
        assert _acquired(await asyncio.wait_for(parked, 2)) == 100, "the parked fetch first"
        await asyncio.sleep(0.01)
        assert not again.done(), "queued behind it, and the cap is reached again"
        rig.clock.advance(200)  # its MaxWaitMs (the purgatory's timer re-checks it)
        outcome = await asyncio.wait_for(again, 2)
        assert outcome.partitions[0].acknowledge_error is None
        assert _acquired(outcome) == 0

    asyncio.run(run())


def _acknowledge(rig: Rig, epoch: int, first: int, last: int, kind: AcknowledgeType) -> None:
    outcome = rig.service.share_acknowledge(
        ShareAcknowledgeCall(
            group_id="g",
            member_id="m",
            epoch=epoch,
            acknowledgements={rig.tp: [AckBatch(first, last, (kind,))]},
        )
    )
    assert outcome.error is None and outcome.partitions[0].acknowledge_error is None


def test_an_acknowledgement_wakes_the_share_partition_only_when_records_are_acquirable(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.produce(3)
    assert rig.fetch() == 3
    rig.purgatory.notified.clear()
    _acknowledge(rig, 1, 0, 0, AcknowledgeType.ACCEPT)
    partition = rig.service.partitions.get(rig.key)
    assert partition is not None and partition.start_offset == 1, "the start offset moved"
    assert rig.purgatory.notified == [], "nothing is acquirable: no fetch is woken for nothing"
    rig.produce(1)
    _acknowledge(rig, 2, 1, 1, AcknowledgeType.ACCEPT)
    assert rig.purgatory.notified == [share_wait_key(rig.key)], "record 3 is acquirable"
    rig.purgatory.notified.clear()
    assert rig.fetch(epoch=3) == 1
    _acknowledge(rig, 4, 2, 2, AcknowledgeType.RELEASE)
    assert rig.purgatory.notified == [share_wait_key(rig.key)], "released records are acquirable"


def test_delayed_redelivery_wakes_through_its_source_and_pause_stops_fetches(
    tmp_path: Path,
) -> None:
    """Shoal extensions: a RELEASE under a backoff wakes nobody until the
    share-redelivery source fires at its end; a paused group's fetch acquires nothing
    and a resume (a config change) wakes the group's share-partitions."""
    rig = Rig(tmp_path)
    store = rig.service._group_configs
    asyncio.run(store.alter("g", {"shoal.share.redelivery.backoff.ms": "500"}))
    rig.produce(3)
    assert rig.fetch() == 3
    rig.purgatory.notified.clear()
    _acknowledge(rig, 1, 0, 2, AcknowledgeType.RELEASE)
    assert rig.purgatory.notified == [], "released but not due: no fetch is woken"
    source = next(s for s in rig.service.timer_sources() if s.name == "share-redelivery")
    assert source.next_deadline_ms(rig.clock.monotonic_ms()) == 500
    assert rig.fetch(epoch=2) == 0
    rig.clock.advance(500)
    source.fire(rig.clock.monotonic_ms())
    assert rig.purgatory.notified == [share_wait_key(rig.key)]
    assert source.next_deadline_ms(rig.clock.monotonic_ms()) is None
    assert rig.fetch(epoch=3) == 3

    asyncio.run(store.alter("g", {"shoal.share.delivery.paused": "true"}))
    rig.service.group_config_changed("g")
    rig.produce(2)
    assert rig.fetch(epoch=4) == 0, "paused"
    rig.purgatory.notified.clear()
    asyncio.run(store.alter("g", {}))
    rig.service.group_config_changed("g")
    assert rig.purgatory.notified == [share_wait_key(rig.key)], "the resume wakes the group"
    assert rig.fetch(epoch=5) == 2


def test_an_acknowledgement_rearms_the_timers_only_when_a_deadline_may_come_earlier(
    tmp_path: Path,
) -> None:
    """An ACCEPT only cancels locks (deadlines move later: no timer pass); a RELEASE
    under a redelivery backoff makes a new deadline and a RENEW under a shortened
    lock duration an earlier one (both rearm); closing the session rearms. The
    sources keep answering the true deadlines throughout."""
    rig = Rig(
        tmp_path,
        **{
            "group.share.min.record.lock.duration.ms": "1000",
            "group.share.record.lock.duration.ms": "15000",
        },
    )
    store = rig.service._group_configs
    asyncio.run(store.alter("g", {"shoal.share.redelivery.backoff.ms": "500"}))
    rig.produce(4)
    assert rig.fetch() == 4
    sources = {s.name: s for s in rig.service.timer_sources()}
    locks, redelivery = sources["share-lock-expiry"], sources["share-redelivery"]
    before = rig.rearms
    _acknowledge(rig, 1, 0, 0, AcknowledgeType.ACCEPT)
    assert rig.rearms == before, "a lock cancelled: the deadlines only moved later"
    assert locks.next_deadline_ms(0) == 15_000
    _acknowledge(rig, 2, 1, 1, AcknowledgeType.RELEASE)
    assert rig.rearms == before + 1, "a delayed redelivery is a new deadline"
    assert rig.rearmed[-1] == ("share-lock-expiry", "share-redelivery")
    assert redelivery.next_deadline_ms(0) == 500
    asyncio.run(
        store.alter(
            "g",
            {"shoal.share.redelivery.backoff.ms": "500", "share.record.lock.duration.ms": "2000"},
        )
    )
    rig.service.group_config_changed("g")
    before = rig.rearms
    renewed = rig.service.share_acknowledge(
        ShareAcknowledgeCall(
            group_id="g",
            member_id="m",
            epoch=3,
            is_renew_ack=True,
            acknowledgements={rig.tp: [AckBatch(2, 2, (AcknowledgeType.RENEW,))]},
        )
    )
    assert renewed.partitions[0].acknowledge_error is None
    assert rig.rearms == before + 1, "renewed under a shorter lock duration: earlier"
    assert locks.next_deadline_ms(0) == 2_000
    _acknowledge(rig, 4, 3, 3, AcknowledgeType.ACCEPT)
    assert rig.rearms == before + 1
    closed = rig.service.share_acknowledge(
        ShareAcknowledgeCall(group_id="g", member_id="m", epoch=-1)
    )
    assert closed.error is None and rig.rearms == before + 2, "the session's end rearms"


def test_a_deleted_topic_is_not_served_from_the_remembered_logs(tmp_path: Path) -> None:
    """`_log_for` remembers found partition logs until a topic change: after the topic
    is deleted (the broker calls `topics_changed`, as its log events say), a fetch on
    the old topic id answers UNKNOWN_TOPIC_ID, not the closed log's error."""
    rig = Rig(tmp_path)
    rig.produce(2)
    assert rig.fetch() == 2
    assert rig.service._log_for(rig.tp.topic_id, 0) is rig.logs.partition("t", 0)
    rig.logs.delete_topic("t")
    rig.service.topics_changed()
    call = ShareFetchCall(
        group_id="g",
        member_id="m",
        epoch=1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=10,
        batch_size=10,
    )
    outcome = asyncio.run(rig.service.share_fetch(call, connection_id=1))
    assert [(p.partition, p.error) for p in outcome.partitions] == [
        (rig.tp, ErrorCode.unknown_topic_id)
    ]
