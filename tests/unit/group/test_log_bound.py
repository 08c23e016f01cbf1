"""group/log_bound.py: which records a maintenance pass re-writes. Whole groups, the
group's live records from its oldest old key onward in log order, oldest group first,
and no more than `records_max` records beyond the group that reaches it."""

from __future__ import annotations

from shoal.coordinator import NO_OFFSET
from shoal.group import records as r
from shoal.group.log_bound import GroupLogKeys


def commit(group: str, partition: int, offset: int) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.OffsetCommitKey(group_id=group, topic="t", partition=partition),
        value=r.OffsetCommitValue(offset=offset, leader_epoch=-1, metadata="", commit_timestamp=0),
    )


def epoch(group: str, value: int) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ConsumerGroupMetadataKey(group_id=group),
        value=r.ConsumerGroupMetadataValue(epoch=value, metadata_hash=0),
    )


def replay_all(keys: GroupLogKeys, records: list[r.CoordinatorRecord]) -> None:
    for offset, record in enumerate(records):
        keys.replayed(record, offset)


def test_a_groups_suffix_from_its_oldest_old_key_is_re_written_in_log_order() -> None:
    keys = GroupLogKeys()
    for offset, record in [
        (0, epoch("a", 1)),  # old
        (1, commit("b", 0, 1)),  # superseded at 13
        (2, commit("a", 0, 5)),  # old
        (13, commit("b", 0, 2)),  # b's latest, inside the window
        (14, commit("a", 1, 6)),  # inside the window, but after a's old keys
    ]:
        keys.replayed(record, offset)
    # end 15, 4 live keys: with a window of 8, stale means below 15 - 8 - 4 = 3
    assert keys.rewrite_records(window_records=8, records_max=100) == (
        epoch("a", 1),
        commit("a", 0, 5),
        commit("a", 1, 6),
    )
    assert keys.prune_offset() == 0
    assert keys.rewrite_records(window_records=11, records_max=100) == ()


def test_records_max_stops_between_groups_never_inside_one() -> None:
    keys = GroupLogKeys()
    log = [commit("a", p, 1) for p in range(3)] + [commit("b", p, 1) for p in range(3)]
    replay_all(keys, log)
    keys.replayed(epoch("c", 1), 30)  # end 31, 7 live keys
    first = keys.rewrite_records(window_records=1, records_max=2)
    assert first == tuple(log[:3])  # all of a (past the max), none of b
    for offset, record in enumerate(first, start=31):  # the shell appends them
        keys.replayed(record, offset)
    # the next pass picks b up (stale: below 34 - 4 - 7 = 23; c at 30 is not)
    assert keys.rewrite_records(window_records=4, records_max=2) == tuple(log[3:])


def test_tombstoned_keys_are_neither_re_written_nor_needed() -> None:
    keys = GroupLogKeys()
    gone = r.CoordinatorRecord(key=commit("a", 0, 0).key, value=None)
    replay_all(keys, [commit("a", 0, 1), commit("b", 0, 1), gone])
    assert keys.rewrite_records(window_records=0, records_max=100) == (commit("b", 0, 1),)
    assert keys.prune_offset() == 1  # (stale: below 3 - 0 - 1 live key = 2)
    assert keys.live_keys() == 1


def test_the_partition_is_kept_whole_once_an_offset_is_unknown() -> None:
    keys = GroupLogKeys()
    keys.replayed(commit("g", 0, 1), 7)
    assert keys.prune_offset() == 7
    assert (keys.end_offset(), keys.live_keys()) == (8, 1)
    keys.replayed(commit("g", 1, 1), NO_OFFSET)  # unknown offset: keep the whole partition
    assert keys.prune_offset() is None
