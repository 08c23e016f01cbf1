"""Share-partition state lifecycle: initialisation before assignment, retries, topic
changes and deletions, and reloading.

Conformance items covered: 56, 57 (shard level: the initialisation request).
Every test's records are checked for replay equivalence by the harness fixture.
"""

from __future__ import annotations

from collections.abc import Callable

from shoal.group import ShareGroupSettings
from shoal.group.results import DeleteShareState, InitializeShareState
from shoal.group.share.group import ShareGroup
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness, assignment_of, topic_id

M1, M2 = "member-one", "member-two"


def group_of(harness: Harness, group_id: str = "g") -> ShareGroup:
    group = harness.shard.share_group(group_id)
    assert group is not None
    return group


def test_56_partitions_assigned_only_after_initialisation(harness: Harness) -> None:
    """Conformance 56: the join writes the partitions as initializing and asks for
    InitializeShareGroupState with StateEpoch = group epoch; they are assigned only
    after it succeeded (which bumps the group epoch)."""
    harness.set_topics(t=2)
    joined = harness.join("g", M1, ["t"])
    assert assignment_of(joined) == {}
    [init] = harness.pending_inits()
    group = group_of(harness)
    assert init.state_epoch == group.group_epoch == 1
    assert [
        (t.topic_id, [(p.partition, p.start_offset) for p in t.partitions]) for t in init.topics
    ] == [(topic_id("t"), [(0, -1), (1, -1)])]
    assert group.state_metadata.initializing_partitions(topic_id("t")) == {0, 1}
    assert harness.shard.initialized_partitions("g") == {}
    # Heartbeats before completion neither assign nor re-request.
    assert harness.heartbeat("g", M1, 1).assignment is None
    assert len(harness.pending_inits()) == 1
    harness.complete_inits()
    group = group_of(harness)
    assert group.group_epoch == 2
    assert harness.shard.initialized_partitions("g") == {topic_id("t"): (0, 1)}
    response = harness.heartbeat("g", M1, 1)
    assert response.member_epoch == 2
    assert assignment_of(response) == {topic_id("t"): (0, 1)}


def test_57_partition_added_to_a_known_topic_starts_at_zero(harness: Harness) -> None:
    """Conformance 57 at the shard: a topic grown from 1 to 2 partitions gets its new
    partition initialised with StartOffset 0 (the first one had -1 = latest), then
    assigned."""
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    [first] = harness.complete_inits()
    assert first.topics[0].partitions[0].start_offset == -1
    harness.settle("g", [M1])
    epoch = group_of(harness).group_epoch
    result = harness.set_topics(t=2)
    assert result.response.bumped_groups == ("g",)
    [grown] = harness.pending_inits()
    assert grown.state_epoch == epoch + 1
    assert [(p.partition, p.start_offset) for p in grown.topics[0].partitions] == [(1, 0)]
    harness.complete_inits()
    settled = harness.settle("g", [M1])
    assert group_of(harness).members[M1].assigned_partitions == {topic_id("t"): frozenset({0, 1})}
    assert settled[M1].error is None


def test_failed_initialisation_is_retried_after_the_interval(harness: Harness) -> None:
    harness.set_topics(t=2)
    harness.join("g", M1, ["t"])
    harness.complete_inits(success=False)
    group = group_of(harness)
    assert group.state_metadata.initializing == {}
    assert harness.shard.next_deadline() == 30_000
    harness.advance(5_000)
    harness.heartbeat("g", M1, group.members[M1].member_epoch)
    assert harness.pending_inits() == [], "no retry before the interval"
    assert harness.run(harness.shard.retry_initializations()).effects == ()
    harness.advance(25_000)
    retried = harness.run(harness.shard.retry_initializations())
    [init] = retried.effects
    assert isinstance(init, InitializeShareState)
    assert init.state_epoch == group_of(harness).group_epoch
    assert [p.start_offset for p in init.topics[0].partitions] == [-1, -1]
    harness.complete_inits()
    harness.settle("g", [M1])
    assert group_of(harness).members[M1].assigned_partitions == {topic_id("t"): frozenset({0, 1})}


def test_heartbeat_after_the_retry_deadline_retries(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    harness.complete_inits(success=False)
    harness.advance(30_000)
    harness.heartbeat("g", M1, group_of(harness).members[M1].member_epoch)
    assert len(harness.pending_inits()) == 1
    assert harness.shard.next_deadline() == 30_000 + 45_000  # only the session remains


def test_retry_interval_setting(make_harness: Callable[..., Harness]) -> None:
    harness = make_harness(settings=ShareGroupSettings(initialize_retry_interval_ms=1_000))
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    harness.complete_inits(success=False)
    assert harness.shard.next_deadline() == 1_000


def test_completion_of_something_not_initializing_changes_nothing(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    [init] = harness.complete_inits()
    epoch = group_of(harness).group_epoch
    again = harness.shard.complete_initialization(
        group_id="g", topic_partitions=init.partitions_by_topic(), success=True
    )
    assert again.records == () and again.response.group_epoch == epoch
    missing = harness.shard.complete_initialization(
        group_id="nope", topic_partitions={}, success=True
    )
    assert missing.response.error is ErrorCode.group_id_not_found


def test_new_topic_subscribed_later_starts_at_minus_one(harness: Harness) -> None:
    harness.set_topics(a=1, b=1)
    harness.join("g", M1, ["a"])
    harness.complete_inits()
    harness.settle("g", [M1])
    harness.heartbeat("g", M1, group_of(harness).members[M1].member_epoch, ["a", "b"])
    [init] = harness.pending_inits()
    assert [(t.topic_name, t.partitions[0].start_offset) for t in init.topics] == [("b", -1)]


def test_topic_created_after_the_subscription(harness: Harness) -> None:
    harness.set_topics()
    harness.join("g", M1, ["later"])
    assert harness.pending_inits() == []
    result = harness.set_topics(later=3)
    assert result.response.bumped_groups == ("g",)
    [init] = harness.pending_inits()
    assert init.topics[0].topic_name == "later" and len(init.topics[0].partitions) == 3
    harness.complete_inits()
    harness.settle("g", [M1])
    assert group_of(harness).members[M1].assigned_partitions == {
        topic_id("later"): frozenset(range(3))
    }


def test_deleted_topic_moves_to_deleting_and_leaves_assignments(harness: Harness) -> None:
    harness.set_topics(a=2, b=2)
    harness.join("g", M1, ["a", "b"])
    harness.complete_inits()
    harness.settle("g", [M1])
    harness.take_effects()
    result = harness.set_topics(a=2)
    assert result.response.bumped_groups == ("g",)
    [delete] = harness.take_effects()
    assert isinstance(delete, DeleteShareState) and not delete.for_group_deletion
    assert [(t.topic_name, t.partitions) for t in delete.topics] == [("b", (0, 1))]
    metadata = group_of(harness).state_metadata
    assert metadata.deleting == {topic_id("b"): "b"}
    assert topic_id("b") not in metadata.initialized
    harness.settle("g", [M1])
    assert group_of(harness).members[M1].assigned_partitions == {topic_id("a"): frozenset({0, 1})}
    done = harness.run(
        harness.shard.complete_state_deletion(group_id="g", topic_ids=[topic_id("b")], success=True)
    )
    assert done.response.error is None
    assert group_of(harness).state_metadata.deleting == {}


def test_recreated_topic_starts_afresh(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    harness.complete_inits()
    harness.settle("g", [M1])
    harness.take_effects()
    harness.recreate_topic("t", 2)
    effects = harness.take_effects()
    deletes = [e for e in effects if isinstance(e, DeleteShareState)]
    inits = [e for e in effects if isinstance(e, InitializeShareState)]
    assert [t.topic_id for d in deletes for t in d.topics] == [topic_id("t", 0)]
    assert [
        (t.topic_id, [p.start_offset for p in t.partitions]) for i in inits for t in i.topics
    ] == [(topic_id("t", 1), [-1, -1])]


def test_failed_state_deletion_keeps_the_topic_deleting(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    harness.complete_inits()
    harness.set_topics()
    failed = harness.run(
        harness.shard.complete_state_deletion(
            group_id="g", topic_ids=[topic_id("t")], success=False
        )
    )
    assert failed.records == () and failed.response.error is ErrorCode.unknown_server_error
    assert group_of(harness).state_metadata.deleting == {topic_id("t"): "t"}


def test_reload_rearms_sessions_and_reissues_pending_work(harness: Harness) -> None:
    """A restarted shard replays the log, then `on_loaded` gives every member a full
    session and re-sends initialisations and deletions that were in flight."""
    harness.set_topics(a=1, b=2)
    harness.join("g", M1, ["a", "b"])
    [init] = harness.pending_inits()
    harness.run(
        harness.shard.complete_initialization(
            group_id="g", topic_partitions={topic_id("b"): [0, 1]}, success=True
        )
    )
    harness.set_topics(a=1)  # b deleted: deleting, delete requested, never answered
    harness.advance(10_000)
    loaded = harness.new_shard()
    for record in harness.log:
        loaded.replay(record)
    assert loaded.next_deadline() is None
    loaded.on_topics_changed(topics=list(harness.cluster.values()))
    result = loaded.on_loaded(now_ms=harness.clock.monotonic_ms())
    assert result.records == ()
    assert loaded.next_deadline() == 10_000 + 45_000
    by_type = {type(e).__name__: e for e in result.effects}
    reinit = by_type["InitializeShareState"]
    assert isinstance(reinit, InitializeShareState)
    assert {t.topic_name for t in init.topics} == {"a", "b"}
    assert [(t.topic_name, [p.start_offset for p in t.partitions]) for t in reinit.topics] == [
        ("a", [-1])
    ]
    redelete = by_type["DeleteShareState"]
    assert isinstance(redelete, DeleteShareState)
    assert [(t.topic_name, t.partitions) for t in redelete.topics] == [("b", None)]


def test_empty_group_keeps_its_state_and_needs_no_initialisation(harness: Harness) -> None:
    harness.set_topics(t=1)
    harness.join("g", M1, ["t"])
    harness.complete_inits()
    harness.heartbeat("g", M1, -1)
    harness.set_topics(t=3)
    assert harness.pending_inits() == []
    assert harness.shard.initialized_partitions("g") == {topic_id("t"): (0,)}
