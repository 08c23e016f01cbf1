"""The broker's wiring without sockets: the services it hands handlers, the log change
events it subscribed (handlers no longer notify), the live config and the registry's
ApiVersions fallback."""

from __future__ import annotations

import asyncio
from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.group.committed_offsets import OffsetToCommit
from shoal.metadata.records import BROKER_RESOURCE
from shoal.server.broker import Broker
from shoal.server.handler_services import ApiRange
from shoal.server.metadata.dynamic_config import DynamicLayer
from shoal.server.registry import api_ranges, load_all_handlers
from tests.unit.log.batches import append, make_batch

API_VERSIONS_KEY = 18


async def _woken(broker: Broker, key: tuple[str, int], change: object) -> bool:
    """Park on `key`, make the change, and say whether the waiter woke."""
    waiter = asyncio.create_task(broker.purgatory.wait([key], timeout_ms=5_000))
    await asyncio.sleep(0)
    assert broker.purgatory.parked == 1
    assert callable(change)
    change()
    return await asyncio.wait_for(waiter, 1)


def test_an_append_wakes_fetches_parked_on_its_partition(broker: Broker) -> None:
    broker.logs.create_topic("t", partitions=2, configs={})
    log = broker.logs.partition("t", 1)
    assert log is not None
    assert asyncio.run(_woken(broker, ("t", 1), lambda: append(log, make_batch(1))))


def test_a_deleted_topic_wakes_fetches_of_each_partition(broker: Broker) -> None:
    broker.logs.create_topic("t", partitions=3, configs={})
    assert asyncio.run(_woken(broker, ("t", 2), lambda: broker.logs.delete_topic("t")))


def test_reconfigure_is_seen_by_services_and_listeners(broker: Broker, tmp_path: Path) -> None:
    live = broker.services.config
    heard: list[int] = []
    live.listeners.append(lambda config: heard.append(config.get_int("num.partitions")))
    asyncio.run(
        live.reconfigure(
            live.dynamic.with_layer(DynamicLayer.CLUSTER_DEFAULT, {"num.partitions": "4"})
        )
    )
    assert live.current.get_int("num.partitions") == 4
    assert broker.config is live.current
    assert heard == [4]
    assert broker.metadata.image.config(BROKER_RESOURCE, "") == {"num.partitions": "4"}


def test_node_identity_reads_the_bound_port_late(broker: Broker) -> None:
    node = broker.services.node
    assert (node.node_id, node.cluster_id) == (broker.node_id, broker.logs.cluster_id)
    broker.network.bound_ports["PLAINTEXT"] = 49_152
    assert node.port == 49_152
    assert node.endpoint("PLAINTEXT")[1] == 49_152


def test_api_versions_advertises_the_registry_and_only_it_has_a_fallback() -> None:
    handlers = load_all_handlers()
    ranges = api_ranges(handlers)
    assert [r.api_key for r in ranges] == sorted(handlers)
    assert ApiRange(API_VERSIONS_KEY, 0, 4) in ranges
    with_fallback = [h.api_key for h in handlers.values() if h.unsupported is not None]
    assert with_fallback == [API_VERSIONS_KEY]


def _commit(broker: Broker, group: str, topic: str, offset: int) -> None:
    broker.group_service.classic.commit_offsets(
        group_id=group,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=[
            OffsetToCommit(topic=topic, partition=0, offset=offset, leader_epoch=-1, metadata="")
        ],
        api_version=9,
    )


def test_a_deleted_topic_takes_every_groups_committed_offsets_with_it(broker: Broker) -> None:
    broker.logs.create_topic("t", partitions=1, configs={})
    for group in ("a", "b"):
        _commit(broker, group, "t", 3)
    classic = broker.group_service.classic
    assert classic.fetch_offsets(group_id="a", partitions=None)[1][0].offset == 3
    broker.logs.delete_topic("t")  # the log's topics-changed event reaches the coordinator
    for group in ("a", "b"):
        assert classic.fetch_offsets(group_id=group, partitions=None) == (None, ())


def test_a_window_of_commits_makes_the_consumer_offsets_pass_due(tmp_path: Path) -> None:
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        "offsets.topic.rewrite.window.records": "5",
    }
    broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
    schedule = broker.timers.schedule
    now = broker.clock.monotonic_ms()

    async def commit_five_then_fire() -> list[str]:
        schedule.next_deadline_ms(now)  # the driver's first look arms every timer
        for offset in range(4):
            _commit(broker, "g", "t", offset)
        assert schedule.next_deadline_ms(now) > now  # four appended: not yet
        _commit(broker, "g", "t", 4)
        assert schedule.next_deadline_ms(now) == now  # five: due at once (appended events)
        # in a loop: the broker's disk worker removes files; the group runtime's
        # timer runs the pass
        return schedule.fire_due(now)

    try:
        assert "group-coordinator" in asyncio.run(commit_five_then_fire())
        offsets = broker.logs.partition("__consumer_offsets", 0)
        assert offsets is not None
        assert (offsets.log_start_offset, offsets.log_end_offset) == (4, 5)
    finally:
        broker.logs.close()
