"""Leader epochs of a partition log, and the end offset of one (OffsetForLeaderEpoch).

One node leads every partition for its whole life, so every partition has had one
leader epoch, `LEADER_EPOCH` (0), since its first offset: each batch is stamped with it
when appended and Metadata reports it. Kafka's leader-epoch cache of such a log holds
one entry, epoch 0 starting at the log start offset (the cache's first entry moves up
with the log start, Kafka's `LeaderEpochFileCache.truncateFromStart`).

`end_offset_for` answers as Kafka's `LeaderEpochFileCache.endOffsetFor` does over that
cache: the current epoch ends at the log end offset; an epoch above every known one and
the undefined epoch (-1) have no end (-1, -1); an epoch below the first known one ends
where the first known one starts, and keeps its own number.
"""

from __future__ import annotations

LEADER_EPOCH = 0
"""The leader epoch of every partition this node leads (all of them)."""
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


def end_offset_for(
    requested: int, *, log_start_offset: int, log_end_offset: int
) -> tuple[int, int]:
    """(epoch, end offset) of `requested` in a log whose only epoch is `LEADER_EPOCH`,
    starting at `log_start_offset`; (-1, -1) when the epoch has none."""
    if requested == UNDEFINED_EPOCH or requested > LEADER_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if requested == LEADER_EPOCH:
        return LEADER_EPOCH, log_end_offset
    return requested, log_start_offset
