"""A consumer group's own consumer.session.timeout.ms and consumer.heartbeat.interval.ms
(resource type GROUP, Kafka's GroupConfig) reach the group coordinator: the heartbeat
interval members are told and the session after which a silent member expires, each
clamped into the broker's group.consumer.min/max.* bounds, the broker value otherwise."""

from __future__ import annotations

from collections.abc import Callable

from shoal.group.settings import ConsumerGroupSettings
from tests.unit.group.conftest import Harness
from tests.unit.group.test_consumer_heartbeat import A, beat

OWN = {"consumer.session.timeout.ms": 50_000, "consumer.heartbeat.interval.ms": 6_000}


def test_a_groups_own_timeouts_apply_to_its_members_only(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(group_configs={"cg": OWN})
    harness.set_topics(t=1)
    now = harness.clock.monotonic_ms()
    own = beat(harness, A, 0, ["t"], group="cg")
    other = beat(harness, A, 0, ["t"], group="other")
    assert (own.heartbeat_interval_ms, other.heartbeat_interval_ms) == (6_000, 5_000)
    assert harness.shard.consumer_session_deadline("cg", A) == now + 50_000
    assert harness.shard.consumer_session_deadline("other", A) == now + 45_000
    harness.clock.advance(46_000)  # past the broker's 45 s, within the group's 50 s
    expired = harness.run(harness.shard.expire_sessions(now_ms=harness.clock.monotonic_ms()))
    assert expired.response.expired_members == (("other", A),)


def test_a_groups_own_timeouts_are_clamped_into_the_broker_bounds(
    make_harness: Callable[..., Harness],
) -> None:
    harness = make_harness(group_configs={"cg": OWN})
    harness.shard.update_consumer_settings(
        ConsumerGroupSettings(max_session_timeout_ms=48_000, max_heartbeat_interval_ms=5_500)
    )
    harness.set_topics(t=1)
    now = harness.clock.monotonic_ms()
    assert beat(harness, A, 0, ["t"], group="cg").heartbeat_interval_ms == 5_500
    assert harness.shard.consumer_session_deadline("cg", A) == now + 48_000
