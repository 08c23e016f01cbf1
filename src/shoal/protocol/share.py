"""Enumerations of the share-group RPCs' wire fields, defined once for the broker's
share-partition core (`shoal.share`) and the client (`shoal.client`):
`AcknowledgeType` (the `AcknowledgeTypes` of ShareFetch / ShareAcknowledge
acknowledgement batches) and `AcquireMode` (ShareFetch v2's `ShareAcquireMode`).
"""

from __future__ import annotations

import enum


class AcknowledgeType(enum.IntEnum):
    """`AcknowledgeTypes` values of ShareFetch / ShareAcknowledge."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
    """ShareFetch/ShareAcknowledge v2 (KIP-1222), with IsRenewAck: re-arm the
    acquisition lock, change nothing else."""


class AcquireMode(enum.IntEnum):
    """`ShareAcquireMode` of ShareFetch v2."""

    BATCH_OPTIMIZED = 0
    """Whole batches; MaxRecords may be exceeded to the end of a batch."""
    RECORD_LIMIT = 1
    """Never more records than MaxRecords."""
