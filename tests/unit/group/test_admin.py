"""Describe, list, delete and epoch reset of share groups.

Conformance items covered: 59, 60, 62 (shard level: state kept when all leave).
Every test's records are checked for replay equivalence by the harness fixture.
"""

from __future__ import annotations

from shoal.group import records as r
from shoal.group.results import DeleteShareState, DescribedTopicPartitions
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness, topic_id

M1, M2 = "member-one", "member-two"


def populated(harness: Harness) -> None:
    harness.set_topics(t=2)
    harness.heartbeat("g", M1, 0, ["t"], rack_id="rack-a", client_id="c1")
    harness.heartbeat("g", M2, 0, ["t"], client_id="c2")
    harness.complete_inits()
    harness.settle("g", [M1, M2])


def test_59_describe_unknown_and_live_groups(harness: Harness) -> None:
    """Conformance 59: unknown -> GROUP_ID_NOT_FOUND; a live group -> state, epochs,
    assignor "simple", members with their assignment and its topic names."""
    populated(harness)
    unknown, live = harness.shard.share_group_describe(group_ids=["nope", "g"])
    assert unknown.group_id == "nope" and unknown.error is ErrorCode.group_id_not_found
    assert live.error is None
    assert (live.group_state, live.assignor_name) == ("Stable", "simple")
    group = harness.shard.share_group("g")
    assert group is not None
    assert (live.group_epoch, live.assignment_epoch) == (group.group_epoch, group.assignment_epoch)
    first, second = live.members
    assert (first.member_id, first.rack_id, first.client_id, first.client_host) == (
        M1,
        "rack-a",
        "c1",
        "/127.0.0.1",
    )
    assert second.rack_id is None and first.subscribed_topic_names == ("t",)
    assert first.member_epoch == group.members[M1].member_epoch
    partitions = [a for m in live.members for a in m.assignment]
    assert all(isinstance(a, DescribedTopicPartitions) and a.topic_name == "t" for a in partitions)
    assert sorted(p for a in partitions for p in a.partitions) == [0, 1]


def test_60_list_groups_filters_are_case_insensitive(harness: Harness) -> None:
    """Conformance 60: TypesFilter ["Share"] lists only share groups with type and
    protocol type "share"; states and types filters ignore case."""
    populated(harness)
    harness.heartbeat("empty", M1, 0, ["t"])
    harness.heartbeat("empty", M1, -1)
    harness.write(
        r.CoordinatorRecord(
            key=r.ConsumerGroupMetadataKey(group_id="cg"),
            value=r.ConsumerGroupMetadataValue(epoch=1),
        )
    )
    listed = harness.shard.list_groups(types_filter=["Share"])
    assert [(g.group_id, g.group_state, g.group_type, g.protocol_type) for g in listed] == [
        ("empty", "Empty", "share", "share"),
        ("g", "Stable", "share", "share"),
    ]
    assert [g.group_id for g in harness.shard.list_groups(states_filter=["STABLE"])] == ["g"]
    assert [g.group_id for g in harness.shard.list_groups(states_filter=["empty"])] == ["empty"]
    assert harness.shard.list_groups(types_filter=["consumer"]) == []
    assert len(harness.shard.list_groups()) == 2


def test_62_all_members_leave_group_is_empty_and_state_kept(harness: Harness) -> None:
    """Conformance 62: when every member leaves the group is Empty and keeps its
    initialised share-partitions, so the next member continues from them (no new
    initialisation)."""
    populated(harness)
    harness.take_effects()
    harness.heartbeat("g", M1, -1)
    harness.heartbeat("g", M2, -1)
    [described] = harness.shard.share_group_describe(group_ids=["g"])
    assert (described.group_state, described.members) == ("Empty", ())
    assert harness.shard.initialized_partitions("g") == {topic_id("t"): (0, 1)}
    rejoined = harness.join("g", "member-three", ["t"])
    assert harness.pending_inits() == []
    assert rejoined.assignment is not None
    assert [(tp.topic_id, tp.partitions) for tp in rejoined.assignment] == [(topic_id("t"), (0, 1))]


def test_delete_groups_errors(harness: Harness) -> None:
    populated(harness)
    result = harness.run(harness.shard.delete_groups(group_ids=["g", "nope"]))
    assert [(x.group_id, x.error) for x in result.response.results] == [
        ("g", ErrorCode.non_empty_group),
        ("nope", ErrorCode.group_id_not_found),
    ]
    assert result.records == () and result.effects == ()


def test_delete_group_without_state_is_immediate(harness: Harness) -> None:
    harness.set_topics()
    harness.join("g", M1, ["nothing-yet"])
    harness.heartbeat("g", M1, -1)
    result = harness.run(harness.shard.delete_groups(group_ids=["g"]))
    assert result.response.results[0].error is None and not result.response.results[0].pending
    assert result.records[-1].key == r.ShareGroupMetadataKey(group_id="g")
    assert all(record.value is None for record in result.records)
    assert harness.shard.share_group("g") is None and harness.shard.group_type("g") is None


def test_delete_group_with_state_deletes_state_then_tombstones(harness: Harness) -> None:
    """DeleteGroups on an empty group with state: topics move to deleting (the
    intermediate step, durable), the state is deleted, then every group record is
    tombstoned with ShareGroupMetadata last. The same id then starts afresh."""
    populated(harness)
    harness.heartbeat("g", M1, -1)
    harness.heartbeat("g", M2, -1)
    harness.take_effects()
    result = harness.run(harness.shard.delete_groups(group_ids=["g"]))
    assert result.response.results[0].pending
    [delete] = result.effects
    assert isinstance(delete, DeleteShareState) and delete.for_group_deletion
    assert [(t.topic_id, t.partitions) for t in delete.topics] == [(topic_id("t"), (0, 1))]
    group = harness.shard.share_group("g")
    assert group is not None and group.state_metadata.deleting == {topic_id("t"): "t"}
    assert harness.shard.group_state("g") == "Dead"
    [described] = harness.shard.share_group_describe(group_ids=["g"])
    assert described.group_state == "Dead"
    done = harness.run(harness.shard.complete_group_deletion(group_id="g", success=True))
    assert done.response.error is None
    assert [type(rec.key).__name__ for rec in done.records][-1] == "ShareGroupMetadataKey"
    assert all(rec.value is None for rec in done.records)
    assert harness.shard.share_group("g") is None
    fresh = harness.join("g", M1, ["t"])
    assert fresh.member_epoch == 1
    [init] = harness.pending_inits()
    assert [p.start_offset for p in init.topics[0].partitions] == [-1, -1]


def test_interrupted_group_deletion_finishes_after_reload(harness: Harness) -> None:
    populated(harness)
    harness.heartbeat("g", M1, -1)
    harness.heartbeat("g", M2, -1)
    harness.run(harness.shard.delete_groups(group_ids=["g"]))
    # Crash before the state was deleted: reload from the log.
    reloaded = harness.new_shard()
    for record in harness.log:
        reloaded.replay(record)
    reloaded.on_topics_changed(topics=list(harness.cluster.values()))
    [redelete] = reloaded.on_loaded().effects
    assert isinstance(redelete, DeleteShareState)
    assert [(t.topic_id, t.partitions) for t in redelete.topics] == [(topic_id("t"), (0, 1))]
    harness.shard = reloaded
    harness.effects = []
    retried = harness.run(harness.shard.delete_groups(group_ids=["g"]))
    assert retried.response.results[0].pending and retried.records == ()
    harness.run(harness.shard.complete_group_deletion(group_id="g", success=True))
    assert harness.shard.share_group("g") is None


def test_failed_group_deletion_keeps_the_group(harness: Harness) -> None:
    populated(harness)
    harness.heartbeat("g", M1, -1)
    harness.heartbeat("g", M2, -1)
    harness.run(harness.shard.delete_groups(group_ids=["g"]))
    failed = harness.run(harness.shard.complete_group_deletion(group_id="g", success=False))
    assert failed.response.error is ErrorCode.unknown_server_error and failed.records == ()
    assert harness.shard.group_state("g") == "Empty"


def test_member_joining_during_deletion_keeps_the_group(harness: Harness) -> None:
    populated(harness)
    harness.heartbeat("g", M1, -1)
    harness.heartbeat("g", M2, -1)
    harness.run(harness.shard.delete_groups(group_ids=["g"]))
    harness.join("g", M1, ["t"])
    result = harness.run(harness.shard.complete_group_deletion(group_id="g", success=True))
    assert result.response.error is ErrorCode.non_empty_group
    group = harness.shard.share_group("g")
    assert group is not None and group.state_metadata.deleting == {}


def test_reset_epoch(harness: Harness) -> None:
    populated(harness)
    group = harness.shard.share_group("g")
    assert group is not None
    epoch = group.group_epoch
    busy = harness.run(harness.shard.reset_epoch(group_id="g"))
    assert busy.response.error is ErrorCode.non_empty_group and busy.records == ()
    harness.heartbeat("g", M1, -1)
    harness.heartbeat("g", M2, -1)
    reset = harness.run(harness.shard.reset_epoch(group_id="g"))
    assert reset.response.error is None and reset.response.group_epoch == epoch + 3
    created = harness.run(harness.shard.reset_epoch(group_id="new"))
    assert created.response.group_epoch == 1
    assert harness.shard.group_state("new") == "Empty"
    harness.write(
        r.CoordinatorRecord(
            key=r.ConsumerGroupMetadataKey(group_id="cg"),
            value=r.ConsumerGroupMetadataValue(epoch=1),
        )
    )
    other = harness.run(harness.shard.reset_epoch(group_id="cg"))
    assert other.response.error is ErrorCode.group_id_not_found
