"""GroupService administration on a manual clock against the in-memory persister:
DeleteGroups, AlterShareGroupOffsets, DeleteShareGroupOffsets reach the persister and
tell the share-state listeners; DescribeShareGroupOffsets reads summaries and lag;
persister failures come back per share-partition or per topic."""

from __future__ import annotations

import uuid

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.group import TopicMetadata
from shoal.protocol.errors import ErrorCode
from shoal.server.services.group_service import GroupService
from shoal.share.persister import (
    InMemoryPersister,
    SharePartitionKey,
    StateBatch,
    StateWrite,
)

TOPIC = TopicMetadata(topic_id=uuid.UUID(int=0x90), name="t", partition_count=2)
OTHER = TopicMetadata(topic_id=uuid.UUID(int=0x91), name="u", partition_count=1)
HW = {(TOPIC.topic_id, 0): 10, (TOPIC.topic_id, 1): 0, (OTHER.topic_id, 0): 5}


class FailingPersister(InMemoryPersister):
    """Refuses initialise and delete for the share-partitions in `failing`."""

    def __init__(self) -> None:
        super().__init__()
        self.failing: set[SharePartitionKey] = set()

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode | None:
        if key in self.failing:
            return ErrorCode.coordinator_not_available
        return super().initialize(key=key, state_epoch=state_epoch, start_offset=start_offset)

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None:
        if key in self.failing:
            return ErrorCode.coordinator_not_available
        return super().delete(key=key)


class Fixture:
    def __init__(self) -> None:
        self.persister = FailingPersister()
        self.service = GroupService(
            clock=ManualClock(),
            config=BrokerConfig.from_raw({}),
            persister=self.persister,
            topic_source=lambda: [TOPIC, OTHER],
        )
        self.reset: list[str] = []
        self.service.on_share_state_reset.append(self.reset.append)
        self.service.topics_changed()

    def emptied(self, group_id: str = "g", topics: tuple[str, ...] = ("t", "u")) -> None:
        """A member joins (state initialised at -1) and leaves."""
        for epoch in (0, -1):
            response = self.service.heartbeat(
                group_id=group_id,
                member_id="m1",
                member_epoch=epoch,
                rack_id=None,
                subscribed_topic_names=topics if epoch == 0 else None,
                client_id="c",
                client_host="/127.0.0.1",
            )
            assert response.error is None, response

    def key(self, topic: TopicMetadata, partition: int, group_id: str = "g") -> SharePartitionKey:
        return SharePartitionKey(group_id, topic.topic_id, partition)

    def summary(self, topic: TopicMetadata, partition: int) -> tuple[int, int]:
        found = self.persister.read_summary(key=self.key(topic, partition), leader_epoch=0)
        return found.state_epoch, found.start_offset

    def describe(
        self, topics: list[tuple[str, list[int]]] | None = None
    ) -> dict[str, list[tuple[int, int, int]]]:
        described = self.service.describe_offsets(
            group_id="g", topics=topics, high_watermark=lambda t, p: HW.get((t, p))
        )
        return {
            t.topic_name: [(p.partition, p.start_offset, p.lag) for p in t.partitions]
            for t in described
        }


def test_delete_groups_deletes_state_and_tells_listeners() -> None:
    f = Fixture()
    f.emptied()
    busy_member = f.service.heartbeat(
        group_id="busy",
        member_id="m9",
        member_epoch=0,
        rack_id=None,
        subscribed_topic_names=["t"],
        client_id="c",
        client_host="/127.0.0.1",
    )
    assert busy_member.error is None
    results = f.service.delete_groups(["g", "busy", "nope", "g"])
    assert [(r.group_id, r.error) for r in results] == [
        ("g", None),
        ("busy", ErrorCode.non_empty_group),
        ("nope", ErrorCode.group_id_not_found),
    ]
    assert f.service.shard_of("g").share_group("g") is None
    assert f.summary(TOPIC, 0) == (0, -1), "state deleted"
    assert f.reset == ["g"]


def test_failed_state_deletion_keeps_the_group() -> None:
    f = Fixture()
    f.emptied()
    f.persister.failing.add(f.key(TOPIC, 1))
    [result] = f.service.delete_groups(["g"])
    assert result.error is ErrorCode.unknown_server_error
    assert f.service.shard_of("g").share_group("g") is not None
    assert f.reset == []


def test_alter_reinitialises_at_the_new_epoch_and_offsets() -> None:
    f = Fixture()
    f.emptied()
    group = f.service.shard_of("g").share_group("g")
    assert group is not None
    epoch = group.group_epoch
    response = f.service.alter_offsets(group_id="g", topics=[("t", [(0, 3), (1, 0)])])
    assert response.error is None and response.group_epoch == epoch + 1
    assert f.summary(TOPIC, 0) == (epoch + 1, 3)
    assert f.summary(TOPIC, 1) == (epoch + 1, 0)
    assert f.reset == ["g"]
    assert f.describe() == {"t": [(0, 3, 7), (1, 0, 0)], "u": [(0, -1, -1)]}


def test_alter_reports_a_failed_initialisation_per_partition() -> None:
    f = Fixture()
    f.emptied()
    f.persister.failing.add(f.key(TOPIC, 1))
    response = f.service.alter_offsets(group_id="g", topics=[("t", [(0, 3), (1, 0)])])
    [row] = response.topics
    assert [(p.partition, p.error) for p in row.partitions] == [
        (0, None),
        (1, ErrorCode.coordinator_not_available),
    ]
    assert f.summary(TOPIC, 0)[1] == 3
    assert f.summary(TOPIC, 1)[1] == -1, "the old state stays"


def test_alter_refused_writes_nothing_and_tells_nobody() -> None:
    f = Fixture()
    response = f.service.alter_offsets(group_id="g", topics=[("missing", [(0, 0)])])
    assert response.error is None and response.topics[0].topic_id is None
    assert f.reset == [] and f.service.shard_of("g").share_group("g") is None


def test_delete_offsets_deletes_the_topic_state() -> None:
    f = Fixture()
    f.emptied()
    response = f.service.delete_offsets(group_id="g", topic_names=["t"])
    assert [(t.topic_name, t.error) for t in response.topics] == [("t", None)]
    assert f.summary(TOPIC, 0) == (0, -1)
    assert f.describe() == {"u": [(0, -1, -1)]}
    assert f.reset == ["g"]
    group = f.service.shard_of("g").share_group("g")
    assert group is not None and group.state_metadata.deleting == {}


def test_delete_offsets_reports_a_failed_deletion_per_topic() -> None:
    f = Fixture()
    f.emptied()
    f.persister.failing.add(f.key(TOPIC, 0))
    response = f.service.delete_offsets(group_id="g", topic_names=["t", "u"])
    errors = {t.topic_name: t.error for t in response.topics}
    assert errors == {"t": ErrorCode.coordinator_not_available, "u": None}
    group = f.service.shard_of("g").share_group("g")
    assert group is not None
    assert group.state_metadata.deleting == {TOPIC.topic_id: "t"}, "kept for a retry"
    f.persister.failing.clear()
    retried = f.service.delete_offsets(group_id="g", topic_names=["t"])
    assert retried.topics[0].error is None
    group = f.service.shard_of("g").share_group("g")
    assert group is not None and group.state_metadata.is_empty


def test_describe_offsets_lag_and_absences() -> None:
    """Lag = high watermark - start offset - delivery-complete count, -1 when either
    is unknown; unknown groups, topics and partitions are StartOffset -1, no error."""
    f = Fixture()
    f.emptied()
    f.service.alter_offsets(group_id="g", topics=[("t", [(0, 2)])])
    group = f.service.shard_of("g").share_group("g")
    assert group is not None
    error = f.persister.write(
        write=StateWrite(
            key=f.key(TOPIC, 0),
            state_epoch=group.group_epoch,
            leader_epoch=0,
            start_offset=4,
            delivery_complete_count=3,
            state_batches=(StateBatch(5, 7, 2, 1),),
        )
    )
    assert error is None
    assert f.describe([("t", [0, 1, 7]), ("missing", [0])]) == {
        "t": [(0, 4, 10 - 4 - 3), (1, -1, -1), (7, -1, -1)],
        "missing": [(0, -1, -1)],
    }
    unknown = f.service.describe_offsets(
        group_id="nobody", topics=None, high_watermark=lambda t, p: 0
    )
    assert unknown == []
