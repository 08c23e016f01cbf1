"""DeleteShareGroupState (86) v0 against a broker process.

docs/design/coordinators.md §2.3 items 4 and 6: a deleted key reads as uninitialised (Read ->
INVALID_REQUEST, summary StartOffset -1); deleting a key without state succeeds;
negative partition, null topic id -> INVALID_REQUEST; unknown topic ->
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.share_admin import state_request, state_results
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

INITIALIZE, READ, DELETE, SUMMARY = 83, 84, 86, 87


def test_deleted_key_reads_as_uninitialised(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("dssgs"), partitions=2)
    group = topic_name("dssgs-group")
    init = state_request(
        INITIALIZE,
        group,
        {topic_id: [{"partition": p, "state_epoch": 1, "start_offset": 3} for p in (0, 1)]},
    )
    assert all(r.error_code == 0 for r in state_results(call1(broker.bootstrap, init)).values())
    delete = state_request(DELETE, group, {topic_id: [{"partition": 0}]})
    assert state_results(call1(broker.bootstrap, delete))[(topic_id, 0)].error_code == 0
    reads = state_results(
        call1(
            broker.bootstrap,
            state_request(
                READ, group, {topic_id: [{"partition": p, "leader_epoch": 0} for p in (0, 1)]}
            ),
        )
    )
    assert reads[(topic_id, 0)].error_code == ErrorCode.invalid_request
    assert (reads[(topic_id, 1)].error_code, reads[(topic_id, 1)].start_offset) == (0, 3)
    summary = state_results(
        call1(
            broker.bootstrap,
            state_request(SUMMARY, group, {topic_id: [{"partition": 0, "leader_epoch": 0}]}),
        )
    )[(topic_id, 0)]
    assert (summary.error_code, summary.start_offset) == (ErrorCode.none, -1)
    again = state_results(call1(broker.bootstrap, delete))[(topic_id, 0)]
    assert again.error_code == ErrorCode.none, "deleting nothing succeeds"


def test_validation(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("dssgs-v"))
    unknown = uuid.uuid4()
    request = state_request(
        DELETE,
        "g",
        {topic_id: [{"partition": -1}, {"partition": 1}], unknown: [{"partition": 0}]},
    )
    results = state_results(call1(broker.bootstrap, request))
    assert {key: int(r.error_code) for key, r in results.items()} == {
        (topic_id, -1): ErrorCode.invalid_request,
        (topic_id, 1): ErrorCode.unknown_topic_or_partition,
        (unknown, 0): ErrorCode.unknown_topic_or_partition,
    }
    null = state_results(
        call1(broker.bootstrap, state_request(DELETE, "g", {None: [{"partition": 0}]}))
    )
    assert [int(r.error_code) for r in null.values()] == [ErrorCode.invalid_request]
