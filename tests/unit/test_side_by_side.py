"""The side-by-side benchmark's pure logic (bench/side_by_side.py): medians over the
reps, ratios, goal verdicts and the table; no broker is started."""

from __future__ import annotations

import math
from typing import Any

import confluent_kafka
from bench.produce_fetch import machine
from bench.side_by_side import goal_met, median_of, ratio, summarise, table, workload_metrics


def session(broker: str, rep: int, **metrics: float) -> dict[str, Any]:
    return {"broker": broker, "rep": rep, "metrics": metrics, "errors": {}, "raw": {}}


def test_median_skips_parts_not_run() -> None:
    assert median_of([3.0, None, 1.0, 2.0]) == 2.0
    assert median_of([4.0, float("nan"), 1.0]) == 2.5
    assert median_of([None, None]) is None
    assert median_of([]) is None


def test_ratio_needs_both_sides() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(3.0, None) is None
    assert ratio(3.0, 0.0) is None


def test_goal_clauses_are_all_checked() -> None:
    medians = {"kafka": 100.0, "shoal": 110.0, "redis": 30.0}
    assert goal_met("shoal/kafka >= 1.0", medians) is True
    assert goal_met("shoal/kafka <= 1", medians) is False
    assert goal_met("shoal/kafka >= 1.0; shoal/redis >= 5", medians) is False  # 3.7x Redis
    assert goal_met("shoal/kafka >= 1.0; shoal/redis >= 3", medians) is True
    assert goal_met("shoal <= 100", medians) is False
    assert goal_met("shoal <= 110", medians) is True


def test_goal_unknown_when_a_value_is_missing() -> None:
    assert goal_met("shoal/redis >= 5", {"kafka": 1.0, "shoal": 2.0, "redis": None}) is None
    assert goal_met("", {"shoal": 1.0}) is None


def test_summary_takes_each_brokers_median_then_the_ratio() -> None:
    sessions = [
        session("kafka", 1, share_drain_rps=100.0, startup_s=5.0),
        session("shoal", 1, share_drain_rps=90.0, startup_s=0.4),
        session("kafka", 2, share_drain_rps=300.0, startup_s=7.0),
        session("shoal", 2, share_drain_rps=250.0, startup_s=0.6),
        session("kafka", 3, share_drain_rps=200.0, startup_s=6.0),
        session("shoal", 3, share_drain_rps=220.0, startup_s=0.5),
        session("redis", 1, share_drain_rps=40.0),
    ]
    rows = {row["key"]: row for row in summarise(sessions)}
    drain = rows["share_drain_rps"]
    assert (drain["kafka"], drain["shoal"], drain["redis"]) == (200.0, 220.0, 40.0)
    assert math.isclose(drain["shoal/kafka"], 1.1)
    assert math.isclose(drain["shoal/redis"], 5.5)
    assert drain["met"] is True
    startup = rows["startup_s"]
    assert math.isclose(startup["shoal/kafka"], 0.5 / 6.0)
    assert startup["met"] is True
    assert rows["consume_group_rps"]["met"] is None  # not measured anywhere


def test_table_marks_misses_and_parts_not_run() -> None:
    sessions = [
        session("kafka", 1, consume_group_rps=1000.0),
        session("shoal", 1, consume_group_rps=800.0),
    ]
    lines = table(summarise(sessions)).splitlines()
    row = next(line for line in lines if line.startswith("consume_group"))
    assert "1,000/s" in row and "800/s" in row and "0.80x" in row
    assert row.split()[-1] == "NO"
    assert "not run" in row  # redis
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule aligned


def test_machine_names_the_clients_whole_versions() -> None:
    info = machine()
    assert info["confluent_kafka"] == confluent_kafka.__version__
    assert info["librdkafka"] == confluent_kafka.libversion()[0]
    assert info["confluent_kafka"].count(".") >= 2


def test_shoal_of_another_tree_gets_its_column_and_ratio() -> None:
    sessions = [
        session("shoal-old", 1, share_drain_rps=100.0),
        session("shoal", 1, share_drain_rps=150.0),
    ]
    rows = summarise(sessions)
    drain = next(row for row in rows if row["key"] == "share_drain_rps")
    assert drain["shoal-old"] == 100.0
    assert math.isclose(drain["shoal/shoal-old"], 1.5)
    lines = table(rows).splitlines()
    assert lines[0].split()[:5] == ["metric", "kafka", "shoal-old", "shoal", "redis"]
    assert "shoal/shoal-old" in lines[0]
    row = next(line for line in lines if line.startswith("share drain"))
    assert "100/s" in row and "150/s" in row and "1.50x" in row
    assert "shoal-old" not in summarise([session("shoal", 1, share_drain_rps=1.0)])[0]


def test_cpu_per_record_rows_from_each_workloads_cpu_seconds() -> None:
    metrics: dict[str, float] = {}
    result = {"records": 1000, "records_per_s": 5e4, "broker_cpu_s": 0.002, "client_cpu_s": 0.01}
    workload_metrics(metrics, "end_to_end", result)
    workload_metrics(metrics, "consume_group", None)  # failed or skipped: nothing
    assert metrics == {"e2e_rps": 5e4, "end_to_end_broker_us": 2.0, "end_to_end_client_us": 10.0}
    rows = {row["key"]: row for row in summarise([session("shoal", 1, **metrics)])}
    assert rows["end_to_end_broker_us"]["shoal"] == 2.0
    assert "2.00 us" in table(list(rows.values()))
