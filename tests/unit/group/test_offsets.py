"""AlterShareGroupOffsets and DeleteShareGroupOffsets on the shard, in the runtime's
shape: call, check the records, response and effects, replay, check the state.

Conformance items covered (shard level): 74 (reset needs an empty group, bumps the
epoch, re-initialises at the new state epoch), 75 (delete moves the topic through
deleting; a topic without state is UNKNOWN_TOPIC_OR_PARTITION). Every test's records
are checked for replay equivalence by the harness fixture.
"""

from __future__ import annotations

from shoal.group import records as r
from shoal.group.results import DeleteShareState, InitializeShareState
from shoal.group.share.offsets import NO_OFFSETS_MESSAGE, NOT_EMPTY_MESSAGE, UNKNOWN_TOPIC_MESSAGE
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness, topic_id

M1 = "member-one"


def emptied(harness: Harness, *topics: str) -> int:
    """Group "g" subscribed to `topics`, initialised, then left by its member: its epoch."""
    harness.join("g", M1, list(topics))
    harness.complete_inits()
    harness.heartbeat("g", M1, -1)
    harness.take_effects()
    group = harness.shard.share_group("g")
    assert group is not None and group.is_empty
    return group.group_epoch


def test_74_alter_needs_an_empty_share_group(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    busy = harness.run(
        harness.shard.alter_share_group_offsets(group_id="g", topics=[("t", [(0, 0)])])
    )
    assert (busy.response.error, busy.response.error_message) == (
        ErrorCode.non_empty_group,
        NOT_EMPTY_MESSAGE,
    )
    assert busy.records == () and busy.effects == ()
    harness.write(
        r.CoordinatorRecord(
            key=r.ConsumerGroupMetadataKey(group_id="cg"),
            value=r.ConsumerGroupMetadataValue(epoch=1),
        )
    )
    other = harness.run(
        harness.shard.alter_share_group_offsets(group_id="cg", topics=[("t", [(0, 0)])])
    )
    assert other.response.error is ErrorCode.group_id_not_found
    assert other.response.error_message == "Group cg is not a share group."
    assert other.records == ()


def test_74_alter_bumps_the_epoch_and_reinitialises_at_it(harness: Harness) -> None:
    """The reset: epoch + 1, the partitions initializing (still initialized), one
    initialisation at StateEpoch = the new epoch with each requested start offset;
    its success moves them back to initialized only."""
    harness.set_topics(t=3)
    epoch = emptied(harness, "t")
    result = harness.run(
        harness.shard.alter_share_group_offsets(group_id="g", topics=[("t", [(0, 0), (2, 7)])])
    )
    response = result.response
    assert response.error is None and response.group_epoch == epoch + 1
    [row] = response.topics
    assert (row.topic_name, row.topic_id) == ("t", topic_id("t"))
    assert [(p.partition, p.error) for p in row.partitions] == [(0, None), (2, None)]
    assert [type(rec.key).__name__ for rec in result.records] == [
        "ShareGroupMetadataKey",
        "ShareGroupStatePartitionMetadataKey",
    ]
    [init] = result.effects
    assert isinstance(init, InitializeShareState)
    assert init.state_epoch == epoch + 1
    assert [(p.partition, p.start_offset) for p in init.topics[0].partitions] == [(0, 0), (2, 7)]
    group = harness.shard.share_group("g")
    assert group is not None and group.group_epoch == epoch + 1
    metadata = group.state_metadata
    assert metadata.initializing_partitions(topic_id("t")) == {0, 2}
    assert metadata.initialized_partitions(topic_id("t")) == {0, 1, 2}
    harness.complete_inits()
    group = harness.shard.share_group("g")
    assert group is not None
    assert group.state_metadata.initializing == {}
    assert harness.shard.initialized_partitions("g") == {topic_id("t"): (0, 1, 2)}


def test_alter_creates_a_missing_group_empty(harness: Harness) -> None:
    harness.set_topics(t=2)
    result = harness.run(
        harness.shard.alter_share_group_offsets(group_id="new", topics=[("t", [(1, 5)])])
    )
    assert result.response.error is None and result.response.group_epoch == 1
    assert harness.shard.group_state("new") == "Empty"
    [init] = result.effects
    assert isinstance(init, InitializeShareState) and init.state_epoch == 1
    harness.complete_inits()
    assert harness.shard.initialized_partitions("new") == {topic_id("t"): (1,)}


def test_alter_unknown_topics_partitions_and_bad_offsets(harness: Harness) -> None:
    """Per partition: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION, start
    offset below -1 -> INVALID_REQUEST; the rest is reset. Repeated names and
    partitions merge (last offset wins)."""
    harness.set_topics(t=2)
    result = harness.run(
        harness.shard.alter_share_group_offsets(
            group_id="g",
            topics=[
                ("t", [(0, 3), (2, 0), (-1, 0)]),
                ("missing", [(0, 0)]),
                ("t", [(1, -2), (0, 4)]),
            ],
        )
    )
    rows = {row.topic_name: row for row in result.response.topics}
    assert list(rows) == ["t", "missing"]
    assert rows["missing"].topic_id is None
    assert [(p.partition, p.error, p.error_message) for p in rows["missing"].partitions] == [
        (0, ErrorCode.unknown_topic_or_partition, UNKNOWN_TOPIC_MESSAGE)
    ]
    errors = {p.partition: p.error for p in rows["t"].partitions}
    assert errors == {
        0: None,
        2: ErrorCode.unknown_topic_or_partition,
        -1: ErrorCode.unknown_topic_or_partition,
        1: ErrorCode.invalid_request,
    }
    [init] = result.effects
    assert isinstance(init, InitializeShareState)
    assert [(p.partition, p.start_offset) for p in init.topics[0].partitions] == [(0, 4)]


def test_alter_with_nothing_valid_writes_nothing(harness: Harness) -> None:
    harness.set_topics(t=1)
    result = harness.run(
        harness.shard.alter_share_group_offsets(group_id="g", topics=[("missing", [(0, 0)])])
    )
    assert result.records == () and result.effects == ()
    assert result.response.error is None and result.response.group_epoch == 0
    assert harness.shard.share_group("g") is None


def test_failed_reset_keeps_the_old_state(harness: Harness) -> None:
    harness.set_topics(t=1)
    emptied(harness, "t")
    harness.run(harness.shard.alter_share_group_offsets(group_id="g", topics=[("t", [(0, 0)])]))
    harness.complete_inits(success=False)
    group = harness.shard.share_group("g")
    assert group is not None and group.state_metadata.initializing == {}
    assert harness.shard.initialized_partitions("g") == {topic_id("t"): (0,)}


def test_75_delete_offsets_moves_topics_through_deleting(harness: Harness) -> None:
    harness.set_topics(t=2, u=1, idle=1)
    epoch = emptied(harness, "t", "u")
    result = harness.run(
        harness.shard.delete_share_group_offsets(
            group_id="g", topic_names=["t", "idle", "missing", "t"]
        )
    )
    response = result.response
    assert response.error is None
    assert [(t.topic_name, t.topic_id, t.error, t.error_message) for t in response.topics] == [
        ("t", topic_id("t"), None, None),
        ("idle", None, ErrorCode.unknown_topic_or_partition, NO_OFFSETS_MESSAGE),
        ("missing", None, ErrorCode.unknown_topic_or_partition, UNKNOWN_TOPIC_MESSAGE),
    ]
    [record] = result.records
    assert isinstance(record.key, r.ShareGroupStatePartitionMetadataKey)
    [delete] = result.effects
    assert isinstance(delete, DeleteShareState) and not delete.for_group_deletion
    assert [(t.topic_id, t.partitions) for t in delete.topics] == [(topic_id("t"), (0, 1))]
    group = harness.shard.share_group("g")
    assert group is not None
    assert group.state_metadata.deleting == {topic_id("t"): "t"}
    assert harness.shard.initialized_partitions("g") == {topic_id("u"): (0,)}
    done = harness.run(
        harness.shard.complete_state_deletion(group_id="g", topic_ids=[topic_id("t")], success=True)
    )
    assert done.response.error is None
    group = harness.shard.share_group("g")
    assert group is not None and group.state_metadata.deleting == {}
    assert group.group_epoch == epoch, "deleting offsets does not bump the epoch"


def test_delete_offsets_retries_a_topic_still_deleting(harness: Harness) -> None:
    harness.set_topics(t=2)
    emptied(harness, "t")
    harness.run(harness.shard.delete_share_group_offsets(group_id="g", topic_names=["t"]))
    harness.run(
        harness.shard.complete_state_deletion(
            group_id="g", topic_ids=[topic_id("t")], success=False
        )
    )
    again = harness.run(harness.shard.delete_share_group_offsets(group_id="g", topic_names=["t"]))
    assert again.response.topics[0].error is None
    assert again.records == ()
    [delete] = again.effects
    assert isinstance(delete, DeleteShareState)
    assert [(t.topic_id, t.partitions) for t in delete.topics] == [(topic_id("t"), (0, 1))]


def test_delete_offsets_group_errors(harness: Harness) -> None:
    harness.set_topics(t=1)
    missing = harness.run(harness.shard.delete_share_group_offsets(group_id="g", topic_names=["t"]))
    assert (missing.response.error, missing.response.error_message) == (
        ErrorCode.group_id_not_found,
        "Group g not found.",
    )
    harness.join("g", M1, ["t"])
    busy = harness.run(harness.shard.delete_share_group_offsets(group_id="g", topic_names=["t"]))
    assert busy.response.error is ErrorCode.non_empty_group
    assert busy.records == () and busy.effects == ()


def test_reset_interrupted_by_a_restart_is_settled_not_guessed(harness: Harness) -> None:
    """Reload after the reset's records but before its completion: the partitions keep
    the persister's state (no re-initialisation at a guessed offset) and leave
    initializing; a partition only initializing is re-issued as before."""
    harness.set_topics(t=2, u=1)
    emptied(harness, "t")
    harness.run(harness.shard.alter_share_group_offsets(group_id="g", topics=[("t", [(0, 9)])]))
    harness.take_effects()
    reloaded = harness.new_shard()
    for offset, record in enumerate(harness.log):
        reloaded.replay(record, offset)
    reloaded.on_topics_changed(topics=list(harness.cluster.values()))
    harness.shard = reloaded
    loaded = harness.run(reloaded.on_loaded())
    assert loaded.effects == ()
    [record] = loaded.records
    assert isinstance(record.key, r.ShareGroupStatePartitionMetadataKey)
    group = reloaded.share_group("g")
    assert group is not None and group.state_metadata.initializing == {}
    assert reloaded.initialized_partitions("g") == {topic_id("t"): (0, 1)}
