"""log/leader_epochs.py: the end offset of a leader epoch, as Kafka's
LeaderEpochFileCache.endOffsetFor answers over a cache holding epoch 0 from the log
start."""

from __future__ import annotations

import pytest

from shoal.log.leader_epochs import LEADER_EPOCH, end_offset_for


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (LEADER_EPOCH, (0, 9)),  # the current epoch ends at the log end offset
        (-1, (-1, -1)),  # undefined
        (1, (-1, -1)),  # above every known epoch
        (7, (-1, -1)),
        (-2, (-2, 4)),  # below the first: keeps its number, ends at the log start
        (-100, (-100, 4)),
    ],
)
def test_end_offset_for(requested: int, expected: tuple[int, int]) -> None:
    assert end_offset_for(requested, log_start_offset=4, log_end_offset=9) == expected


def test_empty_log_current_epoch_ends_at_zero() -> None:
    assert end_offset_for(0, log_start_offset=0, log_end_offset=0) == (0, 0)
