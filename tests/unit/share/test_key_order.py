"""Key-ordered acquisition (`shoal.share.delivery.order=key`, share/key_order.py): a
record is handed out only when no earlier record of its key is still in flight, except
within one acquisition; null keys are unordered. Examples on the manual clock; the
state machine is in test_key_order_stateful.py."""

from __future__ import annotations

from shoal.share.key_order import UNKNOWN, RecordKeys
from tests.unit.share.keyed_rig import offsets_of, started_keyed
from tests.unit.share.support import RELEASE, ack


def test_consecutive_records_of_one_key_go_together_to_one_member() -> None:
    rig = started_keyed(key_ordered=True)
    rig.append([(b"a", None), (b"b", None), (b"a", None), (b"c", None), (b"a", None)])
    assert offsets_of(rig.fetch("m1")) == [0, 1, 2, 3, 4]
    assert rig.sp.delivery_holds().blocked_records == 0


def test_a_key_in_flight_holds_back_its_later_records_and_others_go() -> None:
    rig = started_keyed(key_ordered=True)
    rig.append([(b"a", None), (b"b", None)])
    assert offsets_of(rig.fetch("m1")) == [0, 1]
    rig.append([(b"a", None), (b"c", None), (b"b", None), (b"d", None)])
    assert offsets_of(rig.fetch("m2")) == [3, 5]
    holds = rig.sp.delivery_holds()
    assert (holds.blocked_keys, holds.blocked_records) == (2, 2)
    assert {key for key, _ in holds.top_blocked_keys} == {b"a", b"b"}
    blocked = {v.first_offset for v in rig.sp.in_flight() if v.key_blocked}
    assert blocked == {2, 4}
    assert offsets_of(rig.fetch("m3")) == []
    rig.ack("m1", ack(0, 0))
    assert offsets_of(rig.fetch("m3")) == [2]
    rig.ack("m1", ack(1, 1))
    assert offsets_of(rig.fetch("m2")) == [4]
    assert rig.sp.delivery_holds().blocked_records == 0


def test_unordered_group_hands_out_the_same_records_at_once() -> None:
    rig = started_keyed()
    rig.append([(b"a", None)])
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.append([(b"a", None), (b"a", None)])
    assert offsets_of(rig.fetch("m2")) == [1, 2]


def test_null_keys_are_never_held_back() -> None:
    rig = started_keyed(key_ordered=True)
    rig.append([(None, None), (b"a", None)])
    assert offsets_of(rig.fetch("m1")) == [0, 1]
    rig.append([(None, None), (b"a", None), (None, None)])
    assert offsets_of(rig.fetch("m2")) == [2, 4]


def test_a_released_record_goes_again_before_the_later_ones_of_its_key() -> None:
    rig = started_keyed(key_ordered=True)
    rig.append([(b"a", None)])
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.append([(b"a", None), (b"b", None)])
    assert offsets_of(rig.fetch("m2")) == [2]
    rig.ack("m1", ack(0, 0, RELEASE))
    # the released record and the one it held back go together, in order
    assert offsets_of(rig.fetch("m3")) == [0, 1]
    assert rig.sp.in_flight()[0].delivery_count == 2


def test_an_expired_lock_keeps_the_order() -> None:
    rig = started_keyed(key_ordered=True, record_lock_duration_ms=1_000)
    rig.append([(b"a", None)])
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.append([(b"a", None)])
    assert offsets_of(rig.fetch("m2")) == []
    rig.expire(1_000)
    assert offsets_of(rig.fetch("m2")) == [0, 1]


def test_archiving_at_the_delivery_limit_unblocks_the_key() -> None:
    rig = started_keyed(key_ordered=True, delivery_count_limit=2)
    rig.append([(b"a", None), (b"b", None)])
    rig.append([(b"a", None)])
    assert offsets_of(rig.fetch("m1", max_records=1)) == [0, 1]  # the first log batch
    rig.ack("m1", ack(0, 0, RELEASE), ack(1, 1))
    assert offsets_of(rig.fetch("m1", max_records=1)) == [0]  # second and last delivery
    rig.ack("m1", ack(0, 0, RELEASE))  # archived at the limit
    assert rig.sp.start_offset == rig.durable().start_offset == 2
    assert offsets_of(rig.fetch("m2")) == [2]


def test_a_restart_keeps_the_order() -> None:
    rig = started_keyed(key_ordered=True)
    rig.append([(b"a", None), (b"b", None)])
    assert offsets_of(rig.fetch("m1")) == [0, 1]
    rig.ack("m1", ack(1, 1))
    rig.append([(b"a", None), (b"b", None)])
    assert offsets_of(rig.fetch("m2")) == [3]  # 2 waits for 0
    rig.load()  # a broker restart: the locks are gone, keys are read again
    assert offsets_of(rig.fetch("m3")) == [0, 2, 3]  # 0 first, 2 with it
    assert offsets_of(rig.fetch("m2")) == []


def test_one_acquisition_passes_at_most_the_scan_bound_of_held_records() -> None:
    rig = started_keyed(key_ordered=True)
    rig.options["key_scan_max"] = 2
    rig.load()
    rig.append([(b"h", None)])
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.append([(b"h", None)] * 4 + [(b"x", None)])
    assert offsets_of(rig.fetch("m2")) == []  # stopped after passing 2 held records
    rig.sp.key_scan_max = 10
    assert offsets_of(rig.fetch("m2")) == [5]


def test_a_hot_key_holds_back_at_most_the_limit_and_then_new_records_wait() -> None:
    """Held-back records take no room under the in-flight limit (they hold no lock),
    but at most `key_scan_max` are kept: past that, the log keeps the rest."""
    rig = started_keyed(key_ordered=True, max_record_locks=3)
    rig.options["key_scan_max"] = 5
    rig.load()
    rig.append([(b"h", None)])
    assert offsets_of(rig.fetch("m1")) == [0]
    rig.append([(b"h", None)] * 5 + [(b"y", None)])
    assert offsets_of(rig.fetch("m2")) == [6]  # five held back, taking no room
    assert rig.sp.delivery_holds().blocked_records == 5
    rig.append([(b"h", None), (b"z", None)])
    assert offsets_of(rig.fetch("m3")) == []  # a sixth would pass the limit: z waits
    rig.ack("m1", ack(0, 0))
    rig.ack("m2", ack(6, 6))
    # the hot key's run goes whole to one member (MaxRecords is checked before it)
    assert offsets_of(rig.fetch("m3")) == [1, 2, 3, 4, 5]
    assert offsets_of(rig.fetch("m1")) == []  # five locks held: the in-flight limit is 3
    rig.ack("m3", ack(1, 5))
    assert offsets_of(rig.fetch("m1")) == [7, 8]


def test_keys_are_kept_per_log_batch_so_compacted_holes_take_no_room() -> None:
    """Two batches 10 million offsets apart (a compacted log): learning them keeps two
    short lists, and the hole between reads as no record (None), not UNKNOWN."""
    keys = RecordKeys(0)
    keys.learn([(0, [b"a", None]), (10_000_000, [b"b"])], high=10_000_000)
    assert sum(len(batch) for batch in keys._keys) == 3
    assert keys.between(0, 1) == [b"a", None]
    assert keys.between(1, 3) == [None, None, None]
    assert keys.get(10_000_000) == b"b"
    assert keys.get(10_000_001) is UNKNOWN
    assert keys.between(9_999_999, 10_000_001) == [None, b"b", UNKNOWN]
    assert keys.knows(0, 10_000_000) and not keys.knows(0, 10_000_001)
    keys.enter(0, 1)
    keys.enter(10_000_000, 10_000_000)
    assert keys.in_flight == {b"a": 1, b"b": 1}
    keys.leave(0, 1)
    assert keys.in_flight == {b"b": 1}
