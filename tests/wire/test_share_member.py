"""The sans-I/O share member (client/share_member.py) against a broker process, driven by
the client's `ShareRunner` (share_runner.py): it joins, acquires from
two partitions, keeps its records locked past the lock duration by RENEW, acknowledges
them, closes its session and leaves."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from shoal.client import AsyncClient
from shoal.client.ranges import Span, TopicIdPartition
from shoal.client.requests import metadata
from shoal.client.share_effects import Acknowledged, Closed
from shoal.client.share_member import ShareMember
from shoal.client.share_runner import ShareRunner
from shoal.clock import SystemClock
from shoal.protocol.share import AcknowledgeType
from tests.support.broker import BrokerProcess, running
from tests.support.share_wire import produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

LOCK_MS = 1_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("member") / "data", "group.share.min.record.lock.duration.ms=1000"
    )


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
    (described,) = call1(broker.bootstrap, metadata([topic])).topics
    leaders = {
        TopicIdPartition(topic_id, p.partition_index): p.leader_id for p in described.partitions
    }
    member = ShareMember(
        group_id=group, member_id=uuid.uuid4().hex[:22], topics=[topic], clock=SystemClock()
    )

    async def scenario() -> None:
        async with AsyncClient(broker.bootstrap) as client, ShareRunner(member, client) as runner:
            assert await runner.wait_for(
                lambda: member.assignment == set(leaders), timeout_ms=30_000
            )
            held: dict[TopicIdPartition, tuple[Span, ...]] = {}
            while sum(s.size for spans in held.values() for s in spans) < 10:
                outcome = await runner.acquire(records_max=10, wait_ms=500)
                assert not outcome.errors, outcome
                held = member.held()
            assert held == {tp: (Span(0, 4, 1),) for tp in leaders}
            assert member.lock_duration_ms == LOCK_MS
            # wait past two lock durations: RENEWs keep the records locked
            await asyncio.sleep(2.5 * LOCK_MS / 1000)
            assert member.take_lost() == {} and member.failure is None
            acked = await runner.acknowledge(held, AcknowledgeType.ACCEPT)
            assert acked == Acknowledged({})
            assert await runner.close() == Closed()
            assert member.closed

    asyncio.run(scenario())
