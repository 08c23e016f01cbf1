"""`within_log`: persisted share state cut to the log it describes, as a load does
after a power loss kept state writes whose records the data log lost."""

from __future__ import annotations

from shoal.share.persister import (
    DELIVERY_STATE_ACKNOWLEDGED,
    DELIVERY_STATE_AVAILABLE,
    PersistedState,
    StateBatch,
    within_log,
)


def _batch(first: int, last: int, state: int = DELIVERY_STATE_AVAILABLE) -> StateBatch:
    return StateBatch(first, last, state, 1)


def test_a_state_within_the_log_is_unchanged() -> None:
    state = PersistedState(3, 10, (_batch(10, 12), _batch(14, 19)))
    assert within_log(state, 20) is state
    uninitialised = PersistedState(0, -1)
    assert within_log(uninitialised, 0) is uninitialised


def test_a_start_offset_past_the_log_end_comes_back_to_it() -> None:
    state = PersistedState(3, 18, (_batch(18, 20, DELIVERY_STATE_ACKNOWLEDGED),))
    cut = within_log(state, 13)
    assert cut == PersistedState(3, 13, ())


def test_batches_past_the_log_end_are_cut() -> None:
    state = PersistedState(1, 5, (_batch(5, 6), _batch(8, 12, DELIVERY_STATE_ACKNOWLEDGED)))
    cut = within_log(state, 10)
    assert cut.start_offset == 5
    assert cut.state_batches == (_batch(5, 6), _batch(8, 9, DELIVERY_STATE_ACKNOWLEDGED))
    assert within_log(state, 8).state_batches == (_batch(5, 6),)
