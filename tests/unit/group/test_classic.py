"""Classic groups on the shard, with a manual clock: join, sync, heartbeat, leave,
the rebalance delay, session expiry, static members, fencing, generations, offsets,
the group-id namespace, and replay equal to live."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from shoal.coordinator import CoordinatorRuntime, InMemoryRecordSink
from shoal.group import GroupCoordinatorShard
from shoal.group import records as r
from shoal.group.classic.groups import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    ClassicSettings,
)
from shoal.group.classic.state import (
    EMPTY,
    JoinRequest,
    JoinResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    classic_result,
    completions_of,
    parked_member,
)
from shoal.group.committed_offsets import OffsetToCommit
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode

DELAY_MS = 3_000
SESSION_MS = 10_000
REBALANCE_MS = 30_000
RANGE = ("range", b"range-meta")
ROUNDROBIN = ("roundrobin", b"rr-meta")


class Classic:
    """A shard driven through the runtime (records written, then replayed), with
    parked answers collected from completions."""

    def __init__(self, **settings: Any) -> None:
        self.now = 0
        counter = itertools.count(1)
        self.sink: InMemoryRecordSink[r.CoordinatorRecord] = InMemoryRecordSink()
        self.settings = ClassicSettings(**settings)
        self._ids = lambda client: f"{client}-{next(counter)}"
        self.runtime: CoordinatorRuntime[GroupCoordinatorShard, r.CoordinatorRecord] = (
            CoordinatorRuntime(new_shard=lambda _p: self._shard(), sinks=[self.sink])
        )
        self.joins: dict[str, JoinResponse] = {}
        self.syncs: dict[str, SyncResponse] = {}

    def _shard(self) -> GroupCoordinatorShard:
        from shoal.clock import ManualClock

        shard = GroupCoordinatorShard(clock=ManualClock(), classic_settings=self.settings)
        shard.classic.groups.new_member_id = self._ids  # deterministic member ids
        return shard

    @property
    def classic(self) -> Any:
        return self.runtime.shard_at(0).classic

    def apply(self, result: GroupResult[Any]) -> Any:
        response = self.runtime.write(0, lambda _shard: result).response
        for c in completions_of(result):
            if c.join is not None:
                self.joins[c.member_id] = c.join
            if c.sync is not None:
                self.syncs[c.member_id] = c.sync
        return response

    def join(
        self,
        member_id: str = "",
        *,
        client: str = "c",
        instance: str | None = None,
        protocols: Sequence[tuple[str, bytes]] = (RANGE,),
        group: str = "g",
        version: int = 5,
        session_ms: int = SESSION_MS,
    ) -> JoinResponse | None:
        result = self.classic.join(
            JoinRequest(
                group_id=group,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type="consumer",
                protocols=protocols,
                session_timeout_ms=session_ms,
                rebalance_timeout_ms=REBALANCE_MS,
                client_id=client,
                client_host="/127.0.0.1",
                api_version=version,
            ),
            now_ms=self.now,
        )
        response = self.apply(result)
        if response is None:
            assert parked_member(result) is not None
        return response  # type: ignore[no-any-return]

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance: str | None = None,
    ) -> SyncResponse | None:
        return self.apply(  # type: ignore[no-any-return]
            self.classic.sync(
                SyncRequest(
                    group_id="g",
                    member_id=member_id,
                    generation_id=generation,
                    group_instance_id=instance,
                    protocol_type="consumer",
                    protocol_name=None,
                    assignments=assignments or {},
                ),
                now_ms=self.now,
            )
        )

    def heartbeat(
        self, member_id: str, generation: int, *, instance: str | None = None
    ) -> ErrorCode | None:
        return self.classic.heartbeat(  # type: ignore[no-any-return]
            group_id="g",
            member_id=member_id,
            generation_id=generation,
            group_instance_id=instance,
            now_ms=self.now,
        )

    def advance(self, ms: int) -> tuple[tuple[str, str], ...]:
        self.now += ms
        return self.apply(self.classic.groups.expire(now_ms=self.now))  # type: ignore[no-any-return]

    def state(self, group: str = "g") -> str:
        return self.classic.groups.state_of(group)  # type: ignore[no-any-return]

    def stable_pair(self) -> tuple[str, str]:
        """Two members (leader first) in a Stable group at generation 1."""
        assert self.join(client="a", version=3) is None
        assert self.join(client="b", version=3) is None
        self.advance(DELAY_MS)  # b arrived during the delay: extended once
        self.advance(DELAY_MS)
        leader, follower = "a-1", "b-2"
        assert self.joins[leader].generation_id == 1
        assert self.sync(follower, 1) is None
        self.sync(leader, 1, {leader: b"A", follower: b"B"})
        assert self.state() == STABLE
        return leader, follower


@pytest.fixture
def c() -> Iterator[Classic]:
    harness = Classic(initial_rebalance_delay_ms=DELAY_MS, max_size=3)
    yield harness
    # Replay equals live: a shard loaded from the log stores the same groups and
    # offsets, and rebuilds a settled group with the same members and generation.
    loaded = harness.runtime.load_partition(0, enumerate(harness.sink.records))
    loaded.on_loaded(now_ms=harness.now)
    assert loaded.durable_state().classic == harness.runtime.shard_at(0).durable_state().classic
    for group_id, group in harness.classic.groups.groups.items():
        if group.state in (STABLE, EMPTY) and group_id in harness.classic.groups.stored:
            again = loaded.classic.groups.groups[group_id]
            assert (again.generation, again.leader_id, set(again.members)) == (
                group.generation,
                group.leader_id,
                set(group.members),
            )
            assert {m: x.assignment for m, x in again.members.items()} == {
                m: x.assignment for m, x in group.members.items()
            }
    # Re-writing every live key (the log bound) changes nothing, and a shard loaded
    # from the log as pruning then leaves it stores the same groups and offsets.
    shard = harness.runtime.shard_at(0)
    before = shard.durable_state().classic
    harness.runtime.write(
        0, lambda _shard: shard.rewrite_old_records(window_records=0, records_max=10**9)
    )
    assert shard.durable_state().classic == before
    start = shard.prune_offset() or 0
    kept = harness.sink.records[start:]
    pruned = harness.runtime.load_partition(0, enumerate(kept, start))
    assert pruned.durable_state().classic == before


def test_v4_new_member_gets_its_id_first(c: Classic) -> None:
    first = c.join(version=4)
    assert first is not None and first.error == ErrorCode.member_id_required
    assert first.member_id == "c-1"
    assert c.join(first.member_id, version=4) is None  # parked until the join completes
    assert c.state() == PREPARING_REBALANCE


def test_initial_delay_then_leader_gets_the_members(c: Classic) -> None:
    assert c.join(client="a", version=3) is None
    c.advance(DELAY_MS - 1)
    assert c.joins == {}
    assert c.join(client="b", version=3) is None  # a new member extends the delay
    c.advance(1)
    assert c.joins == {}
    c.advance(DELAY_MS)
    leader, follower = c.joins["a-1"], c.joins["b-2"]
    assert (leader.generation_id, leader.leader, leader.protocol_name) == (1, "a-1", "range")
    assert [m.member_id for m in leader.members] == ["a-1", "b-2"]
    assert follower.members == () and follower.leader == "a-1"
    assert c.state() == COMPLETING_REBALANCE


def test_follower_sync_waits_for_the_leader(c: Classic) -> None:
    leader, follower = c.stable_pair()
    assert c.syncs[follower].assignment == b"B"
    stored = c.classic.groups.stored["g"]
    assert (stored.generation, stored.leader, stored.protocol) == (1, leader, "range")
    assert {m.member_id: m.assignment for m in stored.members} == {leader: b"A", follower: b"B"}
    sync = c.sync(follower, 1)  # in Stable: answered at once
    assert sync is not None and sync.assignment == b"B"


def test_heartbeat_errors(c: Classic) -> None:
    leader, follower = c.stable_pair()
    assert c.heartbeat(leader, 1) is None
    assert c.heartbeat(leader, 0) == ErrorCode.illegal_generation
    assert c.heartbeat("nobody", 1) == ErrorCode.unknown_member_id
    assert c.join(client="new", version=3) is None  # a third member: rebalance
    assert c.heartbeat(follower, 1) == ErrorCode.rebalance_in_progress


def test_rebalance_completes_when_everyone_rejoined(c: Classic) -> None:
    leader, follower = c.stable_pair()
    assert c.join(leader, protocols=(RANGE,)) is None  # the leader rejoins: rebalance
    assert c.state() == PREPARING_REBALANCE
    assert c.join(follower) is not None  # the last one in completes the join
    assert c.joins[leader].generation_id == 2
    assert c.state() == COMPLETING_REBALANCE


def test_rebalance_timeout_removes_members_that_did_not_rejoin(c: Classic) -> None:
    leader, _follower = c.stable_pair()
    assert c.join(leader) is None
    c.advance(REBALANCE_MS)
    assert c.joins[leader].generation_id == 2
    assert set(c.classic.groups.groups["g"].members) == {leader}


def test_session_expiry_removes_the_member_and_rebalances(c: Classic) -> None:
    leader, follower = c.stable_pair()
    c.advance(SESSION_MS // 2)
    assert c.heartbeat(leader, 1) is None
    expired = c.advance(SESSION_MS // 2)
    assert expired == (("g", follower),)
    assert c.state() == PREPARING_REBALANCE
    assert c.heartbeat(leader, 1) == ErrorCode.rebalance_in_progress
    assert c.join(leader) is not None  # alone now: completes at once
    assert c.heartbeat(follower, 2) == ErrorCode.unknown_member_id


def test_batch_leave_and_the_empty_group_bumps_its_generation(c: Classic) -> None:
    leader, follower = c.stable_pair()
    response = c.apply(
        c.classic.leave(
            group_id="g",
            members=(
                LeavingMember(member_id=leader, group_instance_id=None),
                LeavingMember(member_id="ghost", group_instance_id=None),
                LeavingMember(member_id=follower, group_instance_id=None),
            ),
            now_ms=c.now,
        )
    )
    assert [error for _, error in response.members] == [None, ErrorCode.unknown_member_id, None]
    assert c.state() == EMPTY
    stored = c.classic.groups.stored["g"]
    assert (stored.generation, stored.members, stored.protocol) == (2, (), None)


def test_static_member_replaced_without_rebalance_and_old_id_fenced(c: Classic) -> None:
    assert c.join(client="a", instance="ia", version=5) is None
    assert c.join(client="b", instance="ib", version=5) is None
    c.advance(DELAY_MS)
    c.advance(DELAY_MS)
    c.sync("b-2", 1)
    c.sync("a-1", 1, {"a-1": b"A", "b-2": b"B"})
    again = c.join(client="b", instance="ib", version=5)
    assert again is not None and again.error is None
    assert (again.member_id, again.generation_id) == ("b-3", 1)
    assert c.state() == STABLE
    assert c.heartbeat("b-2", 1, instance="ib") == ErrorCode.fenced_instance_id
    sync = c.sync("b-3", 1, instance="ib")
    assert sync is not None and sync.assignment == b"B"
    assert {m.member_id for m in c.classic.groups.stored["g"].members} == {"a-1", "b-3"}


def test_static_leader_rejoin_v9_skips_assignment(c: Classic) -> None:
    assert c.join(client="a", instance="ia", version=9) is None
    c.advance(DELAY_MS)
    c.sync("a-1", 1, {"a-1": b"A"})
    again = c.join(client="a", instance="ia", version=9)
    assert again is not None and again.skip_assignment and again.leader == again.member_id


def test_group_max_size(c: Classic) -> None:
    for client in "abc":
        assert c.join(client=client, version=3) is None
    full = c.join(client="d", version=3)
    assert full is not None and full.error == ErrorCode.group_max_size_reached


def test_protocol_rules(c: Classic) -> None:
    assert c.join(client="a", protocols=(ROUNDROBIN, RANGE), version=3) is None
    assert c.join(client="b", protocols=(RANGE, ROUNDROBIN), version=3) is None
    assert c.join(client="x", protocols=(("sticky", b""),), version=3) is not None
    refused = c.join(client="y", protocols=(("sticky", b""),), version=3)
    assert refused is not None and refused.error == ErrorCode.inconsistent_group_protocol
    c.advance(DELAY_MS)
    c.advance(DELAY_MS)
    assert c.joins["a-1"].protocol_name in ("range", "roundrobin")


def test_session_timeout_bounds(c: Classic) -> None:
    low = c.join(session_ms=1)
    high = c.join(session_ms=10**9)
    assert low is not None and low.error == ErrorCode.invalid_session_timeout
    assert high is not None and high.error == ErrorCode.invalid_session_timeout


def _commit(c: Classic, member: str, generation: int, offset: int, **kw: Any) -> list[Any]:
    result = c.classic.commit_offsets(
        group_id=kw.get("group", "g"),
        member_id=member,
        generation_id=generation,
        group_instance_id=None,
        offsets=(
            OffsetToCommit(
                topic="t",
                partition=0,
                offset=offset,
                leader_epoch=kw.get("epoch", -1),
                metadata=kw.get("metadata", "m"),
            ),
        ),
        api_version=kw.get("version", 8),
        now_ms=c.now,
    )
    return [p.error for p in c.runtime.write(0, lambda _shard: result).response]


def test_offset_commit_generation_checks_and_fetch(c: Classic) -> None:
    leader, _follower = c.stable_pair()
    assert _commit(c, leader, 1, 42, epoch=3) == [None]
    assert _commit(c, leader, 0, 43) == [ErrorCode.illegal_generation]
    assert _commit(c, "ghost", 1, 43) == [ErrorCode.unknown_member_id]
    assert _commit(c, "", -1, 43) == [ErrorCode.unknown_member_id]  # group has members
    assert _commit(c, leader, 1, 44, metadata="x" * 5000) == [ErrorCode.offset_metadata_too_large]
    error, fetched = c.classic.fetch_offsets(group_id="g", partitions=[("t", 0), ("t", 1)])
    assert error is None
    assert [(f.offset, f.leader_epoch, f.metadata) for f in fetched] == [
        (42, 3, "m"),
        (-1, -1, ""),
    ]


def test_simple_commit_creates_an_empty_group(c: Classic) -> None:
    assert _commit(c, "", -1, 7, group="simple") == [None]
    assert c.classic.group_type("simple") == "classic"
    listed = c.classic.list_groups(states_filter=(), types_filter=())
    assert [(g.group_id, g.group_state, g.group_type) for g in listed] == [
        ("simple", "Empty", "classic")
    ]
    assert _commit(c, "m", 1, 7, group="nope") == [ErrorCode.illegal_generation]
    assert _commit(c, "m", 1, 7, group="nope", version=9) == [ErrorCode.group_id_not_found]


def test_offset_delete_refuses_subscribed_topics_and_group_delete(c: Classic) -> None:
    assert _commit(c, "", -1, 7, group="simple") == [None]
    error, result = c.classic.delete_offsets(group_id="simple", partitions=[("t", 0)])
    assert error is None and [
        p.error for p in c.runtime.write(0, lambda _shard: result).response
    ] == [None]
    assert c.classic.fetch_offsets(group_id="simple", partitions=[("t", 0)])[1][0].offset == -1
    error, _ = c.classic.delete_offsets(group_id="unknown", partitions=[("t", 0)])
    assert error == ErrorCode.group_id_not_found


def test_one_id_is_one_group_type() -> None:
    from shoal.clock import ManualClock

    shard = GroupCoordinatorShard(clock=ManualClock())
    shard.replay(
        r.CoordinatorRecord(
            key=r.ShareGroupMetadataKey(group_id="s"),
            value=r.ShareGroupMetadataValue(epoch=1, metadata_hash=0),
        )
    )
    join = shard.classic.join(
        JoinRequest(
            group_id="s",
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(RANGE,),
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            client_id="c",
            client_host="h",
            api_version=5,
        ),
        now_ms=0,
    )
    assert join.response is not None
    assert join.response.error == ErrorCode.inconsistent_group_protocol
    assert shard.classic.fetch_offsets(group_id="s", partitions=None)[0] == (
        ErrorCode.group_id_not_found
    )
    shard.replay(
        r.CoordinatorRecord(
            key=r.OffsetCommitKey(group_id="k", topic="t", partition=0),
            value=r.OffsetCommitValue(offset=1, leader_epoch=-1, metadata="", commit_timestamp=0),
        )
    )
    heartbeat = shard.share_group_heartbeat(
        group_id="k",
        member_id="m" * 22,
        member_epoch=0,
        rack_id=None,
        subscribed_topic_names=["t"],
        client_id="c",
        client_host="h",
        now_ms=0,
    )
    assert heartbeat.response.error == ErrorCode.group_id_not_found
    assert shard.group_type("k") == "classic"


def test_records_have_kafkas_bytes() -> None:
    """OffsetCommitValue v3 and GroupMetadataValue v3 are not flexible."""
    key, value = r.CODEC.encode(
        r.CoordinatorRecord(
            key=r.OffsetCommitKey(group_id="g", topic="t", partition=1),
            value=r.OffsetCommitValue(offset=5, leader_epoch=-1, metadata="", commit_timestamp=7),
        )
    )
    assert key.hex() == "0001" + "00016700017400000001"
    assert value is not None
    assert value.hex() == "0003" + "0000000000000005" + "ffffffff" + "0000" + "0000000000000007"


def test_missing_leader_sync_removes_the_silent_and_rebalances(c: Classic) -> None:
    assert c.join(client="a", version=3) is None
    assert c.join(client="b", version=3) is None
    c.advance(DELAY_MS)
    c.advance(DELAY_MS)
    assert c.state() == COMPLETING_REBALANCE
    assert c.sync("b-2", 1) is None  # the follower waits; the leader never syncs
    for _ in range(REBALANCE_MS // 5_000):  # both stay alive meanwhile
        assert c.heartbeat("a-1", 1) is None and c.heartbeat("b-2", 1) is None
        c.advance(5_000)
    assert c.syncs["b-2"].error == ErrorCode.rebalance_in_progress
    assert set(c.classic.groups.groups["g"].members) == {"b-2"}  # the leader is gone
    assert c.state() == PREPARING_REBALANCE
    assert c.join("b-2") is not None  # alone: the join completes at once
    assert c.state() == COMPLETING_REBALANCE


def test_offsets_only_group_is_described_empty(c: Classic) -> None:
    assert _commit(c, "", -1, 7, group="simple") == [None]
    (described,) = c.classic.describe(["simple"])
    assert (described.state, described.members) == ("Empty", ())


def test_offsets_retention_only_for_groups_without_members(c: Classic) -> None:
    retention = 60_000
    leader, _follower = c.stable_pair()
    committed_at = c.now  # the harness passes its time as the commit timestamp
    assert _commit(c, leader, 1, 5) == [None]
    assert _commit(c, "", -1, 7, group="simple") == [None]
    due = committed_at + retention
    assert c.classic.expire_offsets(now_ms=due - 1, retention_ms=retention) == ()
    records = c.apply(
        classic_result(
            records=c.classic.expire_offsets(now_ms=due, retention_ms=retention),
            response=None,
        )
    )
    assert records is None
    assert c.classic.fetch_offsets(group_id="simple", partitions=None)[1] == ()
    assert not c.classic.has_group("simple")  # no offsets, no members: gone
    assert c.classic.fetch_offsets(group_id="g", partitions=[("t", 0)])[1][0].offset == 5


def test_settings_are_kafkas_defaults_and_configurable() -> None:
    from shoal.config import BrokerConfig, ConfigError

    defaults = ClassicSettings.from_config(BrokerConfig.from_raw({}))
    assert defaults == ClassicSettings()
    assert (defaults.initial_rebalance_delay_ms, defaults.min_session_timeout_ms) == (3_000, 6_000)
    assert (defaults.max_session_timeout_ms, defaults.max_size) == (1_800_000, 2**31 - 1)
    small = BrokerConfig.from_raw({"group.max.size": "2", "group.initial.rebalance.delay.ms": "0"})
    assert ClassicSettings.from_config(small).max_size == 2
    with pytest.raises(ConfigError, match=r"group\.max\.size"):
        BrokerConfig.from_raw({"group.max.size": "0"})
    assert BrokerConfig.from_raw({}).get_int("offsets.retention.minutes") == 7 * 24 * 60
