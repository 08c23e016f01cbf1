"""A harness that drives the group coordinator shard the way the runtime will.

`Harness.run(result)` appends the result's records to a log, replays them into the
live shard and keeps its effects; the `harness` / `make_harness` fixtures check at
teardown that a fresh shard replaying the whole log, and one replaying the log as
compaction would leave it (last record per key), reach the live shard's durable
state: replay equivalence for every test.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, TypeVar

import pytest

from shoal.clock import ManualClock
from shoal.group import GroupCoordinatorShard, ShareGroupSettings, TopicMetadata
from shoal.group.classic.groups import ClassicSettings
from shoal.group.records import CoordinatorRecord, OffsetCommitKey, RecordKey, TopicPartitions
from shoal.group.results import (
    DeleteShareState,
    Effect,
    GroupResult,
    InitializeShareState,
    ShareGroupHeartbeatResponse,
)
from shoal.group.settings import GroupConfigSource

R = TypeVar("R")

HOST = "/127.0.0.1"
_NAMESPACE = uuid.UUID("5f1c0a7e-0000-4000-8000-000000000932")


def topic_id(name: str, generation: int = 0) -> uuid.UUID:
    """A stable topic id per (name, generation); a recreated topic gets a new one."""
    return uuid.uuid5(_NAMESPACE, f"{name}/{generation}")


def assignment_of(response: ShareGroupHeartbeatResponse) -> dict[uuid.UUID, tuple[int, ...]]:
    assert response.assignment is not None, response
    return {tp.topic_id: tp.partitions for tp in response.assignment}


def as_dict(topics: Collection[TopicPartitions] | None) -> dict[uuid.UUID, tuple[int, ...]]:
    return {tp.topic_id: tp.partitions for tp in topics or ()}


def compacted(log: list[CoordinatorRecord]) -> list[CoordinatorRecord]:
    """The log after compaction: only the last record of each key, in log order."""
    last: dict[RecordKey, int] = {}
    for index, record in enumerate(log):
        last[record.key] = index
    return [record for index, record in enumerate(log) if last[record.key] == index]


def _filler_tombstone(index: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        key=OffsetCommitKey(group_id="~filler", topic="~", partition=index), value=None
    )


class Harness:
    """A shard, its record log, a manual clock and the topics of a fake cluster."""

    def __init__(
        self,
        *,
        settings: ShareGroupSettings | None = None,
        group_configs: GroupConfigSource = None,
        classic_settings: ClassicSettings | None = None,
    ) -> None:
        self.clock = ManualClock()
        self._settings = settings
        self._group_configs = group_configs
        self._classic_settings = classic_settings
        self.shard = self.new_shard()
        self.log: list[CoordinatorRecord] = []
        self.effects: list[Effect] = []
        self.cluster: dict[str, TopicMetadata] = {}
        self._generations: dict[str, int] = {}
        self._client_ids: dict[str, str] = {}

    def new_shard(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(
            clock=self.clock,
            settings=self._settings,
            group_configs=self._group_configs,
            classic_settings=self._classic_settings,
        )

    # ---- driving ------------------------------------------------------------------

    def run(self, result: GroupResult[R]) -> GroupResult[R]:
        for record in result.records:
            self.write(record)
        self.effects.extend(result.effects)
        return result

    def write(self, record: CoordinatorRecord) -> None:
        """Append and replay a record written by someone else (another group type).
        The log's index is the record's offset (one partition)."""
        self.log.append(record)
        self.shard.replay(record, len(self.log) - 1)

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        subscribed: Collection[str] | None = None,
        *,
        rack_id: str | None = None,
        client_id: str | None = None,
    ) -> ShareGroupHeartbeatResponse:
        """One heartbeat; the client id defaults to the member's previous one."""
        if client_id is None:
            client_id = self._client_ids.get(member_id, "rdkafka")
        self._client_ids[member_id] = client_id
        return self.run(
            self.shard.share_group_heartbeat(
                group_id=group_id,
                member_id=member_id,
                member_epoch=member_epoch,
                rack_id=rack_id,
                subscribed_topic_names=subscribed,
                client_id=client_id,
                client_host=HOST,
                now_ms=self.clock.monotonic_ms(),
            )
        ).response

    def join(
        self, group_id: str, member_id: str, subscribed: Collection[str]
    ) -> ShareGroupHeartbeatResponse:
        response = self.heartbeat(group_id, member_id, 0, subscribed)
        assert response.error is None, response
        return response

    def settle(
        self, group_id: str, member_ids: Collection[str]
    ) -> dict[str, ShareGroupHeartbeatResponse]:
        """Heartbeat every member at its epoch until nobody's epoch moves."""
        last: dict[str, ShareGroupHeartbeatResponse] = {}
        for _ in range(10):
            moved = False
            for member_id in member_ids:
                group = self.shard.share_group(group_id)
                assert group is not None
                epoch = group.members[member_id].member_epoch
                response = self.heartbeat(group_id, member_id, epoch)
                assert response.error is None, response
                moved |= response.member_epoch != epoch
                last[member_id] = response
            if not moved:
                return last
        raise AssertionError("group did not settle")

    def set_topics(self, **partition_counts: int) -> GroupResult[Any]:
        """Set the cluster to exactly these topics (name=partition count)."""
        self.cluster = {
            name: TopicMetadata(
                topic_id=topic_id(name, self._generations.get(name, 0)),
                name=name,
                partition_count=count,
            )
            for name, count in partition_counts.items()
        }
        return self.publish()

    def recreate_topic(self, name: str, partition_count: int) -> GroupResult[Any]:
        self._generations[name] = self._generations.get(name, 0) + 1
        self.cluster[name] = TopicMetadata(
            topic_id=topic_id(name, self._generations[name]),
            name=name,
            partition_count=partition_count,
        )
        return self.publish()

    def publish(self) -> GroupResult[Any]:
        return self.run(
            self.shard.on_topics_changed(
                topics=list(self.cluster.values()), now_ms=self.clock.monotonic_ms()
            )
        )

    def take_effects(self) -> list[Effect]:
        taken, self.effects = self.effects, []
        return taken

    def pending_inits(self) -> list[InitializeShareState]:
        return [e for e in self.effects if isinstance(e, InitializeShareState)]

    def pending_deletes(self) -> list[DeleteShareState]:
        return [e for e in self.effects if isinstance(e, DeleteShareState)]

    def complete_inits(self, *, success: bool = True) -> list[InitializeShareState]:
        """Answer every pending initialisation (and any it causes) as the persister would."""
        done: list[InitializeShareState] = []
        while inits := self.pending_inits():
            self.effects = [e for e in self.effects if not isinstance(e, InitializeShareState)]
            for effect in inits:
                done.append(effect)
                self.run(
                    self.shard.complete_initialization(
                        group_id=effect.group_id,
                        topic_partitions=effect.partitions_by_topic(),
                        success=success,
                        now_ms=self.clock.monotonic_ms(),
                    )
                )
            if not success:
                break
        return done

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    # ---- checking -----------------------------------------------------------------

    def assert_replay_equivalent(self) -> None:
        """A fresh shard equals the live one after replaying the whole log, the log
        as compaction would leave it, and the log as pruning leaves it; then again
        after every live key was re-written (log bound, group/log_bound.py), which
        must not change the live state either."""
        live = self.shard.durable_state()
        self._assert_equivalent(live)
        # Push every live key out of the window: tombstones of keys never written
        # (replay ignores them, and they are not live keys).
        for index in range(self.shard.log_keys.live_keys()):
            self.write(_filler_tombstone(index))
        rewrite = self.shard.rewrite_old_records(window_records=0, records_max=10**9)
        if self.shard.prune_offset() is not None:  # every live key's offset is known
            assert rewrite.response == self.shard.log_keys.live_keys()
        self.run(rewrite)
        assert self.shard.durable_state() == live
        self._assert_equivalent(live)

    def maintain_log(self, *, window_records: int, records_max: int) -> None:
        """A `__consumer_offsets` maintenance pass: re-write old keys (the state must
        not change), then check that a shard loaded from the log as pruning leaves it
        (from `prune_offsets`, with offsets, as the broker reloads) equals the live one."""
        live = self.shard.durable_state()
        self.run(
            self.shard.rewrite_old_records(window_records=window_records, records_max=records_max)
        )
        assert self.shard.durable_state() == live
        start = self.shard.prune_offset() or 0
        pruned = self.new_shard()
        for offset, record in enumerate(self.log[start:], start):
            pruned.replay(record, offset)
        assert pruned.durable_state() == live

    def _assert_equivalent(self, live: object) -> None:
        start = self.shard.prune_offset() or 0
        for log in (self.log, compacted(self.log), self.log[start:]):
            fresh = self.new_shard()
            for record in log:
                fresh.replay(record)
            assert fresh.durable_state() == live


@pytest.fixture
def make_harness() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(**kwargs: Any) -> Harness:
        harness = Harness(**kwargs)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.assert_replay_equivalent()


@pytest.fixture
def harness(make_harness: Callable[..., Harness]) -> Harness:
    return make_harness()


def group_configs(table: Mapping[str, Mapping[str, object]]) -> GroupConfigSource:
    return table
