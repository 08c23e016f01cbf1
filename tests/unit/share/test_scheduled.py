"""Scheduled delivery (header `shoal.deliver.at`, group config
`shoal.share.delivery.delay.max.ms`; share/schedule.py): a record is not handed out
before min(its time, its timestamp + the cap). Examples on the manual clock.

The wait ends on the monotonic clock one millisecond after the due time (the wall and
monotonic clocks are read in whole milliseconds: never early, at most 1 ms late), so
the tests step 1 ms past it."""

from __future__ import annotations

from tests.unit.share.keyed_rig import KeyedRig, offsets_of, started_keyed
from tests.unit.share.support import RELEASE, ack

CAP = 60_000


def at(rig: KeyedRig, delay_ms: int) -> bytes:
    return str(rig.clock.wall_ms() + delay_ms).encode()


def test_a_record_waits_for_its_time_and_the_others_go_at_once() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.append([(None, None), (None, at(rig, 1_000)), (None, None)])
    assert offsets_of(rig.fetch("m1")) == [0, 2]
    holds = rig.sp.delivery_holds()
    assert (holds.scheduled_records, holds.next_due_ms) == (1, rig.clock.wall_ms() + 1_000)
    waiting = [v for v in rig.sp.in_flight() if v.deliver_at_ms is not None]
    assert [(v.first_offset, v.deliver_at_ms) for v in waiting] == [(1, holds.next_due_ms)]
    assert rig.sp.next_redelivery_ms() == rig.clock.monotonic_ms() + 1_001  # the wake-up
    rig.clock.advance(1_000)
    assert offsets_of(rig.fetch("m2")) == []
    rig.clock.advance(1)
    assert rig.sp.redeliveries_due(now_ms=rig.clock.monotonic_ms())
    assert offsets_of(rig.fetch("m2")) == [1]
    assert rig.sp.delivery_holds().scheduled_records == 0


def test_the_cap_counts_from_the_record_timestamp() -> None:
    rig = started_keyed(delivery_delay_max_ms=2_000)
    rig.append([(None, at(rig, 10**9))], timestamp_ms=rig.clock.wall_ms() - 500)
    assert offsets_of(rig.fetch("m1")) == []
    assert rig.sp.delivery_holds().next_due_ms == rig.clock.wall_ms() + 1_500
    rig.clock.advance(1_501)
    assert offsets_of(rig.fetch("m1")) == [0]


def test_a_malformed_time_goes_at_once_and_is_counted() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.append([(None, b"soon"), (None, b""), (None, b"-5"), (None, b"1" * 20)])
    assert offsets_of(rig.fetch("m1")) == [0, 1, 2, 3]
    assert rig.sp.delivery_holds().malformed_deliver_at == 4


def test_a_time_in_the_past_goes_at_once() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.append([(None, at(rig, -1))])
    assert offsets_of(rig.fetch("m1")) == [0]


def test_off_by_default_the_header_is_ignored() -> None:
    rig = started_keyed()
    rig.append([(None, at(rig, 5_000))])
    assert offsets_of(rig.fetch("m1")) == [0]


def test_waiting_records_do_not_count_towards_the_in_flight_limit() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP, max_record_locks=3)
    rig.append([(None, at(rig, 1_000))] * 5)
    rig.append([(None, None)] * 3)
    assert offsets_of(rig.fetch("m1")) == [5, 6, 7]
    assert rig.sp.delivery_holds().scheduled_records == 5


def test_past_the_waiting_limit_new_records_stay_in_the_log_and_none_is_lost() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.options["scheduled_max"] = 3
    rig.load()
    rig.append([(None, at(rig, 1_000))] * 5 + [(None, None)])
    assert offsets_of(rig.fetch("m1")) == []  # the limit stops the walk at the 4th
    assert rig.sp.delivery_holds().scheduled_records == 3
    rig.clock.advance(1_001)
    got = offsets_of(rig.fetch("m1"))
    got += offsets_of(rig.fetch("m1"))
    assert got == [0, 1, 2, 3, 4, 5]


def test_a_restart_keeps_the_wait() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.append([(None, None), (None, at(rig, 1_000))])
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.ack("m1", ack(0, 0))
    rig.load()
    assert offsets_of(rig.fetch("m2")) == []
    assert rig.sp.delivery_holds().scheduled_records == 1
    rig.clock.advance(1_001)
    assert offsets_of(rig.fetch("m2")) == [1]


def test_only_the_first_delivery_waits() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.append([(None, at(rig, 1_000))])
    rig.clock.advance(1_000)
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.ack("m1", ack(0, 0, RELEASE))
    assert offsets_of(rig.fetch("m2")) == [0]


def test_with_key_order_a_waiting_record_holds_back_its_key() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP, key_ordered=True)
    rig.append([(b"a", at(rig, 1_000)), (b"a", None), (b"b", None)])
    assert offsets_of(rig.fetch("m1")) == [2]
    rig.clock.advance(1_001)
    assert offsets_of(rig.fetch("m1")) == [0, 1]


def test_records_done_behind_a_waiting_one_take_no_room() -> None:
    """A waiting record pins the start offset; the records done behind it do not count
    towards the in-flight limit (else one long wait would stop the share-partition)."""
    rig = started_keyed(delivery_delay_max_ms=CAP, max_record_locks=3)
    rig.append([(None, at(rig, 10_000))])
    for first in (1, 4, 7):
        rig.append([(None, None)] * 3)
        assert offsets_of(rig.fetch("m1")) == [first, first + 1, first + 2]
        rig.ack("m1", ack(first, first + 2))
    assert rig.sp.start_offset == 0


def test_the_window_spans_at_most_the_limit_and_then_waits_for_the_start() -> None:
    rig = started_keyed(delivery_delay_max_ms=CAP)
    rig.sp.window_span_max = 4
    rig.append([(None, at(rig, 1_000))])
    rig.append([(None, None)] * 3)
    assert offsets_of(rig.fetch("m1")) == [1, 2, 3]
    rig.ack("m1", ack(1, 3))
    rig.append([(None, None)])
    assert offsets_of(rig.fetch("m1")) == []  # offsets 0-3 span the limit
    rig.clock.advance(1_001)
    assert offsets_of(rig.fetch("m1")) == [0]  # inside the window only
    rig.ack("m1", ack(0, 0))
    assert offsets_of(rig.fetch("m1")) == [4]
