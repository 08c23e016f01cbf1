"""`Refused`: how handlers unwind from a validation failure to the error they answer."""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode


class Refused(Exception):
    """A request, or one topic, partition or resource of it, is refused with `code`;
    `message` says why (sent where the response version has an error message)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
