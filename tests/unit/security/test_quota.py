"""The client quota core on the manual clock: precedence, sharing, the windowed rate
and Kafka's throttle time."""

from __future__ import annotations

from shoal.clock import ManualClock
from shoal.security.quota import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    QuotaManager,
    WindowedRate,
    entity,
    resolve,
)

P = PRODUCER_BYTE_RATE


def test_precedence_follows_kafka_order() -> None:
    levels = [
        entity(user="u", client_id="c"),
        entity(user="u", client_id=None),
        entity(user="u"),
        entity(user=None, client_id="c"),
        entity(user=None, client_id=None),
        entity(user=None),
        entity(client_id="c"),
        entity(client_id=None),
    ]
    quotas = {level: {P: float(rank + 1)} for rank, level in enumerate(levels)}
    for rank, level in enumerate(levels):
        found = resolve(quotas, key=P, user="u", client_id="c")
        assert found is not None and found.bound == rank + 1 and found.entity == level
        del quotas[level]
    assert resolve(quotas, key=P, user="u", client_id="c") is None


def test_other_key_and_other_names_do_not_match() -> None:
    quotas = {entity(client_id="c"): {CONSUMER_BYTE_RATE: 10.0}}
    assert resolve(quotas, key=P, user="u", client_id="c") is None
    assert resolve(quotas, key=CONSUMER_BYTE_RATE, user="u", client_id="d") is None


def test_sensor_is_shared_as_the_matched_entity_says() -> None:
    user_quota = {entity(user="u"): {P: 1.0}}
    a = resolve(user_quota, key=P, user="u", client_id="a")
    b = resolve(user_quota, key=P, user="u", client_id="b")
    assert a is not None and b is not None and a.sensor == b.sensor == ("u", "")
    default_client = {entity(client_id=None): {P: 1.0}}
    a = resolve(default_client, key=P, user="u", client_id="a")
    b = resolve(default_client, key=P, user="u", client_id="b")
    assert a is not None and b is not None and a.sensor != b.sensor
    assert a.sensor == ("", "a")


def test_rate_divides_by_at_least_window_num_minus_one_samples() -> None:
    rate = WindowedRate(window_num=11, window_ms=1000)
    rate.record(10_000, now_ms=0)
    assert rate.window_size_ms(now_ms=0) == 10_000
    assert rate.rate_per_s(now_ms=0) == 1_000.0
    rate.record(10_000, now_ms=20_000)  # the first sample has expired
    assert rate.rate_per_s(now_ms=20_000) == 1_000.0


def test_samples_are_bounded_and_expire() -> None:
    rate = WindowedRate(window_num=3, window_ms=100)
    for t in range(0, 1000, 50):
        rate.record(1, now_ms=t)
        assert len(rate.samples) <= 3
    assert rate.idle(now_ms=10_000)


def test_throttle_time_is_kafkas_formula_and_falls_back_with_time() -> None:
    clock = ManualClock()
    manager = QuotaManager(key=P, window_num=11, window_ms=1000)
    quota = resolve({entity(client_id="c"): {P: 1000.0}}, key=P, user="u", client_id="c")
    # 10 000 bytes over a 10 s window is exactly 1000 B/s: not throttled
    assert manager.record_and_throttle_ms(quota, 10_000, now_ms=clock.monotonic_ms()) == 0
    # 20 000 bytes: rate 2000 B/s, (2000 - 1000) / 1000 * 10 000 ms
    assert manager.record_and_throttle_ms(quota, 10_000, now_ms=clock.monotonic_ms()) == 10_000
    clock.advance(5_000)
    # still 20 000 bytes over a 10 s window (5 s elapsed < 10 s minimum)
    assert manager.throttle_ms(quota, now_ms=clock.monotonic_ms()) == 10_000
    clock.advance(15_000)  # all samples expired
    assert manager.throttle_ms(quota, now_ms=clock.monotonic_ms()) == 0


def test_throttle_time_is_bounded_by_the_whole_window() -> None:
    manager = QuotaManager(key=P, window_num=11, window_ms=1000)
    quota = resolve({entity(client_id=None): {P: 1.0}}, key=P, user="u", client_id="c")
    assert manager.record_and_throttle_ms(quota, 10**9, now_ms=0) == 11_000


def test_no_quota_means_no_throttle_and_no_sensor() -> None:
    manager = QuotaManager(key=P, window_num=11, window_ms=1000)
    assert manager.record_and_throttle_ms(None, 10**9, now_ms=0) == 0
    assert manager.sensors == 0


def test_unrecord_takes_bytes_back() -> None:
    manager = QuotaManager(key=CONSUMER_BYTE_RATE, window_num=11, window_ms=1000)
    quota = resolve(
        {entity(client_id="c"): {CONSUMER_BYTE_RATE: 100.0}},
        key=CONSUMER_BYTE_RATE,
        user="u",
        client_id="c",
    )
    assert manager.record_and_throttle_ms(quota, 5_000, now_ms=0) > 0
    manager.unrecord(quota, 5_000, now_ms=0)
    assert manager.throttle_ms(quota, now_ms=0) == 0


def test_two_client_ids_with_default_quota_have_separate_rates() -> None:
    manager = QuotaManager(key=P, window_num=11, window_ms=1000)
    quotas = {entity(client_id=None): {P: 100.0}}
    flood = resolve(quotas, key=P, user="u", client_id="flood")
    quiet = resolve(quotas, key=P, user="u", client_id="quiet")
    assert manager.record_and_throttle_ms(flood, 1_000_000, now_ms=0) > 0
    assert manager.record_and_throttle_ms(quiet, 10, now_ms=0) == 0


def test_sensor_limit_drops_idle_sensors_first() -> None:
    manager = QuotaManager(key=P, window_num=2, window_ms=100, sensors_max=2)
    quotas = {entity(client_id=None): {P: 100.0}}
    for name, t in (("a", 0), ("b", 150), ("c", 300)):
        manager.record_and_throttle_ms(
            resolve(quotas, key=P, user="u", client_id=name), 1, now_ms=t
        )
        assert manager.sensors <= 2
    # "a" was idle at t=300 (its sample started 2 windows before), so it went first
    b = resolve(quotas, key=P, user="u", client_id="b")
    assert manager.throttle_ms(b, now_ms=300) == 0
    assert manager.sensors == 2
