"""The transition table (docs/design/share-partition.md §2)."""

from __future__ import annotations

import itertools

import pytest

from shoal.share.states import (
    DLQ_CHOICE_EVENTS,
    TRANSITIONS,
    Event,
    IllegalTransition,
    RecordState,
    is_legal,
    next_delivery_count,
    target_state,
    throttle_threshold,
)

S = RecordState


def test_persisted_ids() -> None:
    assert [(s.name, int(s)) for s in RecordState] == [
        ("AVAILABLE", 0),
        ("ACQUIRED", 1),
        ("ACKNOWLEDGED", 2),
        ("ARCHIVING", 3),
        ("ARCHIVED", 4),
    ]


def test_terminal_states_never_change() -> None:
    for state in (S.ACKNOWLEDGED, S.ARCHIVED):
        assert state.is_terminal
        for event in Event:
            assert not is_legal(state, event)
            with pytest.raises(IllegalTransition):
                target_state(state, event, delivery_count=1, limit=5, below_start=False)


def test_archiving_waits_only_for_its_dlq_copy() -> None:
    """KIP-1191: ARCHIVING is not terminal (the SPSO stops before it) and leaves only
    for ARCHIVED once its dead-letter copy is done."""
    assert not S.ARCHIVING.is_terminal
    for event in Event:
        assert is_legal(S.ARCHIVING, event) == (event is Event.DLQ_DONE), event
    assert (
        target_state(S.ARCHIVING, Event.DLQ_DONE, delivery_count=2, limit=5, below_start=False)
        is S.ARCHIVED
    )


@pytest.mark.parametrize("event", [Event.RELEASE, Event.LOCK_EXPIRED, Event.SESSION_RELEASE])
def test_delivery_limit_goes_archiving_with_a_dlq(event: Event) -> None:
    def target(count: int, *, below: bool = False) -> RecordState:
        return target_state(
            S.ACQUIRED, event, delivery_count=count, limit=3, below_start=below, dlq=True
        )

    assert target(2) is S.AVAILABLE
    assert target(3) is S.ARCHIVING
    assert target(4) is S.ARCHIVING
    assert target(3, below=True) is S.ARCHIVED  # below the SPSO: nothing to copy


def test_reject_goes_archiving_with_a_dlq_and_gap_never() -> None:
    def target(event: Event, *, dlq: bool) -> RecordState:
        return target_state(
            S.ACQUIRED, event, delivery_count=1, limit=5, below_start=False, dlq=dlq
        )

    assert target(Event.REJECT, dlq=True) is S.ARCHIVING
    assert target(Event.REJECT, dlq=False) is S.ARCHIVED
    assert target(Event.GAP, dlq=True) is S.ARCHIVED
    assert target(Event.ABORTED, dlq=True) is S.ARCHIVED


def test_only_renew_keeps_the_state() -> None:
    for (source, event), targets in TRANSITIONS.items():
        assert (source in targets) == (event is Event.RENEW), (source, event)


@pytest.mark.parametrize("event", [Event.RELEASE, Event.LOCK_EXPIRED, Event.SESSION_RELEASE])
def test_two_way_events(event: Event) -> None:
    def target(count: int, *, below: bool = False) -> RecordState:
        return target_state(S.ACQUIRED, event, delivery_count=count, limit=3, below_start=below)

    assert target(2) is S.AVAILABLE
    assert target(3) is S.ARCHIVED
    assert target(4) is S.ARCHIVED  # a lowered limit
    assert target(1, below=True) is S.ARCHIVED


def test_available_accepts_only_acquisition_and_archival() -> None:
    legal = {event for (source, event) in TRANSITIONS if source is S.AVAILABLE}
    assert legal == {Event.ACQUIRE, Event.LOG_START_PASSED, Event.COMPACTED, Event.OVER_LIMIT}
    with pytest.raises(IllegalTransition):
        target_state(S.AVAILABLE, Event.ACCEPT, delivery_count=1, limit=5, below_start=False)


def test_only_acquisition_counts_a_delivery() -> None:
    assert [next_delivery_count(2, e) for e in Event] == [
        3 if e is Event.ACQUIRE else 2 for e in Event
    ]


@pytest.mark.parametrize(("limit", "threshold"), [(2, 2), (3, 2), (4, 2), (5, 3), (7, 4), (10, 5)])
def test_throttle_threshold(limit: int, threshold: int) -> None:
    assert throttle_threshold(limit) == threshold


def test_dlq_is_read_only_for_the_events_that_may_choose_archiving() -> None:
    """`DLQ_CHOICE_EVENTS` (the window skips reading the group's DLQ setting for the
    other events): outside it, `target_state` answers alike with and without a DLQ."""
    for state, event in TRANSITIONS:
        if event in DLQ_CHOICE_EVENTS:
            continue
        for count, limit, below in itertools.product((1, 5), (1, 5), (False, True)):
            targets = {
                target_state(
                    state, event, delivery_count=count, limit=limit, below_start=below, dlq=dlq
                )
                for dlq in (False, True)
            }
            assert len(targets) == 1, (state, event)
    assert any(
        target_state(S.ACQUIRED, e, delivery_count=5, limit=5, below_start=False, dlq=True)
        is S.ARCHIVING
        for e in DLQ_CHOICE_EVENTS
    )


def test_events_hash_by_identity_consistently_with_equality() -> None:
    assert len({*Event, *Event}) == len(Event)
    assert all(hash(e) == hash(Event[e.name]) for e in Event)
