"""The synchronous rules the group service used to hold, now in the core: folding the
persister's outcomes into AlterShareGroupOffsets / DeleteShareGroupOffsets answers,
and the DescribeShareGroupOffsets partition answer with its lag."""

from __future__ import annotations

import uuid

from shoal.group.results import (
    AlterOffsetsResponse,
    AlterOffsetsTopic,
    DeleteOffsetsResponse,
    DeleteOffsetsTopic,
    DescribedOffsetsPartition,
    OffsetPartitionResult,
)
from shoal.group.share.offsets import (
    describe_partition,
    with_deletion_errors,
    with_initialization_errors,
)
from shoal.protocol.errors import ErrorCode
from shoal.share.persister import StateSummary
from tests.unit.group.conftest import Harness, topic_id

M1 = "member-one"
T = uuid.UUID(int=7)


# ---- persister outcomes folded into admin answers ------------------------------------------


def test_failed_initialisations_answer_the_persister_error_per_partition() -> None:
    response = AlterOffsetsResponse(
        group_epoch=3,
        topics=(
            AlterOffsetsTopic(
                topic_name="t",
                topic_id=T,
                partitions=(
                    OffsetPartitionResult(partition=0),
                    OffsetPartitionResult(partition=1),
                    OffsetPartitionResult(partition=2, error=ErrorCode.unknown_topic_or_partition),
                ),
            ),
            AlterOffsetsTopic(topic_name="gone", topic_id=None, partitions=()),
        ),
    )
    assert with_initialization_errors(response, {}) is response
    folded = with_initialization_errors(
        response,
        {(T, 1): ErrorCode.coordinator_not_available, (T, 2): ErrorCode.fenced_state_epoch},
    )
    rows = folded.topics[0].partitions
    assert [(p.partition, p.error) for p in rows] == [
        (0, None),
        (1, ErrorCode.coordinator_not_available),
        (2, ErrorCode.unknown_topic_or_partition),  # its own error stands
    ]
    assert rows[1].error_message == (
        "Initialising the share-partition state failed: COORDINATOR_NOT_AVAILABLE."
    )
    assert folded.topics[1] == response.topics[1] and folded.group_epoch == 3


def test_failed_deletions_answer_the_persister_error_per_topic() -> None:
    u = uuid.UUID(int=8)
    response = DeleteOffsetsResponse(
        topics=(
            DeleteOffsetsTopic(topic_name="t", topic_id=T),
            DeleteOffsetsTopic(topic_name="u", topic_id=u),
            DeleteOffsetsTopic(topic_name="x", topic_id=None),
        )
    )
    folded = with_deletion_errors(response, {T: ErrorCode.coordinator_not_available})
    assert [(t.topic_name, t.error) for t in folded.topics] == [
        ("t", ErrorCode.coordinator_not_available),
        ("u", None),
        ("x", None),
    ]
    assert folded.topics[0].error_message == (
        "Deleting the share-partition state failed: COORDINATOR_NOT_AVAILABLE."
    )


# ---- DescribeShareGroupOffsets ---------------------------------------------------------


def test_lag_is_high_watermark_minus_start_minus_delivery_complete() -> None:
    summary = StateSummary(
        None, state_epoch=1, leader_epoch=-1, start_offset=10, delivery_complete_count=3
    )
    described = describe_partition(topic_id=T, partition=0, summary=summary, high_watermark=25)
    assert described == DescribedOffsetsPartition(
        partition=0, start_offset=10, leader_epoch=0, lag=12
    )


def test_unknown_counts_give_no_lag_and_errors_give_no_offset() -> None:
    unknown = StateSummary(
        None, state_epoch=1, leader_epoch=0, start_offset=-1, delivery_complete_count=-1
    )
    assert describe_partition(topic_id=T, partition=1, summary=unknown, high_watermark=9) == (
        DescribedOffsetsPartition(partition=1, start_offset=-1, lag=-1)
    )
    failed = StateSummary(ErrorCode.invalid_request)
    assert describe_partition(
        topic_id=T, partition=2, summary=failed, high_watermark=9
    ) == DescribedOffsetsPartition(partition=2)


def test_a_partition_without_log_answers_unknown_topic_or_partition() -> None:
    summary = StateSummary(
        None, state_epoch=1, leader_epoch=0, start_offset=4, delivery_complete_count=0
    )
    described = describe_partition(topic_id=T, partition=3, summary=summary, high_watermark=None)
    assert described.error is ErrorCode.unknown_topic_or_partition
    assert (described.start_offset, described.lag) == (4, -1)


def test_offsets_to_describe_all_initialised_or_the_requested(harness: Harness) -> None:
    harness.set_topics(b=1, a=2)
    harness.join("g", M1, ["a", "b"])
    harness.complete_inits()
    assert harness.shard.offsets_to_describe(group_id="g", topics=None) == [
        ("a", topic_id("a"), (0, 1)),
        ("b", topic_id("b"), (0,)),
    ]
    assert harness.shard.offsets_to_describe(group_id="g", topics=[("zz", [0]), ("b", [5])]) == [
        ("zz", None, (0,)),
        ("b", topic_id("b"), (5,)),
    ]
    assert harness.shard.offsets_to_describe(group_id="nope", topics=None) == []
