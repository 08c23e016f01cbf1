"""The sans-I/O share member (client/share_member.py) against a broker process, through
a minimal asyncio driver written here (the client's own drivers are elsewhere): it
joins, acquires from two partitions, keeps its records locked past the lock duration by
RENEW, acknowledges them, closes its session and leaves."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shoal.client import KafkaConnection
from shoal.client.ranges import Span, TopicIdPartition
from shoal.client.share_effects import (
    Acknowledged,
    Acquired,
    Closed,
    FindCoordinator,
    FindLeaders,
    Send,
)
from shoal.client.share_member import ShareMember
from shoal.client.share_requests import AcknowledgeType
from shoal.clock import SystemClock
from tests.support.broker import BrokerProcess
from tests.support.share_wire import produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, metadata_request

LOCK_MS = 1_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    overrides = ("group.share.min.record.lock.duration.ms=1000",)
    process = BrokerProcess(tmp_path_factory.mktemp("member") / "data", overrides=overrides)
    process.start()
    try:
        yield process
    finally:
        process.kill()


class Driver:
    """One connection to the coordinator, one per leader (all one broker here); the
    highest version of every call (Shoal serves them all)."""

    def __init__(
        self, member: ShareMember, bootstrap: str, leaders: dict[TopicIdPartition, int]
    ) -> None:
        self.member = member
        self.bootstrap = bootstrap
        self.leaders = leaders
        self.conns: dict[Any, KafkaConnection] = {}
        self.tasks: dict[asyncio.Task[Any], int] = {}

    async def conn(self, target: Any) -> KafkaConnection:
        if target not in self.conns:
            host, _, port = self.bootstrap.rpartition(":")
            self.conns[target] = await KafkaConnection.open(host, int(port))
        return self.conns[target]

    async def run_until(self, done: Callable[[], bool], *, timeout_s: float = 20.0) -> None:
        async with asyncio.timeout(timeout_s):
            while True:
                for effect in self.member.poll():
                    if isinstance(effect, Send):
                        conn = await self.conn(effect.target)
                        body = effect.call.build(effect.call.max_version)
                        self.tasks[asyncio.create_task(conn.request(body))] = effect.request_id
                    elif isinstance(effect, FindLeaders):
                        self.member.set_leaders({tp: self.leaders[tp] for tp in effect.partitions})
                    else:
                        assert not isinstance(effect, FindCoordinator), effect
                if done():
                    return
                deadline = self.member.next_deadline_ms()
                wait_s = 0.05
                if deadline is not None:
                    wait_s = max(0.0, min(wait_s, (deadline - SystemClock().monotonic_ms()) / 1000))
                finished, _ = await asyncio.wait(
                    self.tasks or [asyncio.create_task(asyncio.sleep(wait_s))],
                    timeout=wait_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                for task in finished:
                    request_id = self.tasks.pop(task, None)
                    if request_id is None:
                        continue
                    error = task.exception()
                    if error is None:
                        self.member.on_response(request_id, task.result())
                    else:
                        self.member.on_failure(request_id, error)

    async def result(self, ticket: int) -> Any:
        outcome: list[Any] = []

        def ready() -> bool:
            if not outcome:
                got = self.member.take_result(ticket)
                if got is not None:
                    outcome.append(got)
            return bool(outcome)

        await self.run_until(ready)
        return outcome[0]

    async def close(self) -> None:
        for conn in self.conns.values():
            await conn.close()


def test_member_acquires_renews_acknowledges_and_leaves(broker: BrokerProcess) -> None:
    topic, group = topic_name("member"), topic_name("member-group")
    topic_id = create_topic(broker.bootstrap, topic, partitions=2)
    set_group_configs(
        broker.bootstrap,
        group,
        {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_MS)},
    )
    for partition in (0, 1):
        produce_values(broker.bootstrap, topic, 5, partition=partition)
    (described,) = call1(broker.bootstrap, metadata_request(topic)).topics
    leaders = {
        TopicIdPartition(topic_id, p.partition_index): p.leader_id for p in described.partitions
    }
    member = ShareMember(
        group_id=group, member_id=uuid.uuid4().hex[:22], topics=[topic], clock=SystemClock()
    )

    async def scenario() -> None:
        driver = Driver(member, broker.bootstrap, leaders)
        try:
            await driver.run_until(lambda: member.assignment == set(leaders))
            held: dict[TopicIdPartition, tuple[Span, ...]] = {}
            while sum(s.size for spans in held.values() for s in spans) < 10:
                outcome = await driver.result(member.acquire(records_max=10, wait_ms=500))
                assert isinstance(outcome, Acquired) and not outcome.errors, outcome
                held = member.held()
            assert held == {tp: (Span(0, 4, 1),) for tp in leaders}
            assert member.lock_duration_ms == LOCK_MS
            # wait past two lock durations: RENEWs keep the records locked
            start = SystemClock().monotonic_ms()
            await driver.run_until(lambda: SystemClock().monotonic_ms() - start > 2.5 * LOCK_MS)
            assert member.take_lost() == {} and member.failure is None
            acked = await driver.result(member.acknowledge(held, AcknowledgeType.ACCEPT))
            assert acked == Acknowledged({})
            assert await driver.result(member.close()) == Closed()
            assert member.closed
        finally:
            await driver.close()

    asyncio.run(scenario())
