"""The topic stream's offset arithmetic and options, without Spark or a broker:
rate-limit split, new and deleted partitions, data-loss detection, AvailableNow cap,
offset JSON, option rules."""

from __future__ import annotations

import json

import pytest

from shoal.spark.options import OptionError
from shoal.spark.topic_offsets import (
    OffsetFormatError,
    Range,
    from_json,
    new_partitions,
    plan_end,
    ranges,
    to_json,
)
from shoal.spark.topic_stream_options import parse_stream_options

A0, A1, A2, B0 = ("a", 0), ("a", 1), ("a", 2), ("b", 0)


def test_offset_json_is_compact_ordered_and_round_trips() -> None:
    offsets = {B0: 7, A1: 40, ("a", 10): 3, A0: 23}
    document = to_json(offsets)
    assert json.dumps(document) == '{"a": {"0": 23, "1": 40, "10": 3}, "b": {"0": 7}}'
    assert from_json(document) == offsets
    assert from_json(json.loads(json.dumps(document))) == offsets


@pytest.mark.parametrize(
    "document",
    [[1], {"a": [0]}, {"a": {"x": 1}}, {"a": {"0": -1}}, {"a": {"0": True}}, {"a": {"0": "1"}}],
)
def test_a_foreign_offset_is_refused(document: object) -> None:
    with pytest.raises(OffsetFormatError):
        from_json(document)


def test_without_a_limit_a_batch_reads_to_the_log_end() -> None:
    plan = plan_end(start={A0: 5, A1: 0}, earliest={A0: 0, A1: 0}, latest={A0: 9, A1: 3})
    assert plan.end == {A0: 9, A1: 3}
    assert plan.losses == ()


def test_nothing_new_plans_the_start_again() -> None:
    start = {A0: 9, A1: 3}
    plan = plan_end(start=start, earliest={A0: 0, A1: 0}, latest={A0: 9, A1: 3}, records_max=5)
    assert plan.end == start


def test_the_limit_is_split_in_proportion_to_each_backlog() -> None:
    plan = plan_end(
        start={A0: 0, A1: 100, A2: 50},
        earliest={A0: 0, A1: 0, A2: 0},
        latest={A0: 300, A1: 200, A2: 50},
        records_max=40,
    )
    # backlogs 300 and 100 (A2 has none): 30 and 10 of the 40
    assert plan.end == {A0: 30, A1: 110, A2: 50}


def test_a_small_backlog_is_never_starved_and_rounding_goes_down() -> None:
    plan = plan_end(
        start={A0: 0, A1: 0}, earliest={A0: 0, A1: 0}, latest={A0: 1000, A1: 1}, records_max=10
    )
    # A1's share is 10/1001 of a record: it still gets its one; A0 gets floor(9.99) = 9
    assert plan.end == {A0: 9, A1: 1}


def test_a_limit_above_the_backlog_reads_everything() -> None:
    plan = plan_end(start={A0: 0}, earliest={A0: 0}, latest={A0: 10}, records_max=11)
    assert plan.end == {A0: 10}


def test_successive_limited_batches_cover_the_log_exactly() -> None:
    latest = {A0: 101, A1: 7, B0: 0}
    earliest = dict.fromkeys(latest, 0)
    start = dict(earliest)
    sizes = []
    while True:
        end = plan_end(start=start, earliest=earliest, latest=latest, records_max=25).end
        if end == start:
            break
        sizes.append(sum(end[tp] - start[tp] for tp in end))
        assert all(end[tp] >= start[tp] for tp in end)
        start = end
    assert start == latest
    assert sum(sizes) == 108
    assert max(sizes) <= 25 + len(latest)


def test_a_new_partition_is_read_from_its_earliest_offset() -> None:
    plan = plan_end(start={A0: 4}, earliest={A0: 0, A1: 2}, latest={A0: 4, A1: 6})
    assert plan.end == {A0: 4, A1: 6}
    assert plan.losses == ()
    assert new_partitions({A0: 4}, plan.end) == [A1]
    assert ranges({A0: 4}, plan.end, {A1: 2}) == [Range("a", 1, 2, 6)]


def test_a_new_partition_counts_in_the_limit() -> None:
    plan = plan_end(start={A0: 0}, earliest={A0: 0, A1: 0}, latest={A0: 10, A1: 10}, records_max=4)
    assert plan.end == {A0: 2, A1: 2}


def test_records_deleted_before_they_were_read_are_a_loss_and_skipped() -> None:
    plan = plan_end(start={A0: 3, A1: 0}, earliest={A0: 10, A1: 0}, latest={A0: 20, A1: 5})
    assert plan.end == {A0: 20, A1: 5}
    (loss,) = plan.losses
    assert "a-0" in loss and "[3, 10)" in loss and "deleted" in loss


def test_a_limit_counts_only_what_is_still_in_the_log() -> None:
    plan = plan_end(start={A0: 0}, earliest={A0: 95}, latest={A0: 100}, records_max=10)
    assert plan.end == {A0: 100}
    assert len(plan.losses) == 1


def test_a_log_that_went_back_is_a_loss_and_the_position_follows_it() -> None:
    plan = plan_end(start={A0: 50}, earliest={A0: 0}, latest={A0: 8})
    assert plan.end == {A0: 8}
    (loss,) = plan.losses
    assert "offset 50" in loss and "ends at 8" in loss
    assert ranges({A0: 50}, plan.end, {}) == []  # nothing to read for it


def test_a_partition_that_went_away_is_a_loss_and_dropped() -> None:
    plan = plan_end(start={A0: 5, B0: 7}, earliest={A0: 0}, latest={A0: 5})
    assert plan.end == {A0: 5}
    (loss,) = plan.losses
    assert "b-0" in loss and "no longer exists" in loss


def test_available_now_stops_at_the_recorded_ends() -> None:
    cap = {A0: 10, A1: 4}
    start = {A0: 0, A1: 0}
    latest = {A0: 30, A1: 30, A2: 30}  # more arrived, and a partition, after the cap
    earliest = dict.fromkeys(latest, 0)
    plan = plan_end(start=start, earliest=earliest, latest=latest, cap=cap, records_max=6)
    # backlogs 10 and 4 under the cap: floor(6 * 10/14) = 4 and floor(6 * 4/14) = 1
    assert plan.end == {A0: 4, A1: 1, A2: 0}
    while plan.end != start:
        start = plan.end
        plan = plan_end(start=start, earliest=earliest, latest=latest, cap=cap, records_max=6)
    assert start == {A0: 10, A1: 4, A2: 0}  # the new partition is not read


def test_ranges_skip_empty_partitions() -> None:
    assert ranges({A0: 5, A1: 2}, {A0: 9, A1: 2}, {}) == [Range("a", 0, 5, 9)]


# ---- options


def test_stream_options_follow_spark_kafka_names_and_defaults() -> None:
    options = parse_stream_options(
        {"kafka.bootstrap.servers": "h:9", "subscribe": "a,b", "maxoffsetspertrigger": "100"}
    )
    assert options.topics == ("a", "b")
    assert options.starting == "latest"
    assert options.records_per_trigger == 100
    assert options.fail_on_data_loss is True
    assert options.include_headers is True
    assert options.commit_group is None
    parsed = parse_stream_options(
        {
            "bootstrap.servers": "h:9",
            "topic": "a",
            "failondataloss": "False",
            "includeheaders": "false",
            "committogroup": "g",
            "startingoffsets": '{"a": {"0": -2}}',
        }
    )
    assert (parsed.fail_on_data_loss, parsed.include_headers, parsed.commit_group) == (
        False,
        False,
        "g",
    )
    assert parsed.starting == {"a": {0: -2}}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("endingOffsets", "latest", "not valid in streaming queries"),
        ("maxOffsetsPerTrigger", "0", "'maxOffsetsPerTrigger' = '0' is invalid"),
        ("failOnDataLoss", "yes", "'failOnDataLoss' = 'yes' is invalid: must be true or false"),
        ("commitToGroup", " ", "'commitToGroup' = ' ' is invalid"),
        ("maxOffsetPerTrigger", "5", "did you mean 'maxOffsetsPerTrigger'"),
    ],
)
def test_stream_option_mistakes_name_the_option(key: str, value: str, expected: str) -> None:
    with pytest.raises(OptionError, match=expected):
        parse_stream_options({"bootstrap.servers": "h:9", "topic": "a", key.lower(): value})
