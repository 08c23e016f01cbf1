"""The simulated clients of the coordinator scenario: what each believes.

Owns the client-side records (`Consumer`: a KIP-848 member's id, epoch and owned
partitions; `TxnProducer`: a transactional producer's id, epoch, current transaction
and requests in flight), how a member
builds its ConsumerGroupHeartbeat and takes its answer, and the scenario's names.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from shoal.group.consumer_membership import HeartbeatRequest
from shoal.group.results import ShareGroupHeartbeatResponse
from shoal.protocol.errors import ErrorCode
from shoal.sim.coord_broker import CONSUMER_GROUP, TOPIC

MEMBERS = ("sim-member-0", "sim-member-1", "sim-member-2")
REPLAY_EVERY_STEPS = 4
"""Replay-equals-live is checked every this many steps (and after every crash and
maintenance pass): rebuilding both coordinators is most of a step's cost."""
VALUES_PER_TXN = 10_000
"""A transactional record's value is serial * VALUES_PER_TXN + its index."""
FENCED = {ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id}
FENCED_PRODUCER = {
    ErrorCode.producer_fenced,
    ErrorCode.invalid_producer_epoch,
    ErrorCode.invalid_producer_id_mapping,
}


@dataclass(slots=True)
class Consumer:
    member_id: str
    epoch: int = 0
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)


@dataclass(slots=True)
class TxnProducer:
    producer_id: int = -1
    epoch: int = -1
    serial: int = 0
    """The current (or last) transaction's number; 0 before the first."""
    ongoing: bool = False
    added: set[tuple[str, int]] = field(default_factory=set)
    sequence: int = 0
    in_flight: tuple[int, int] | None = None
    ending: bool | None = None
    """EndTxn sent and not answered: commit (True) or abort (False)."""
    offsets_added: bool = False


def heartbeat_request(consumer: Consumer, rebalance_timeout_ms: int) -> HeartbeatRequest:
    """A join (epoch 0: subscription, nothing owned) or a heartbeat at the member's
    epoch with the partitions it owns."""
    joining = consumer.epoch == 0
    return HeartbeatRequest(
        group_id=CONSUMER_GROUP,
        member_id=consumer.member_id,
        member_epoch=consumer.epoch,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=(TOPIC,) if joining else None,
        owned=None if joining else dict(consumer.owned),
    )


def heartbeat_answered(consumer: Consumer, response: ShareGroupHeartbeatResponse) -> None:
    """The member takes its answer: fenced or unknown starts again at epoch 0."""
    if response.error in FENCED:
        consumer.epoch, consumer.owned = 0, {}
    elif response.error is None:
        consumer.epoch = response.member_epoch
        if response.assignment is not None:
            consumer.owned = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment}


def shown_assignment(response: ShareGroupHeartbeatResponse) -> object:
    if response.assignment is None:
        return None
    return [sorted(tp.partitions) for tp in response.assignment]
