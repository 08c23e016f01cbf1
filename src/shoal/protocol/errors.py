"""Kafka error codes, as kio defines them, and their names.

Cores, the log and the coordinators carry `ErrorCode` values end to end; handlers put
them in responses as they are. `error_name` spells a code the way Kafka's messages and
logs do ("GROUP_ID_NOT_FOUND"). One table, Kafka's own numbering.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "error_name"]


def error_name(code: int) -> str:
    """Kafka's name of an error code, e.g. 69 -> "GROUP_ID_NOT_FOUND"."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"
