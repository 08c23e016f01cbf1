"""BrokerMetrics, the scrape-time collectors, the HTTP listener and `metrics.listener`.

The collectors read a real (unstarted) broker's services; the listener is started
in-process on an ephemeral port and asked for `/metrics` over a real socket.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from shoal.clock import ManualClock
from shoal.config import BrokerConfig, ConfigError
from shoal.server.broker import Broker
from shoal.server.observability.http_app import build_app
from shoal.server.observability.http_listener import HttpListener
from shoal.server.observability.metrics import CHART_SERIES, BrokerMetrics
from tests.support.delivery_holds import give_holds
from tests.support.share_rig import ShareRig
from tests.unit.log.batches import append, make_batch


def _sample(broker: Broker, name: str, labels: dict[str, str] | None = None) -> float | None:
    return broker.metrics.registry.get_sample_value(name, labels or {})


def test_log_collector_reads_partition_sizes_and_offsets(broker: Broker) -> None:
    broker.logs.create_topic("t", partitions=2, configs={})
    log = broker.logs.partition("t", 1)
    assert log is not None
    append(log, make_batch(3))
    labels = {"topic": "t", "partition": "1"}
    assert _sample(broker, "kafka_log_log_logendoffset", labels) == 3
    assert _sample(broker, "kafka_log_log_size", labels) == log.size_bytes > 0
    assert _sample(broker, "kafka_log_log_size", {"topic": "t", "partition": "0"}) == 0
    state = _sample(broker, "shoal_share_coordinator_state_topic_size_bytes")
    assert state == sum(
        p.size_bytes for (name, _i), p in broker.logs._logs.items() if name == "__share_group_state"
    )


def test_purgatory_and_group_collectors_start_at_zero(broker: Broker) -> None:
    parked = {"delayed_operation": "LongPoll"}
    assert _sample(broker, "kafka_server_delayedoperationpurgatory_purgatorysize", parked) == 0
    assert (
        _sample(broker, "kafka_server_group_coordinator_metrics_share_group_rebalance_total") == 0
    )
    assert (
        _sample(broker, "kafka_server_group_coordinator_metrics_group_count", {"protocol": "share"})
        is None
    )


def test_the_purgatory_gauge_counts_parked_requests(broker: Broker) -> None:
    async def parked_while_waiting() -> float | None:
        waiter = asyncio.create_task(broker.purgatory.wait([("t", 0)], timeout_ms=5_000))
        await asyncio.sleep(0)
        seen = _sample(
            broker,
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            {"delayed_operation": "LongPoll"},
        )
        broker.purgatory.notify(("t", 0))
        await waiter
        return seen

    assert asyncio.run(parked_while_waiting()) == 1


def test_chart_series_sums_the_counters() -> None:
    metrics = BrokerMetrics(enabled=True)
    metrics.messages_in.inc(("a",), 3)
    metrics.messages_in.inc(("b",), 4)
    metrics.records_acquired.inc(("g", "a"), 2)
    metrics.acknowledged(2, 5)
    metrics.acknowledged(1, 1)
    metrics.locks_expired(1)
    series = metrics.chart_series()
    assert set(series) == set(CHART_SERIES)
    assert series["records_in"] == 7
    assert series["records_acquired"] == 2
    assert (series["acks_accept"], series["acks_release"], series["acks_reject"]) == (1, 5, 0)
    assert series["lock_timeouts"] == 1


def test_deleted_topics_lose_their_series() -> None:
    metrics = BrokerMetrics(enabled=True)
    metrics.bytes_in.inc(("gone",), 10)
    metrics.bytes_in.inc(("kept",), 1)
    metrics.forget_topics(["gone"])
    assert (
        metrics.registry.get_sample_value(
            "kafka_server_brokertopicmetrics_bytesin_total", {"topic": "gone"}
        )
        is None
    )
    metrics.bytes_in.inc(("gone",), 2)
    assert metrics.chart_series()["bytes_in"] == 3


def test_histograms_expose_cumulative_buckets() -> None:
    metrics = BrokerMetrics(enabled=True)
    for seconds in (0.00005, 0.0003, 0.0003, 50.0):
        metrics.request_handled(78, 1, seconds)
    sample = metrics.registry.get_sample_value
    name = "kafka_network_requestmetrics_localtime_seconds"
    assert sample(f"{name}_bucket", {"request": "ShareFetch", "le": "0.0001"}) == 1
    assert sample(f"{name}_bucket", {"request": "ShareFetch", "le": "0.0005"}) == 3
    assert sample(f"{name}_bucket", {"request": "ShareFetch", "le": "30.0"}) == 3
    assert sample(f"{name}_bucket", {"request": "ShareFetch", "le": "+Inf"}) == 4
    assert sample(f"{name}_count", {"request": "ShareFetch"}) == 4
    assert sample(f"{name}_sum", {"request": "ShareFetch"}) == pytest.approx(50.00065)
    requests = {"request": "ShareFetch", "version": "1"}
    assert sample("kafka_network_requestmetrics_requests_total", requests) == 4


def test_error_codes_are_counted_by_kafka_names() -> None:
    metrics = BrokerMetrics(enabled=True)
    metrics.error(0, 3)
    metrics.error(0, 3)
    metrics.error(0, 0)
    labels = {"request": "Produce", "error": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert (
        metrics.registry.get_sample_value("kafka_network_requestmetrics_errors_total", labels) == 2
    )


@pytest.mark.parametrize(
    "value",
    ["9404", "127.0.0.1:9404", "https://127.0.0.1:9404", "http://127.0.0.1", "http://h:70000"],
)
def test_a_bad_metrics_listener_is_a_config_error(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"metrics\.listener"):
        BrokerConfig.from_raw({"log.dirs": str(tmp_path), "metrics.listener": value})


def test_metrics_listener_defaults_to_off_and_loopback(tmp_path: Path) -> None:
    assert BrokerConfig.from_raw({"log.dirs": str(tmp_path)}).metrics_listener is None
    config = BrokerConfig.from_raw({"log.dirs": str(tmp_path), "metrics.listener": "http://:0"})
    assert config.metrics_listener == ("127.0.0.1", 0)


def test_requests_are_not_counted_without_the_listener(broker: Broker) -> None:
    assert not broker.metrics.enabled
    assert broker.handlers[0].handle.__module__ == "shoal.server.handlers.produce"


async def _get(port: int, path: str) -> tuple[str, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    raw = (await reader.read()).decode()
    writer.close()
    await writer.wait_closed()
    head, _, body = raw.partition("\r\n\r\n")
    return head.splitlines()[0], body


def test_the_listener_serves_metrics_and_stops(tmp_path: Path) -> None:
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        "metrics.listener": "http://127.0.0.1:0",
    }
    broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())

    async def scrape_then_stop() -> tuple[str, str, int]:
        listener = HttpListener(build_app(broker.services), host="127.0.0.1", port=0)
        await listener.start()
        port = listener.port
        try:
            status, body = await _get(port, "/metrics")
        finally:
            await listener.stop()
        return status, body, port

    try:
        status, body, port = asyncio.run(scrape_then_stop())
    finally:
        broker.logs.close()
    assert status.endswith(" 200 OK")
    names = {family.name for family in text_string_to_metric_families(body)}
    assert "kafka_server_brokertopicmetrics_messagesin" in names
    assert "kafka_log_log_size" in names
    with pytest.raises(OSError):
        asyncio.run(asyncio.open_connection("127.0.0.1", port))


HOLD_GAUGES = (
    "shoal_share_partition_blocked_keys",
    "shoal_share_partition_key_blocked_records",
    "shoal_share_partition_scheduled_records",
    "shoal_share_partition_malformed_deliver_at_total",
)


def test_share_partition_delivery_holds_are_gauges_and_a_counter(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per loaded share-partition, as its records by state: what key-ordered and
    scheduled delivery hold back (`delivery_holds`; values the test gives in place of
    the core's) and the malformed `shoal.deliver.at` count; zeros when nothing is held."""
    ShareRig(broker)
    labels = {"group": "g", "topic": "t", "partition": "0"}
    assert [_sample(broker, name, labels) for name in HOLD_GAUGES] == [0, 0, 0, 0]
    assert _sample(broker, "shoal_share_partition_records", {**labels, "state": "acquired"}) == 5
    give_holds(monkeypatch)
    assert [_sample(broker, name, labels) for name in HOLD_GAUGES] == [2, 7, 3, 1]
    families = {
        f.name: f.type
        for f in text_string_to_metric_families(generate_latest(broker.metrics.registry).decode())
    }
    assert families["shoal_share_partition_blocked_keys"] == "gauge"
    assert families["shoal_share_partition_scheduled_records"] == "gauge"
    assert families["shoal_share_partition_malformed_deliver_at"] == "counter"
