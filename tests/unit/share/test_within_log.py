"""`within_log` and `persist_cut`: persisted share state cut to the log it describes,
as a load does after a power loss kept state writes whose records the data log lost."""

from __future__ import annotations

import uuid

from shoal.share.persister import (
    DELIVERY_STATE_ACKNOWLEDGED,
    DELIVERY_STATE_AVAILABLE,
    InMemoryPersister,
    PersistedState,
    SharePartitionKey,
    StateBatch,
    StateWrite,
    persist_cut,
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


def test_a_cut_is_persisted_so_a_second_load_finds_it() -> None:
    """The coordinator never moves a start offset back on a write: `persist_cut`
    initialises again at a start that came back, and marks offsets cut off as never
    delivered, so the records the log gives them next are delivered."""
    persister = InMemoryPersister()
    key = SharePartitionKey("g", uuid.UUID(int=7), 0)
    assert persister.initialize(key=key, state_epoch=2, start_offset=5) is None
    acked = _batch(10, 12, DELIVERY_STATE_ACKNOWLEDGED)
    write = StateWrite(
        key=key,
        state_epoch=2,
        leader_epoch=0,
        start_offset=6,
        delivery_complete_count=4,
        state_batches=(_batch(6, 6, DELIVERY_STATE_ACKNOWLEDGED), _batch(7, 9), acked),
    )
    assert persister.write(write=write) is None
    persisted = persister.read(key=key, leader_epoch=0).state
    assert persisted is not None
    cut = within_log(persisted, 9)
    assert cut.state_batches == (_batch(6, 6, DELIVERY_STATE_ACKNOWLEDGED), _batch(7, 8))
    error = persist_cut(persister, key, persisted, cut, leader_epoch=0)
    assert error is None
    again = persister.read(key=key, leader_epoch=0).state
    assert again is not None
    assert again.start_offset == 6
    assert within_log(again, 9) == cut
    assert again.state_batches == cut.state_batches  # 10..12 no longer ACKNOWLEDGED
    past = PersistedState(2, 20, ())
    persister2 = InMemoryPersister()
    assert persister2.initialize(key=key, state_epoch=2, start_offset=20) is None
    moved = within_log(past, 9)
    error = persist_cut(persister2, key, past, moved, leader_epoch=0)
    assert error is None
    back = persister2.read(key=key, leader_epoch=0).state
    assert back is not None and back.start_offset == 9
