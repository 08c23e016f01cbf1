"""The key-order benchmark's pure helpers (bench/key_order.py): key draws, the per-key
order check, the metrics parsing, the window and lateness summaries, the table; no
broker is started and nothing is timed."""

from __future__ import annotations

import math
from array import array
from typing import Any

from bench.key_order import (
    BY_STATE,
    END,
    HOT_KEY,
    IN_FLIGHT,
    QUICK,
    SERIES_COLUMNS,
    START,
    Workload,
    drain_table,
    drain_workloads,
    first_deliveries,
    group_samples,
    key_sequence,
    lateness_summary,
    order_violations,
    summarise,
    window_series,
    window_summary,
    window_workloads,
)


def test_key_draws_are_seeded_uniform_and_hot() -> None:
    keys = key_sequence(20_000, 10, seed=1)
    assert keys == key_sequence(20_000, 10, seed=1)
    assert keys != key_sequence(20_000, 10, seed=2)
    assert set(keys) == set(range(10))
    assert all(1_500 < keys.count(k) < 2_500 for k in range(10))
    hot = key_sequence(20_000, 10_000, hot_share=0.5)
    assert 9_000 < hot.count(HOT_KEY) < 11_000
    assert all(0 <= k < 10_000 for k in hot if k != HOT_KEY)


def test_drains_cover_each_key_count_the_hot_key_and_small_batches() -> None:
    drains = drain_workloads(QUICK)
    assert [w.name for w in drains] == ["uniform-10000", "uniform-10", "hot", "uniform-10000-b100"]
    assert drains[2] == Workload("hot", 10_000, 0.5)
    assert drains[3].label() == "uniform, 10,000 keys, 100/batch"
    windows = window_workloads(QUICK)
    assert windows == [drains[3], Workload("hot-b100", 10_000, 0.5, batch_records=100)]
    assert windows[1].label() == "hot key 50% + 10,000 keys, 100/batch"


def out(offsets: list[int], keys: list[int], times: list[int]) -> dict[str, Any]:
    return {
        "keys": array("q", offsets).tobytes(),
        "record_keys": array("q", keys).tobytes(),
        "at_ns": array("q", times).tobytes(),
    }


def test_first_delivery_is_the_earliest_receipt() -> None:
    outs = [out([0, 1, 2], [7, 7, 8], [10, 10, 30]), out([2, 3], [8, 7], [20, 40])]
    assert first_deliveries(outs) == [
        (0, 7, 0, 0, 10),
        (1, 7, 0, 1, 10),
        (2, 8, 1, 0, 20),  # consumer 1 had it first (a redelivery reached consumer 0 later)
        (3, 7, 1, 1, 40),
    ]


def test_order_holds_by_position_in_one_consumer_and_by_time_across() -> None:
    # key 7: offsets 0, 1 in one batch of consumer 0, then offset 3 on consumer 1 later
    ok = first_deliveries([out([0, 1, 2], [7, 7, 8], [10, 10, 10]), out([3, 4], [7, 8], [50, 60])])
    checked = order_violations(ok)
    assert checked["violations"] == 0
    assert (checked["keys"], checked["pairs"]) == (2, 3)


def test_a_later_record_received_first_by_another_consumer_is_a_violation() -> None:
    # offset 3 (key 7) reached consumer 1 before consumer 0 had offset 1 (key 7)
    bad = first_deliveries([out([0, 1], [7, 7], [10, 50]), out([3], [7], [40])])
    checked = order_violations(bad)
    assert checked["violations"] == 1 and checked["keys_violated"] == 1
    assert checked["example"] == [(1, 7, 0, 1, 50), (3, 7, 1, 0, 40)]


def test_one_consumer_receiving_a_key_out_of_offset_order_is_a_violation() -> None:
    checked = order_violations(first_deliveries([out([5, 2], [1, 1], [10, 10])]))
    assert checked["violations"] == 1


def test_records_without_a_key_are_not_ordered() -> None:
    checked = order_violations(first_deliveries([out([0, 1], [-1, -1], [50, 10])]))
    assert (checked["keys"], checked["violations"]) == (0, 0)


METRICS_TEXT = """\
# HELP kafka_server_sharepartitionmetrics_inflightmessagecount Records in the window.
kafka_server_sharepartitionmetrics_inflightmessagecount{group="g1",partition="0",topic="t"} 1800.0
kafka_server_sharepartitionmetrics_inflightmessagecount{group="g10",partition="0",topic="t"} 5.0
shoal_share_partition_records{group="g1",partition="0",state="acquired",topic="t"} 300.0
shoal_share_partition_start_offset{group="g1",partition="0",topic="t"} 4000.0
shoal_share_records_acquired_total{group="g1",topic="t"} 9000.0
kafka_log_log_size{partition="0",topic="t"} 123.0
"""


def test_group_samples_keep_one_groups_samples_by_name_and_other_labels() -> None:
    assert group_samples(METRICS_TEXT, "g1") == {
        IN_FLIGHT: 1800.0,
        f"{BY_STATE}{{state=acquired}}": 300.0,
        START: 4000.0,
        "shoal_share_records_acquired_total": 9000.0,
    }
    assert group_samples(METRICS_TEXT, "g10") == {IN_FLIGHT: 5.0}
    assert group_samples(METRICS_TEXT, "g2") == {}


def sample(in_flight: float, start: float, end: float, **by_state: float) -> dict[str, float]:
    found = {IN_FLIGHT: in_flight, START: start, END: end}
    found.update({f"{BY_STATE}{{state={k}}}": v for k, v in by_state.items()})
    return found


def test_window_summary_of_a_window_stalled_behind_a_hot_key() -> None:
    samples = [
        (0.0, {}),  # not loaded yet: left out
        (1.0, sample(100, 0, 100, acquired=100, available=0)),
        (2.0, sample(2000, 50, 2050, acquired=10, available=1990)),
        (3.0, sample(2000, 50, 2050, acquired=5, available=1995)),
        (4.5, sample(1900, 50, 2100, acquired=5, available=1895)),
        (5.0, sample(0, 3000, 3000)),  # the end of the log: standing still there is fine
        (9.0, sample(0, 3000, 3000)),
    ]
    summary = window_summary(samples, records=3000)
    assert summary["samples"] == 6
    assert summary["in_flight_median"] == 1000.0  # of 100, 2000, 2000, 1900, 0, 0
    assert summary["in_flight_max"] == 2000.0
    assert math.isclose(summary["full_share"], 3 / 6)  # >= 90% of 2000
    assert summary["start_flat_max_s"] == 2.5  # 50 from t=2 to t=4.5
    assert summary["end_flat_max_s"] == 1.0  # 2050 from t=2 to t=3
    assert summary["acquired_median"] == 7.5  # of the samples that have it
    assert summary["available_median"] == 1942.5
    assert summary["other"] == {}  # states are not repeated there
    assert window_summary([(0.0, {})], records=1) == {"samples": 0}


def test_window_series_rows_follow_the_columns() -> None:
    rows = window_series(
        [(10.5, sample(7, 1, 8, acquired=5, available=2)), (10.75, {})], since=10.0
    )
    assert SERIES_COLUMNS[:4] == ("t_s", "in_flight", "acquired", "available")
    assert rows == [[0.5, 7, 5, 2, None, None, None, None, 1, 8], [0.75, *[None] * 9]]
    assert len(SERIES_COLUMNS) == len(rows[0])


def test_window_summary_keeps_other_samples_of_the_group() -> None:
    samples = [(float(t), {**sample(10, 0, 10), "held_back": float(t)}) for t in range(5)]
    assert window_summary(samples, records=10)["other"] == {
        "held_back": {"median": 2.0, "max": 4.0}
    }


def test_lateness_within_early_and_percentiles() -> None:
    ms = 1_000_000
    values = [-5 * ms, 0, 10 * ms, 50 * ms, 99 * ms, 150 * ms, -ms // 2, 20 * ms, 30 * ms, 40 * ms]
    late = lateness_summary(values)
    assert late["records"] == 10
    assert late["early"] == 1  # -5 ms; -0.5 ms is within the 1 ms tolerance
    assert math.isclose(late["within_share"], 8 / 10)
    assert late["p50_ms"] == 20.0
    assert late["max_ms"] == 150.0 and late["min_ms"] == -5.0
    assert lateness_summary([]) == {"records": 0}


def drain(
    workload: str, order: str, rate: float, violations: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "workload": workload,
        "label": workload,
        "order": order,
        "records_per_s": rate,
        "order_check": {"violations": violations},
        "problems": [],
        **extra,
    }


def test_summary_medians_ratio_goal_and_failures() -> None:
    drains = [
        drain("uniform-10000", "none", 100.0, violations=40),
        drain("uniform-10000", "key", 70.0),
        drain("uniform-10000", "none", 300.0, violations=12),
        drain("uniform-10000", "key", 260.0),
        drain("uniform-10000", "none", 200.0),
        drain("uniform-10000", "key", 170.0),
        drain("uniform-10000-b200", "none", 100.0),
        drain("uniform-10000-b200", "key", 50.0),
        drain("uniform-10", "none", 100.0),
        drain("uniform-10", "key", 20.0, violations=1, problems=["1 key-order violations"]),
        {"workload": "uniform-10", "label": "uniform-10", "order": "key", "error": "boom"},
    ]
    first, small, second = summarise(drains)
    assert small["goal"] and small["met"] is False  # 10,000 keys in small batches too
    assert (first["none"], first["key"]) == (200.0, 170.0)
    assert math.isclose(first["key/none"], 0.85)
    assert first["met"] is True and first["none_violations"] == 40
    assert first["key_violations"] == 0 and first["key_failed"] == 0
    assert second["goal"] == "" and second["met"] is None
    assert second["key"] == 20.0  # the failed drain is left out of the median
    assert second["key_failed"] == 2 and second["key_violations"] == 1
    slow = summarise([drain("uniform-10000", "none", 100.0), drain("uniform-10000", "key", 79.0)])
    assert slow[0]["met"] is False
    row = next(line for line in drain_table(slow).splitlines() if line.startswith("uniform"))
    assert "100/s" in row and "79/s" in row and "0.79x" in row and "NO" in row
