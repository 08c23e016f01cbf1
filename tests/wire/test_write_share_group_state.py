"""WriteShareGroupState (85) v0-v1 against a broker process (read back with
ReadShareGroupState and ReadShareGroupStateSummary).

Conformance (docs/design/conformance.md): 63 (write of an uninitialised key ->
INVALID_REQUEST), 64 (lower leader or state epoch -> FENCED_*), 65 (a start offset
below the stored one keeps the stored one), 68 (the merge: 0-20 AVAILABLE dc1 +
11-20 ARCHIVED dc1 at start 5 -> 5-10 AVAILABLE, 11-20 ARCHIVED); v1's
DeliveryCompleteCount reaches the summary; invalid state batches -> INVALID_REQUEST.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.share_admin import state_request, state_results
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

INITIALIZE, READ, WRITE, SUMMARY = 83, 84, 85, 87
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


def one(
    broker: BrokerProcess,
    api_key: int,
    group: str,
    topic_id: uuid.UUID,
    version: int = 0,
    **fields: Any,
) -> Any:
    request = state_request(
        api_key, group, {topic_id: [{"partition": 0, **fields}]}, version=version
    )
    [result] = state_results(call1(broker.bootstrap, request)).values()
    return result


def initialized(
    broker: BrokerProcess, *, state_epoch: int = 1, start_offset: int = 0
) -> tuple[str, uuid.UUID]:
    topic_id = create_topic(broker.bootstrap, topic_name("wsgs"))
    group = topic_name("wsgs-group")
    result = one(
        broker, INITIALIZE, group, topic_id, state_epoch=state_epoch, start_offset=start_offset
    )
    assert result.error_code == ErrorCode.none
    return group, topic_id


def write(
    broker: BrokerProcess, group: str, topic_id: uuid.UUID, *, version: int = 1, **fields: Any
) -> int:
    values: Mapping[str, Any] = {
        "state_epoch": 1,
        "leader_epoch": 0,
        "start_offset": -1,
        "state_batches": (),
        **fields,
    }
    return int(one(broker, WRITE, group, topic_id, version=version, **values).error_code)


def batches(
    broker: BrokerProcess, group: str, topic_id: uuid.UUID, leader_epoch: int = 0
) -> tuple[int, list[tuple[int, int, int, int]]]:
    result = one(broker, READ, group, topic_id, leader_epoch=leader_epoch)
    assert result.error_code == ErrorCode.none, result
    return int(result.start_offset), [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in result.state_batches
    ]


def test_68_merge_of_overlapping_batches(broker: BrokerProcess) -> None:
    group, topic_id = initialized(broker)
    assert (
        write(broker, group, topic_id, start_offset=0, state_batches=[(0, 20, AVAILABLE, 1)])
        == ErrorCode.none
    )
    assert (
        write(broker, group, topic_id, start_offset=5, state_batches=[(11, 20, ARCHIVED, 1)])
        == ErrorCode.none
    )
    assert batches(broker, group, topic_id) == (5, [(5, 10, AVAILABLE, 1), (11, 20, ARCHIVED, 1)])


def test_63_64_65_uninitialised_fenced_and_start_offset_regression(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("wsgs-u"))
    assert write(broker, topic_name("wsgs-group"), topic_id) == ErrorCode.invalid_request
    group, topic_id = initialized(broker, state_epoch=2, start_offset=10)
    assert one(broker, READ, group, topic_id, leader_epoch=3).error_code == ErrorCode.none
    assert write(broker, group, topic_id, state_epoch=2, leader_epoch=2) == (
        ErrorCode.fenced_leader_epoch
    )
    assert write(broker, group, topic_id, state_epoch=1, leader_epoch=3) == (
        ErrorCode.fenced_state_epoch
    )
    assert write(broker, group, topic_id, state_epoch=2, leader_epoch=3, start_offset=4) == (
        ErrorCode.none
    )
    assert batches(broker, group, topic_id, leader_epoch=3)[0] == 10, "never moves back"


def test_v1_delivery_complete_count_reaches_the_summary(broker: BrokerProcess) -> None:
    group, topic_id = initialized(broker)
    assert (
        write(
            broker,
            group,
            topic_id,
            start_offset=3,
            delivery_complete_count=2,
            state_batches=[(3, 4, ACKNOWLEDGED, 1)],
        )
        == ErrorCode.none
    )
    summary = one(broker, SUMMARY, group, topic_id, version=1, leader_epoch=0)
    assert (summary.start_offset, summary.delivery_complete_count) == (3, 2)
    assert write(broker, group, topic_id, version=0, start_offset=5) == ErrorCode.none
    summary = one(broker, SUMMARY, group, topic_id, version=1, leader_epoch=0)
    assert (summary.start_offset, summary.delivery_complete_count) == (5, 2), "v0: count kept"


@pytest.mark.parametrize(
    ("case", "fields"),
    [
        ("last before first", {"state_batches": [(5, 4, AVAILABLE, 1)]}),
        ("negative offset", {"state_batches": [(-1, 4, AVAILABLE, 1)]}),
        ("acquired is not persisted", {"state_batches": [(0, 4, 1, 1)]}),
        ("negative delivery count", {"state_batches": [(0, 4, AVAILABLE, -1)]}),
        ("negative state epoch", {"state_epoch": -1}),
        ("negative leader epoch", {"leader_epoch": -1}),
    ],
)
def test_invalid_writes(broker: BrokerProcess, case: str, fields: dict[str, Any]) -> None:
    group, topic_id = initialized(broker)
    assert write(broker, group, topic_id, **fields) == ErrorCode.invalid_request, case
    assert batches(broker, group, topic_id) == (0, []), "nothing written"
