"""OffsetCommit (8) v2-v9 against a broker process: simple commits, group commits
with generation checks, metadata too large."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.classic_groups import (
    commit_request,
    join_request,
    stable_group,
    sync_request,
)
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1


@pytest.fixture(scope="module")
def topic(broker: BrokerProcess) -> str:
    """A topic with three partitions: commits to partitions that do not exist fail."""
    name = topic_name("offsets")
    create_topic(broker.bootstrap, name, partitions=3)
    return name


def errors(response: object) -> list[ErrorCode]:
    return [p.error_code for t in response.topics for p in t.partitions]  # type: ignore[attr-defined]


@pytest.mark.parametrize("version", [2, 5, 8, 9])
def test_simple_commit(broker: BrokerProcess, topic: str, version: int) -> None:
    group = topic_name("simple")
    response = call1(
        broker.bootstrap, commit_request(version, group, {(topic, 0): 5, (topic, 1): 6})
    )
    assert errors(response) == [ErrorCode.none, ErrorCode.none]


def test_group_commit_checks(broker: BrokerProcess, topic: str) -> None:
    m = stable_group(broker.bootstrap, topic_name("commit"))
    ok = commit_request(
        8, m.group_id, {(topic, 0): 1}, member_id=m.member_id, generation=m.generation
    )
    assert errors(call1(broker.bootstrap, ok)) == [ErrorCode.none]
    stale = commit_request(8, m.group_id, {(topic, 0): 1}, member_id=m.member_id, generation=0)
    assert errors(call1(broker.bootstrap, stale)) == [ErrorCode.illegal_generation]
    simple = commit_request(8, m.group_id, {(topic, 0): 1})
    assert errors(call1(broker.bootstrap, simple)) == [ErrorCode.unknown_member_id]
    big = commit_request(
        8, m.group_id, {(topic, 0): 1}, member_id=m.member_id, generation=1, metadata="x" * 5000
    )
    assert errors(call1(broker.bootstrap, big)) == [ErrorCode.offset_metadata_too_large]
    unknown = commit_request(9, topic_name("none"), {(topic, 0): 1}, member_id="m", generation=1)
    assert errors(call1(broker.bootstrap, unknown)) == [ErrorCode.group_id_not_found]


def test_partitions_that_do_not_exist(broker: BrokerProcess, topic: str) -> None:
    group = topic_name("unknown-partitions")
    request = commit_request(8, group, {(topic, 0): 1, (topic, 3): 1, (topic_name("no"), 0): 1})
    assert errors(call1(broker.bootstrap, request)) == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_or_partition,
    ]


def test_commit_after_a_fence_fails(broker: BrokerProcess, topic: str) -> None:
    """A static member replaced by a restart of its instance can no longer commit."""
    group = topic_name("fenced")
    joined = call1(broker.bootstrap, join_request(5, group, instance="i"))
    call1(
        broker.bootstrap,
        sync_request(5, group, joined.member_id, joined.generation_id, {joined.member_id: b""}),
    )
    replaced = call1(broker.bootstrap, join_request(5, group, instance="i"))
    assert replaced.error_code == ErrorCode.none and replaced.member_id != joined.member_id
    request = commit_request(
        7,
        group,
        {(topic, 0): 1},
        member_id=joined.member_id,
        generation=joined.generation_id,
        instance="i",
    )
    assert errors(call1(broker.bootstrap, request)) == [ErrorCode.fenced_instance_id]
