"""InitializeShareGroupState (83) v0 against a broker process.

Conformance (docs/design/conformance.md): 67 (wire half: the same epoch and start
offset is a no-op, a new start offset replaces the state), docs/design/coordinators.md §2.3 items
1 and 6 (a lower StateEpoch is FENCED_STATE_EPOCH; empty group id, null topic id,
negative partition or epoch -> INVALID_REQUEST; unknown topic id or partition ->
UNKNOWN_TOPIC_OR_PARTITION), every requested partition answered; `share.version`=0
answers UNSUPPORTED_VERSION per partition.
"""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.share_admin import state_request, state_results
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

INITIALIZE, READ = 83, 84


def initialize(
    broker: BrokerProcess, group: str, topic_id: uuid.UUID | None, **fields: int
) -> tuple[int, str | None]:
    request = state_request(INITIALIZE, group, {topic_id: [fields]})
    [result] = state_results(call1(broker.bootstrap, request)).values()
    return int(result.error_code), result.error_message


def read(broker: BrokerProcess, group: str, topic_id: uuid.UUID) -> tuple[int, int, int]:
    request = state_request(READ, group, {topic_id: [{"partition": 0, "leader_epoch": 0}]})
    [result] = state_results(call1(broker.bootstrap, request)).values()
    return int(result.error_code), int(result.state_epoch), int(result.start_offset)


def test_initialize_then_read(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("isgs"))
    group = topic_name("isgs-group")
    assert initialize(broker, group, topic_id, partition=0, state_epoch=3, start_offset=7) == (
        ErrorCode.none,
        None,
    )
    assert read(broker, group, topic_id) == (ErrorCode.none, 3, 7)
    again = initialize(broker, group, topic_id, partition=0, state_epoch=3, start_offset=7)
    assert again == (ErrorCode.none, None), "same epoch and start: a no-op"
    moved = initialize(broker, group, topic_id, partition=0, state_epoch=3, start_offset=2)
    assert moved == (ErrorCode.none, None)
    assert read(broker, group, topic_id) == (ErrorCode.none, 3, 2)
    fenced = initialize(broker, group, topic_id, partition=0, state_epoch=2, start_offset=0)
    assert fenced[0] == ErrorCode.fenced_state_epoch and fenced[1]
    assert read(broker, group, topic_id) == (ErrorCode.none, 3, 2), "unchanged"


@pytest.mark.parametrize(
    ("case", "partition", "state_epoch", "expected"),
    [
        ("negative partition", -1, 0, ErrorCode.invalid_request),
        ("negative state epoch", 0, -1, ErrorCode.invalid_request),
        ("partition beyond the topic", 2, 0, ErrorCode.unknown_topic_or_partition),
    ],
)
def test_validation(
    broker: BrokerProcess, case: str, partition: int, state_epoch: int, expected: ErrorCode
) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("isgs-v"), partitions=2)
    code, message = initialize(
        broker,
        topic_name("isgs-group"),
        topic_id,
        partition=partition,
        state_epoch=state_epoch,
        start_offset=0,
    )
    assert (code, bool(message)) == (expected, True), case


def test_null_and_unknown_topic_ids_and_empty_group(broker: BrokerProcess) -> None:
    group = topic_name("isgs-group")
    null = initialize(broker, group, None, partition=0, state_epoch=0, start_offset=0)
    assert null[0] == ErrorCode.invalid_request
    unknown = initialize(broker, group, uuid.uuid4(), partition=0, state_epoch=0, start_offset=0)
    assert unknown[0] == ErrorCode.unknown_topic_or_partition
    topic_id = create_topic(broker.bootstrap, topic_name("isgs-g"))
    empty = initialize(broker, "", topic_id, partition=0, state_epoch=0, start_offset=0)
    assert empty[0] == ErrorCode.invalid_request


def test_every_partition_is_answered(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("isgs-many"), partitions=2)
    other = uuid.uuid4()
    group = topic_name("isgs-group")
    request = state_request(
        INITIALIZE,
        group,
        {
            topic_id: [
                {"partition": 0, "state_epoch": 1, "start_offset": 0},
                {"partition": 1, "state_epoch": 1, "start_offset": -1},
                {"partition": 5, "state_epoch": 1, "start_offset": 0},
            ],
            other: [{"partition": 0, "state_epoch": 1, "start_offset": 0}],
        },
    )
    results = state_results(call1(broker.bootstrap, request))
    assert {key: int(r.error_code) for key, r in results.items()} == {
        (topic_id, 0): ErrorCode.none,
        (topic_id, 1): ErrorCode.none,
        (topic_id, 5): ErrorCode.unknown_topic_or_partition,
        (other, 0): ErrorCode.unknown_topic_or_partition,
    }


def test_share_version_zero_answers_unsupported_version(disabled_broker: BrokerProcess) -> None:
    topic_id = create_topic(disabled_broker.bootstrap, topic_name("isgs-off"))
    code, _ = initialize(disabled_broker, "g", topic_id, partition=0, state_epoch=0, start_offset=0)
    assert code == ErrorCode.unsupported_version
