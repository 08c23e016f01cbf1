"""Share sessions (docs/design/share-partition.md §11): epochs, limits, partition sets, response
listing.

Conformance items covered here (session half): 4, 5, 6, 7, 8, 9, 10 (limit), 13
(forgotten partitions leave the session), 17 (duplicate entries merged), 22 (listing).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.share.sessions import (
    FINAL_EPOCH,
    INT32_MAX,
    SessionStep,
    ShareSession,
    ShareSessionCache,
    TopicIdPartition,
    next_epoch,
)

T = uuid.UUID("00000000-0000-0000-0000-0000000000aa")
U = uuid.UUID("00000000-0000-0000-0000-0000000000bb")
P0, P1, Q0 = TopicIdPartition(T, 0), TopicIdPartition(T, 1), TopicIdPartition(U, 0)
GROUP = "g"


class LimitedCache(ShareSessionCache):
    """A session cache under `limit()`, read at each ShareFetch as the service does."""

    def __init__(self, limit: Callable[[], int]) -> None:
        super().__init__()
        self.limit = limit

    def share_fetch(self, **kw: Any) -> SessionStep:
        return super().share_fetch(**kw, max_sessions=self.limit())


def cache(limit: int = 10) -> ShareSessionCache:
    return LimitedCache(lambda: limit)


def open_session(
    c: ShareSessionCache,
    member: str = "m",
    *partitions: TopicIdPartition,
    group: str = GROUP,
    connection: int = 1,
) -> ShareSession:
    step = c.share_fetch(
        group_id=group,
        member_id=member,
        epoch=0,
        connection_id=connection,
        partitions=partitions or (P0,),
    )
    assert step.error is None and step.full and step.session is not None
    return step.session


def fetch(c: ShareSessionCache, epoch: int, member: str = "m", **kw: object) -> str | None:
    step = c.share_fetch(group_id=GROUP, member_id=member, epoch=epoch, connection_id=1, **kw)
    return step.error


def test_next_epoch_wraps_from_int32_max_to_one() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1


def test_epoch_zero_opens_a_session_expecting_one() -> None:
    c = cache()
    session = open_session(c, "m", P0, P1)
    assert session.epoch == 1
    assert list(session.partitions) == [P0, P1]
    assert len(c) == 1 and c.group_session_count(GROUP) == 1


def test_4_acknowledgements_at_epoch_zero_are_an_invalid_request() -> None:
    c = cache()
    step = c.share_fetch(
        group_id=GROUP,
        member_id="m",
        epoch=0,
        connection_id=1,
        partitions=[P0],
        has_acknowledgements=True,
    )
    assert step.error == ErrorCode.invalid_request
    assert len(c) == 0


def test_4_acknowledgements_at_epoch_zero_keep_an_existing_session() -> None:
    c = cache()
    session = open_session(c)
    step = c.share_fetch(
        group_id=GROUP,
        member_id="m",
        epoch=0,
        connection_id=1,
        partitions=[P0],
        has_acknowledgements=True,
    )
    assert step.error == ErrorCode.invalid_request
    assert c.get(GROUP, "m") is session


def test_5_share_acknowledge_at_epoch_zero() -> None:
    c = cache()
    open_session(c)
    step = c.share_acknowledge(group_id=GROUP, member_id="m", epoch=0)
    assert step.error == ErrorCode.invalid_share_session_epoch


def test_6_wrong_epoch_is_refused_and_changes_nothing() -> None:
    c = cache()
    session = open_session(c)
    assert fetch(c, 1, partitions=[P1]) is None
    assert session.epoch == 2
    assert fetch(c, 3, partitions=[Q0]) == ErrorCode.invalid_share_session_epoch
    assert session.epoch == 2 and list(session.partitions) == [P0, P1]
    assert fetch(c, 2) is None


@pytest.mark.parametrize("epoch", [5, FINAL_EPOCH])
def test_7_no_session(epoch: int) -> None:
    c = cache()
    assert fetch(c, epoch) == ErrorCode.share_session_not_found
    step = c.share_acknowledge(group_id=GROUP, member_id="m", epoch=epoch)
    assert step.error == ErrorCode.share_session_not_found


def test_8_share_acknowledge_advances_the_epoch_too() -> None:
    c = cache()
    session = open_session(c)
    step = c.share_acknowledge(group_id=GROUP, member_id="m", epoch=1)
    assert step.error is None and step.session is session and not step.final
    assert fetch(c, 1) == ErrorCode.invalid_share_session_epoch
    assert fetch(c, 2) is None
    assert session.epoch == 3


def test_epochs_wrap_after_int32_max() -> None:
    c = cache()
    session = open_session(c)
    session.epoch = INT32_MAX
    assert fetch(c, INT32_MAX) is None
    assert session.epoch == 1
    assert c.share_acknowledge(group_id=GROUP, member_id="m", epoch=1).error is None
    assert session.epoch == 2


def test_9_a_second_epoch_zero_replaces_the_session() -> None:
    c = cache()
    old = open_session(c, "m", P0)
    assert fetch(c, 1) is None
    step = c.share_fetch(group_id=GROUP, member_id="m", epoch=0, connection_id=2, partitions=[P1])
    assert step.error is None and step.dropped is old
    assert step.session is not old and step.session is c.get(GROUP, "m")
    assert list(step.session.partitions) == [P1]
    assert fetch(c, 2) == ErrorCode.invalid_share_session_epoch
    assert fetch(c, 1) is None
    assert len(c) == 1 and c.group_session_count(GROUP) == 1


def test_10_the_session_limit() -> None:
    c = cache(limit=1)
    open_session(c, "a")
    step = c.share_fetch(group_id=GROUP, member_id="b", epoch=0, connection_id=2, partitions=[P0])
    assert step.error == ErrorCode.share_session_limit_reached
    assert c.get(GROUP, "b") is None
    # The member at the limit may replace its own session.
    assert open_session(c, "a").epoch == 1
    # A closed connection frees the slot.
    assert [s.member_id for s in c.connection_closed(1)] == ["a"]
    assert open_session(c, "b", connection=2).epoch == 1


def test_the_limit_is_read_at_each_open() -> None:
    limit = [1]
    c = LimitedCache(lambda: limit[0])
    open_session(c, "a")
    assert fetch(c, 0, member="b", partitions=[P0]) == ErrorCode.share_session_limit_reached
    limit[0] = 2
    assert fetch(c, 0, member="b", partitions=[P0]) is None


def test_13_forgotten_partitions_leave_and_listed_ones_join() -> None:
    c = cache()
    session = open_session(c, "m", P0, P1)
    assert fetch(c, 1, partitions=[Q0], forgotten=[P0]) is None
    assert list(session.partitions) == [P1, Q0]
    assert session.partitions == {P1: False, Q0: True}


def test_17_duplicate_partitions_are_one_session_partition() -> None:
    c = cache()
    session = open_session(c, "m", P0, P0, P1)
    assert list(session.partitions) == [P0, P1]
    assert fetch(c, 1, partitions=[P1, P1, Q0, Q0]) is None
    assert list(session.partitions) == [P0, P1, Q0]


def test_final_step_keeps_the_session_until_closed() -> None:
    c = cache()
    session = open_session(c)
    step = c.share_fetch(group_id=GROUP, member_id="m", epoch=-1, connection_id=9)
    assert step.final and step.session is session and step.error is None
    assert c.get(GROUP, "m") is session
    assert c.close(session)
    assert c.get(GROUP, "m") is None and c.group_session_count(GROUP) == 0
    assert not c.close(session)


def test_a_final_share_acknowledge_of_any_epoch_value() -> None:
    c = cache()
    session = open_session(c)
    step = c.share_acknowledge(group_id=GROUP, member_id="m", epoch=-1)
    assert step.final and step.session is session


def test_connection_close_ends_only_its_sessions() -> None:
    c = cache()
    a = open_session(c, "a", connection=1)
    open_session(c, "b", connection=2)
    open_session(c, "c", group="other", connection=1)
    removed = c.connection_closed(1)
    assert {(s.group_id, s.member_id) for s in removed} == {(GROUP, "a"), ("other", "c")}
    assert a not in [c.get(GROUP, "b")]
    assert c.group_session_count(GROUP) == 1 and c.group_session_count("other") == 0
    assert c.connection_closed(1) == []


def test_a_replaced_session_belongs_to_the_new_connection() -> None:
    c = cache()
    open_session(c, "m", connection=1)
    new = open_session(c, "m", connection=2)
    assert c.connection_closed(1) == []
    assert c.get(GROUP, "m") is new
    assert c.connection_closed(2) == [new]


# ---- response listing (§11.3, 22) --------------------------------------------------------


def test_22_epoch_zero_lists_everything_later_only_notable_partitions() -> None:
    c = cache()
    session = open_session(c, "m", P0, P1)
    listed = ShareSessionCache.response_partitions(session, full=True)
    assert listed == [P0, P1]
    assert fetch(c, 1) is None
    assert ShareSessionCache.response_partitions(session, full=False, notable={P1}) == [P1]
    assert ShareSessionCache.response_partitions(session, full=False) == []


def test_newly_added_partitions_are_listed_once() -> None:
    c = cache()
    session = open_session(c, "m", P0)
    assert fetch(c, 1, partitions=[Q0]) is None
    assert ShareSessionCache.response_partitions(session, full=False) == [Q0]
    assert ShareSessionCache.response_partitions(session, full=False) == []


def test_acknowledged_partitions_are_appended() -> None:
    c = cache()
    session = open_session(c, "m", P0, P1)
    listed = ShareSessionCache.response_partitions(
        session, full=False, notable={P1}, acknowledged=[P0, P1, Q0]
    )
    assert listed == [P1, P0, Q0]


def test_a_final_response_lists_only_acknowledged_partitions() -> None:
    c = cache()
    session = open_session(c, "m", P0, P1)
    listed = ShareSessionCache.response_partitions(
        session, full=False, final=True, notable={P0}, acknowledged=[P1]
    )
    assert listed == [P1]
