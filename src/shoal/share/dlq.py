"""Dead-letter queue hand-out of one share-partition's window (KIP-1191).

ARCHIVING records (`states.py`) wait in the window, each offset with its reason in
`InFlightWindow.dlq_reasons`. `take_copies` hands out those whose state write is done
and that were not handed out yet, as `DlqCopy` effects (runs of adjacent offsets with
one delivery count, reason and recovered flag), marking them dispatched;
`finish_copies` moves handed-out offsets to ARCHIVED (DLQ_DONE) and returns the state
batches to write. `recovered` holds the offsets loaded as ARCHIVING from persisted
state, whose copy a crash may have left behind. Pure functions over the window.
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.share.persister import StateBatch
from shoal.share.states import Event, RecordState
from shoal.share.window import InFlightWindow


@dataclass(frozen=True, slots=True)
class DlqCopy:
    """Effect: copy offsets [first_offset, last_offset] of this share-partition to the
    group's dead-letter queue topic, then call `dlq_done` with them."""

    first_offset: int
    last_offset: int
    delivery_count: int
    reason: str
    """`__dlq.errors.message`: rejected, or delivery limit reached."""
    recovered: bool
    """Loaded as ARCHIVING from persisted state: a copy may already exist (a crash
    between the copy and the ARCHIVED write); the caller must dedupe."""


def take_copies(window: InFlightWindow, *, recovered: set[int]) -> tuple[DlqCopy, ...]:
    """Hand out the ARCHIVING offsets without a pending write not handed out yet."""
    copies: list[DlqCopy] = []
    run: list[int] = []
    run_key: tuple[int, str, bool] | None = None

    def flush() -> None:
        if run_key is not None and run:
            count, reason, was_recovered = run_key
            copies.append(DlqCopy(run[0], run[-1], count, reason, was_recovered))

    for offset in sorted(window.dlq_reasons.keys() - window.dlq_dispatched):
        batch = window.cache.batch_at(offset)
        assert batch is not None, offset
        st = batch.state_at(offset)
        if st.pending is not None:
            continue
        assert st.state is RecordState.ARCHIVING, (offset, st)
        key = (st.delivery_count, window.dlq_reasons[offset], offset in recovered)
        if key != run_key or offset != run[-1] + 1:
            flush()
            run, run_key = [], key
        run.append(offset)
        window.dlq_dispatched.add(offset)
    flush()
    return tuple(copies)


def finish_copies(
    window: InFlightWindow, first: int, last: int, *, limit: int, recovered: set[int]
) -> list[StateBatch]:
    """Handed-out offsets in [first, last] become ARCHIVED; the batches to write."""
    entries: list[StateBatch] = []
    for offset in range(first, last + 1):
        if offset not in window.dlq_dispatched:
            continue
        batch = window.cache.batch_at(offset)
        assert batch is not None, offset
        if batch.offsets is None and batch.size > 1:
            window.split(batch)
        st = batch.state_at(offset)
        assert st.state is RecordState.ARCHIVING and st.pending is None, (offset, st)
        window.move(st, offset, offset, Event.DLQ_DONE, limit=limit)
        recovered.discard(offset)
        previous = entries[-1] if entries else None
        if (
            previous is not None
            and previous.last_offset == offset - 1
            and previous.delivery_count == st.delivery_count
        ):
            entries[-1] = StateBatch(
                previous.first_offset, offset, previous.delivery_state, previous.delivery_count
            )
        else:
            entries.append(StateBatch(offset, offset, int(st.state), st.delivery_count))
    return entries
