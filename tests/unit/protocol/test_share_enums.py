"""The share RPCs' wire enums (protocol/share.py) carry Kafka's values, and the broker's
share core and the client use this one definition."""

from __future__ import annotations

from shoal.client import share_requests
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share import states


def test_ack_type_values_are_kafkas() -> None:
    assert [(t.name, int(t)) for t in AcknowledgeType] == [
        ("GAP", 0),
        ("ACCEPT", 1),
        ("RELEASE", 2),
        ("REJECT", 3),
        ("RENEW", 4),
    ]


def test_acquire_mode_values_are_kafkas() -> None:
    assert [(m.name, int(m)) for m in AcquireMode] == [("BATCH_OPTIMIZED", 0), ("RECORD_LIMIT", 1)]


def test_one_definition() -> None:
    assert states.AcknowledgeType is AcknowledgeType
    assert share_requests.AcknowledgeType is AcknowledgeType
    assert share_requests.AcquireMode is AcquireMode
    assert set(states.ACK_TYPE_EVENTS) == set(AcknowledgeType), "every type maps to an event"
