"""GroupService over several `__consumer_offsets` partitions: a shard per partition.

Each group's records go only to its partition (`partition_for(group_id, n)`, Kafka's
placement), operations over several groups fan out over the shards and merge their
answers (ListGroups by id, DeleteGroups in request order), the timer source is the
earliest deadline of any shard and firing it reaches every shard, a transaction
marker settles only its partition's groups, and shards rebuilt from their
partitions' records (a restart) hold what the live ones held.
"""

from __future__ import annotations

import asyncio
import uuid

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.coordinator import InMemoryRecordSink
from shoal.coordinator.placement import partition_for
from shoal.group import TopicMetadata
from shoal.group.classic.state import JoinRequest
from shoal.group.committed_offsets import OffsetToCommit
from shoal.group.records import CoordinatorRecord
from shoal.protocol.errors import ErrorCode
from shoal.server.services.group_service import GroupService
from shoal.share.persister import InMemoryPersister

PARTITIONS = 3
TOPIC = TopicMetadata(topic_id=uuid.UUID(int=0x51), name="t", partition_count=2)
GROUPS = [f"group-{i}" for i in range(12)]


def homes() -> dict[str, int]:
    return {group: partition_for(group, PARTITIONS) for group in GROUPS}


def open_service(
    clock: ManualClock, sinks: list[InMemoryRecordSink[CoordinatorRecord]]
) -> GroupService:
    service = GroupService(
        clock=clock,
        config=BrokerConfig.from_raw({}),
        persister=InMemoryPersister(),
        topic_source=lambda: [TOPIC],
        sinks=sinks,
    )
    service.topics_changed()
    return service


def commit(service: GroupService, group_id: str, offset: int) -> None:
    answers = service.classic.commit_offsets(
        group_id=group_id,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=[
            OffsetToCommit(topic="t", partition=0, offset=offset, leader_epoch=-1, metadata="")
        ],
        api_version=9,
    )
    assert [a.error for a in answers] == [None]


def test_each_groups_records_land_only_on_its_partition() -> None:
    assert len(set(homes().values())) == PARTITIONS  # the ids spread over every partition
    sinks: list[InMemoryRecordSink[CoordinatorRecord]] = [InMemoryRecordSink() for _ in range(3)]
    service = open_service(ManualClock(), sinks)
    for offset, group in enumerate(GROUPS):
        commit(service, group, offset)
    for group, home in homes().items():
        for partition, sink in enumerate(sinks):
            mine = [rec for rec in sink.records if rec.key.group_id == group]
            assert bool(mine) == (partition == home), (group, partition)
        assert service.offsets_partition(group) == home
        assert service.shard_of(group) is service.runtime.shard_at(home)
        assert service.shard_of(group).classic.has_group(group)
        others = [p for p in range(PARTITIONS) if p != home]
        assert not any(service.runtime.shard_at(p).classic.has_group(group) for p in others)


def test_list_and_delete_groups_span_every_shard() -> None:
    sinks: list[InMemoryRecordSink[CoordinatorRecord]] = [InMemoryRecordSink() for _ in range(3)]
    service = open_service(ManualClock(), sinks)
    for group in GROUPS:
        commit(service, group, 1)
    listed = service.list_groups()
    assert [g.group_id for g in listed] == sorted(GROUPS)
    wanted = [GROUPS[5], "missing", GROUPS[0], GROUPS[5], GROUPS[7]]
    results = service.delete_groups(wanted)
    assert [(r.group_id, r.error) for r in results] == [
        (GROUPS[5], None),
        ("missing", ErrorCode.group_id_not_found),
        (GROUPS[0], None),
        (GROUPS[7], None),
    ]
    left = {g.group_id for g in service.list_groups()}
    assert left == set(GROUPS) - {GROUPS[0], GROUPS[5], GROUPS[7]}


def test_the_timer_is_the_earliest_shard_deadline_and_fires_on_each_shard() -> None:
    clock = ManualClock()
    sinks: list[InMemoryRecordSink[CoordinatorRecord]] = [InMemoryRecordSink() for _ in range(3)]
    service = open_service(clock, sinks)
    service.start()
    [source] = service.timer_sources()
    joined: dict[int, str] = {}
    for group, home in homes().items():
        joined.setdefault(home, group)
    for index, group in enumerate(joined.values()):
        # JoinGroup v4 without a member id: MEMBER_ID_REQUIRED, and the member waits
        # as pending until its session timeout (a classic deadline on its shard)
        response = asyncio.run(
            service.classic.join(
                JoinRequest(
                    group_id=group,
                    member_id="",
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[("range", b"")],
                    session_timeout_ms=10_000 + index * 1_000,
                    rebalance_timeout_ms=10_000,
                    client_id="c",
                    client_host="/127.0.0.1",
                    api_version=4,
                )
            )
        )
        assert response.error == ErrorCode.member_id_required
    deadlines = [
        service.runtime.shard_at(p).classic.groups.next_deadline() for p in range(PARTITIONS)
    ]
    assert None not in deadlines
    due = source.next_deadline_ms(clock.monotonic_ms())
    assert due == min(d for d in deadlines if d is not None)
    clock.advance(max(d for d in deadlines if d is not None) - clock.monotonic_ms())
    source.fire(clock.monotonic_ms())  # every shard's pending member is past its session
    after = [service.runtime.shard_at(p).classic.groups.next_deadline() for p in range(PARTITIONS)]
    assert after == [None] * PARTITIONS


def test_a_marker_settles_only_its_partitions_groups_and_a_restart_keeps_all() -> None:
    clock = ManualClock()
    sinks: list[InMemoryRecordSink[CoordinatorRecord]] = [InMemoryRecordSink() for _ in range(3)]
    service = open_service(clock, sinks)
    for group in GROUPS:
        answers = service.classic.txn_commit_offsets(
            group_id=group,
            producer_id=9,
            producer_epoch=0,
            member_id="",
            generation_id=-1,
            group_instance_id=None,
            offsets=[
                OffsetToCommit(topic="t", partition=1, offset=42, leader_epoch=-1, metadata="")
            ],
        )
        assert [a.error for a in answers] == [None]
    marked = homes()[GROUPS[0]]
    asyncio.run(
        service.complete_transaction(
            offsets_partition=marked, producer_id=9, producer_epoch=0, commit=True
        )
    )
    for group, home in homes().items():
        error, fetched = service.classic.fetch_offsets(
            group_id=group, partitions=[("t", 1)], require_stable=True
        )
        assert error is None
        expected = 42 if home == marked else -1  # the others are still pending
        assert [f.offset for f in fetched] == [expected], group
    states = [shard.durable_state() for shard in service.shards()]

    restarted = open_service(clock, sinks)
    for partition, sink in enumerate(sinks):  # each shard replays its own partition
        restarted.runtime.load_partition(partition, enumerate(sink.records))
    assert [shard.durable_state() for shard in restarted.shards()] == states
