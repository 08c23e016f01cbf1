"""Record states, the events acknowledgement types map to, and the legal transitions,
as one table. (`AcknowledgeType` and `AcquireMode` are wire enums, defined in
`shoal.protocol.share` and re-exported here.)

Theory of operation. Every offset a share-partition has handed out (or learnt about
from persisted state) has a `RecordState`, a delivery count and, while ACQUIRED, an
owner and an acquisition lock. Records change state only through an `Event`; the
table `TRANSITIONS` lists, for each (state, event) pair that is legal, the states it
may lead to. Where an event has two possible outcomes (a release, a lock expiry or a
session release leads to AVAILABLE, or to ARCHIVED once the delivery limit is reached
or the offset lies below the start offset) `target_state` chooses between them. Any
pair missing from the table is illegal; terminal states (ACKNOWLEDGED, ARCHIVED)
appear on no left-hand side, so they never change.

Only the delivery count rule lives beside the table: ACQUIRE adds one, every other
event keeps it (Kafka 4.2 no longer decrements on session release).

The numeric ids are the persisted ones (`DeliveryState` in share-group state records):
0 AVAILABLE, 1 ACQUIRED (never persisted), 2 ACKNOWLEDGED, 3 ARCHIVING, 4 ARCHIVED.

Dead-letter queues (KIP-1191). For a group with a DLQ topic, `target_state(...,
dlq=True)` sends a REJECTed record, and one archived because its delivery count
reached the limit, to ARCHIVING instead of ARCHIVED: it waits there (persisted, not
terminal, so the start offset stops before it) while its copy is written to the DLQ
topic, then DLQ_DONE makes it ARCHIVED. GAPs, records below the start offset and
other archivals (compaction holes, aborted transactions, a lowered limit) are not
undeliverable records and go straight to ARCHIVED. Why a record is ARCHIVING
(`dlq_reason`: rejected, or the delivery limit) is persisted with its state batch
(`REASON_CODES`) and read back by `reason_of_code`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from shoal.protocol.share import AcknowledgeType
from shoal.share_coordinator.state import (
    DLQ_REASON_DELIVERY_LIMIT,
    DLQ_REASON_REJECTED,
    DLQ_REASON_UNKNOWN,
)


class RecordState(enum.IntEnum):
    """State of one in-flight record; values are the persisted ids."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    """Waiting for its copy on the group's dead-letter queue topic (KIP-1191)."""
    ARCHIVED = 4

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES: Final = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})
PERSISTED_STATES: Final = frozenset(
    {
        RecordState.AVAILABLE,
        RecordState.ACKNOWLEDGED,
        RecordState.ARCHIVING,
        RecordState.ARCHIVED,
    }
)
"""States a StateBatch may carry (ACQUIRED is never written)."""


class Event(enum.Enum):
    """What can happen to a record."""

    ACQUIRE = "acquired by a member"
    ACCEPT = "acknowledged ACCEPT by its owner"
    REJECT = "acknowledged REJECT by its owner"
    GAP = "acknowledged GAP by its owner"
    RELEASE = "acknowledged RELEASE by its owner"
    RENEW = "acknowledged RENEW by its owner (lock re-armed)"
    LOCK_EXPIRED = "acquisition lock expired"
    SESSION_RELEASE = "owner's share session closed or connection dropped"
    LOG_START_PASSED = "log start offset moved past it"
    COMPACTED = "no longer in the log (compaction hole)"
    OVER_LIMIT = "delivery limit lowered below its count"
    ABORTED = "part of an aborted transaction (read_committed)"
    DLQ_DONE = "its dead-letter queue copy was written (or given up)"

    # Members are singletons compared by identity: hashing by identity keeps them
    # consistent with `==` and makes the table lookups below C-level (Enum's own
    # `__hash__` is Python code, a call per lookup on the acknowledgement path).
    __hash__ = object.__hash__


_S = RecordState
_E = Event

TRANSITIONS: Final[Mapping[tuple[RecordState, Event], tuple[RecordState, ...]]] = MappingProxyType(
    {
        (_S.AVAILABLE, _E.ACQUIRE): (_S.ACQUIRED,),
        (_S.ACQUIRED, _E.ACCEPT): (_S.ACKNOWLEDGED,),
        (_S.ACQUIRED, _E.REJECT): (_S.ARCHIVED, _S.ARCHIVING),
        (_S.ACQUIRED, _E.GAP): (_S.ARCHIVED,),
        (_S.ACQUIRED, _E.RELEASE): (_S.AVAILABLE, _S.ARCHIVED, _S.ARCHIVING),
        (_S.ACQUIRED, _E.RENEW): (_S.ACQUIRED,),
        (_S.ACQUIRED, _E.LOCK_EXPIRED): (_S.AVAILABLE, _S.ARCHIVED, _S.ARCHIVING),
        (_S.ACQUIRED, _E.SESSION_RELEASE): (_S.AVAILABLE, _S.ARCHIVED, _S.ARCHIVING),
        (_S.ACQUIRED, _E.ABORTED): (_S.ARCHIVED,),
        (_S.AVAILABLE, _E.LOG_START_PASSED): (_S.ARCHIVED,),
        (_S.AVAILABLE, _E.COMPACTED): (_S.ARCHIVED,),
        (_S.AVAILABLE, _E.OVER_LIMIT): (_S.ARCHIVED,),
        (_S.ARCHIVING, _E.DLQ_DONE): (_S.ARCHIVED,),
    }
)
"""(from, event) -> possible targets. RENEW is the one same-state entry: it is not a
state change, only a fresh lock; every other target differs from its source."""

DLQ_CHOICE_EVENTS: Final = frozenset(
    event for (_state, event), targets in TRANSITIONS.items() if _S.ARCHIVING in targets
)
"""Events whose target may depend on the group having a dead-letter queue
(`target_state`'s `dlq`); for the others it is not read."""

DELIVERY_COUNT_DELTA: Final[Mapping[Event, int]] = MappingProxyType({_E.ACQUIRE: 1})
"""Events not listed keep the delivery count."""

ACK_TYPE_EVENTS: Final[Mapping[AcknowledgeType, Event]] = MappingProxyType(
    {
        AcknowledgeType.GAP: _E.GAP,
        AcknowledgeType.ACCEPT: _E.ACCEPT,
        AcknowledgeType.RELEASE: _E.RELEASE,
        AcknowledgeType.REJECT: _E.REJECT,
        AcknowledgeType.RENEW: _E.RENEW,
    }
)


class IllegalTransition(AssertionError):
    """Our own bug: the state machine tried a transition the table does not allow."""


def is_legal(state: RecordState, event: Event) -> bool:
    return (state, event) in TRANSITIONS


def target_state(
    state: RecordState,
    event: Event,
    *,
    delivery_count: int,
    limit: int,
    below_start: bool,
    dlq: bool = False,
) -> RecordState:
    """The state `event` moves a record in `state` to.

    For the release-like events the record is ARCHIVED when its delivery count has
    reached `limit` (the group's current delivery count limit) or it lies below the
    start offset, AVAILABLE otherwise. With `dlq` (the group has a dead-letter queue
    topic) a REJECT, or reaching the limit at or above the start offset, gives
    ARCHIVING instead of ARCHIVED. Raises IllegalTransition for a pair not in the table.
    """
    try:
        targets = TRANSITIONS[(state, event)]  # subscripts, not calls: a hot path
    except KeyError:
        raise IllegalTransition(f"{state.name} does not accept {event.name}") from None
    if not targets[1:]:
        return targets[0]
    if event is Event.REJECT:
        return RecordState.ARCHIVING if dlq and not below_start else RecordState.ARCHIVED
    assert targets == (RecordState.AVAILABLE, RecordState.ARCHIVED, RecordState.ARCHIVING)
    if below_start:
        return RecordState.ARCHIVED
    if delivery_count >= limit:
        return RecordState.ARCHIVING if dlq else RecordState.ARCHIVED
    return RecordState.AVAILABLE


def dlq_reason(event: Event) -> str:
    """Why a record entered ARCHIVING, for the `__dlq.errors.message` header."""
    return REASON_REJECTED if event is Event.REJECT else REASON_DELIVERY_LIMIT


REASON_REJECTED: Final = "Record rejected by the consumer"
REASON_DELIVERY_LIMIT: Final = "Record reached the delivery count limit"
REASON_CODES: Final[Mapping[str, int]] = MappingProxyType(
    {REASON_REJECTED: DLQ_REASON_REJECTED, REASON_DELIVERY_LIMIT: DLQ_REASON_DELIVERY_LIMIT}
)
"""Reason -> the code an ARCHIVING state batch persists it as (`StateBatch.dlq_reason`)."""


def code_of_reason(reason: str | None) -> int:
    """The code an ARCHIVING state batch persists `reason` as (0 for none known)."""
    return REASON_CODES.get(reason or "", DLQ_REASON_UNKNOWN)


def reason_of_code(code: int, *, delivery_count: int, limit: int) -> str:
    """The reason an ARCHIVING state batch was persisted with. State written before
    Shoal persisted it (code 0) gets the inference older versions made: the delivery
    limit when the count has reached the group's current limit, rejected otherwise
    (wrong for a record rejected on its last allowed delivery, or after the limit
    changed: why the code is persisted)."""
    for reason, known in REASON_CODES.items():
        if code == known:
            return reason
    return REASON_DELIVERY_LIMIT if delivery_count >= limit else REASON_REJECTED


def next_delivery_count(delivery_count: int, event: Event) -> int:
    return delivery_count + DELIVERY_COUNT_DELTA.get(event, 0)


def throttle_threshold(limit: int) -> int:
    """Delivery count from which an AVAILABLE run is delivered on its own and cut:
    max(2, ceil(limit / 2)) (docs/design/share-partition.md §7, poison-record throttling)."""
    return max(2, -(-limit // 2))
