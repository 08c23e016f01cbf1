"""Kafka error codes by name, as kio defines them.

Cores raise errors carrying the Kafka error *name* (e.g. "OFFSET_OUT_OF_RANGE");
handlers turn names into codes here. One table, Kafka's own numbering.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "code_for"]


def code_for(name: str) -> ErrorCode:
    """The ErrorCode for a Kafka error name such as "CORRUPT_MESSAGE"."""
    return ErrorCode[name.lower()]
