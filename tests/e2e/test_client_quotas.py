"""Client quotas end to end: `shoal configs` sets a 1 MiB/s producer_byte_rate on one
client-id, a confluent-kafka producer flooding on that client-id is held near the
quota and sees throttle times (librdkafka's statistics), and a producer on another
client-id at the same time is not throttled."""

from __future__ import annotations

import threading
import time

from tests.support.broker import Brokers
from tests.support.cli import shoal
from tests.support.clients import create_topic
from tests.support.quota_flood import VALUE, Flood

QUOTA = 1 << 20  # bytes per second
WARMUP_S = 2.0
MEASURE_S = 4.0


def test_a_producer_flood_is_held_near_its_quota(brokers: Brokers) -> None:
    broker = brokers.start("quota.window.num=3")
    b = broker.bootstrap
    base = ("configs", "--bootstrap-server", b)
    added = shoal(
        *base,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "flood",
        "--add-config",
        f"producer_byte_rate={QUOTA}",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Completed updating config for client flood."
    described = shoal(*base, "--describe", "--entity-type", "clients")
    assert described.stdout.strip() == (
        f"Quota configs for client-id 'flood' are producer_byte_rate={float(QUOTA)}"
    )
    create_topic(b, "flooded", partitions=1)
    create_topic(b, "quiet", partitions=1)
    flood = Flood(b, "flooded", "flood")
    quiet = Flood(b, "quiet", "quiet")
    started = time.monotonic()
    flooding = threading.Thread(target=flood.run, args=(WARMUP_S + MEASURE_S,))
    flooding.start()
    time.sleep(WARMUP_S)
    quiet_started = time.monotonic()
    quiet.run(60.0, bytes_max=4 * QUOTA)
    quiet_s = time.monotonic() - quiet_started
    flooding.join(120)
    assert not flooding.is_alive()

    window = (started + WARMUP_S, started + WARMUP_S + MEASURE_S)
    flood_rate = flood.bytes_between(*window) / MEASURE_S
    quiet_rate = 4 * QUOTA / quiet_s
    print(f"flood {flood_rate / QUOTA:.2f} MiB/s (quota 1), quiet {quiet_rate / QUOTA:.2f} MiB/s")
    assert 0.3 * QUOTA < flood_rate < 1.6 * QUOTA
    assert flood.throttle_max_ms > 0
    assert quiet.throttle_max_ms == 0
    assert sum(size for _at, size in quiet.acked) == 4 * QUOTA // len(VALUE) * len(VALUE) + (
        len(VALUE) if (4 * QUOTA) % len(VALUE) else 0
    )
    log = broker.log_text()
    assert "throttling produce of client 'flood'" in log
    assert "client 'quiet'" not in log
