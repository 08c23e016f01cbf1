"""Delayed redelivery and paused delivery, Shoal's share-group extensions, in the
share-partition core on the manual clock (share/redelivery.py, settings.py)."""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import SharePartitionConfig
from tests.unit.share.support import (
    ACCEPT,
    ACK,
    ACQ,
    AV,
    RELEASE,
    ack,
    ranges,
    started,
    view,
)

BACKOFF = {"redelivery_backoff_ms": 1_000, "redelivery_backoff_multiplier": 2.0}


def test_released_three_times_is_delivered_at_t_t1_t3_t7() -> None:
    """Backoff 1 s doubling: deliveries at exactly t, t+1 s, t+3 s, t+7 s."""
    rig = started((0, 0), **BACKOFF)
    t = rig.clock.monotonic_ms()
    delivered = []
    for delivery in range(1, 5):
        due = rig.sp.next_redelivery_ms()
        if due is not None:
            rig.clock.advance(due - 1 - rig.clock.monotonic_ms())
            assert ranges(rig.fetch("a")) == [], f"delivery {delivery} came early"
            assert rig.sp.next_fetch_offset() == 1, "the delayed record is passed over"
            assert not rig.sp.redeliveries_due(now_ms=rig.clock.monotonic_ms())
            rig.clock.advance(1)
            assert rig.sp.redeliveries_due(now_ms=rig.clock.monotonic_ms())
        assert ranges(rig.fetch("a")) == [(0, 0, delivery)]
        delivered.append(rig.clock.monotonic_ms() - t)
        if delivery < 4:
            rig.ack("a", ack(0, 0, RELEASE))
            assert view(rig.sp) == [(0, 0, AV, delivery, "")]
    assert delivered == [0, 1_000, 3_000, 7_000]
    assert rig.sp.next_redelivery_ms() is None


def test_lock_expiry_is_delayed_too_and_the_backoff_is_capped() -> None:
    rig = started((0, 4), **BACKOFF, redelivery_backoff_max_ms=1_500)
    assert ranges(rig.fetch("a")) == [(0, 4, 1)]
    rig.expire(30_000)  # lock runs out at 30 s: available from 31 s
    assert rig.sp.next_redelivery_ms() == 31_000
    assert ranges(rig.fetch("b")) == []
    rig.clock.advance(1_000)
    assert ranges(rig.fetch("b")) == [(0, 4, 2)]
    assert rig.sp.redeliveries_due(now_ms=rig.clock.monotonic_ms())
    rig.ack("b", ack(0, 4, RELEASE))  # 1000 * 2 = 2000, capped at 1500
    assert rig.sp.next_redelivery_ms() == 31_000 + 1_500


def test_a_delayed_batch_is_not_passed_for_ever() -> None:
    """Later records flow while an earlier batch waits; the start offset stays
    below it; once due it is taken first, in offset order, as one batch."""
    rig = started((0, 4), **BACKOFF)
    assert ranges(rig.fetch("a")) == [(0, 4, 1)]
    rig.ack("a", ack(0, 4, RELEASE))
    rig.produce((5, 9))
    assert ranges(rig.fetch("b")) == [(5, 9, 1)]
    rig.ack("b", ack(5, 9, ACCEPT))
    assert rig.sp.start_offset == 0
    assert view(rig.sp) == [(0, 4, AV, 1, ""), (5, 9, ACK, 1, "")]
    rig.produce((10, 12))
    rig.clock.advance(1_000)
    assert ranges(rig.fetch("b")) == [(0, 4, 2), (10, 12, 1)]
    rig.ack("b", ack(0, 4, ACCEPT))
    assert rig.sp.start_offset == 10


def test_the_delay_is_per_batch_or_per_offset_of_a_split_batch() -> None:
    rig = started((0, 9), **BACKOFF)
    rig.fetch("a")
    # One RELEASE inside the batch: only offset 3 waits.
    types = [ACCEPT] * 10
    types[3] = RELEASE
    rig.ack("a", AckBatch(0, 9, tuple(types)))
    assert rig.sp.start_offset == 3
    rig.produce((10, 11))
    assert ranges(rig.fetch("a")) == [(10, 11, 1)]
    rig.clock.advance(1_000)
    assert ranges(rig.fetch("a")) == [(3, 3, 2)]
    # A whole-batch release keeps one entry (no split).
    rig.ack("a", ack(10, 11, RELEASE))
    assert [(v.first_offset, v.last_offset) for v in rig.sp.in_flight() if v.state is AV] == [
        (10, 11)
    ]


def test_session_release_and_the_default_config_redeliver_at_once() -> None:
    rig = started((0, 4), **BACKOFF)
    rig.fetch("a")
    pending = rig.sp.release_member(member_id="a")
    assert pending is not None
    rig.complete(pending)
    assert rig.sp.next_redelivery_ms() is None
    assert ranges(rig.fetch("b")) == [(0, 4, 2)]
    plain = started((0, 4))  # Kafka's behaviour by default
    plain.fetch("a")
    plain.ack("a", ack(0, 4, RELEASE))
    assert plain.sp.next_redelivery_ms() is None
    assert ranges(plain.fetch("a")) == [(0, 4, 2)]


def test_a_reload_forgets_the_delay_and_keeps_the_delivery_count() -> None:
    """The delay is not persisted: after a restart the record is available at once."""
    rig = started((0, 4), **BACKOFF)
    rig.fetch("a")
    rig.ack("a", ack(0, 4, RELEASE))
    assert ranges(rig.fetch("a")) == []
    rig.load()
    assert ranges(rig.fetch("a")) == [(0, 4, 2)]


def test_a_failed_release_write_whose_lock_expired_is_delayed_from_the_expiry() -> None:
    rig = started((0, 4), **BACKOFF)
    rig.fetch("a")
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 4, RELEASE)])
    assert result.pending is not None
    rig.clock.advance(30_000)
    rig.complete(result.pending, fail=True)  # lock gone meanwhile: LOCK_EXPIRED
    assert view(rig.sp) == [(0, 4, AV, 1, "")]
    # The release's own delay (1 s) is stale: only a spurious wake-up.
    assert rig.sp.redeliveries_due(now_ms=rig.clock.monotonic_ms())
    assert rig.sp.next_redelivery_ms() == 31_000
    assert ranges(rig.fetch("b")) == []
    rig.clock.advance(1_000)
    assert ranges(rig.fetch("b")) == [(0, 4, 2)]


def test_redelivery_delay_formula() -> None:
    config = SharePartitionConfig(
        redelivery_backoff_ms=100,
        redelivery_backoff_multiplier=3.0,
        redelivery_backoff_max_ms=1_000,
    )
    assert [config.redelivery_delay_ms(n) for n in range(1, 6)] == [100, 300, 900, 1_000, 1_000]
    assert SharePartitionConfig().redelivery_delay_ms(3) == 0
    flat = SharePartitionConfig(redelivery_backoff_ms=50, redelivery_backoff_multiplier=1.0)
    assert flat.redelivery_delay_ms(10_000) == 50


# ---- paused delivery


def test_pause_stops_acquisition_and_resume_restores_it() -> None:
    rig = started((0, 4), (5, 9))
    assert ranges(rig.fetch("a", max_records=5)) == [(0, 4, 1)]
    rig.set(delivery_paused=True)
    assert not rig.sp.can_acquire()
    assert ranges(rig.fetch("a")) == []
    # Acknowledgements still work while paused, and held locks run out normally.
    assert rig.ack("a", ack(0, 1, ACCEPT)).error is None
    assert rig.expire(30_000)
    assert view(rig.sp) == [(0, 1, ACK, 1, ""), (2, 4, AV, 1, "")]
    assert ranges(rig.fetch("b")) == []
    assert rig.ack("a", ack(2, 2, ACCEPT)).error == ErrorCode.invalid_record_state
    rig.set(delivery_paused=False)
    assert rig.sp.can_acquire()
    assert ranges(rig.fetch("b")) == [(2, 4, 2), (5, 9, 1)]
    assert view(rig.sp)[-1] == (5, 9, ACQ, 1, "b")


def test_delayed_records_count_towards_the_record_locks_cap() -> None:
    """A window full of delayed records takes no new ones; when they are due they go
    out first, and only then does the window move on."""
    rig = started((0, 9), **BACKOFF, max_record_locks=10)
    assert ranges(rig.fetch("a")) == [(0, 9, 1)]
    rig.ack("a", ack(0, 9, RELEASE))
    rig.produce((10, 19))
    assert ranges(rig.fetch("a")) == [], "the window is full of waiting records"
    assert not rig.sp.can_acquire()
    rig.clock.advance(1_000)
    assert rig.sp.can_acquire()
    assert ranges(rig.fetch("a")) == [(0, 9, 2)]
    rig.ack("a", ack(0, 9, ACCEPT))
    assert ranges(rig.fetch("a")) == [(10, 19, 1)]
