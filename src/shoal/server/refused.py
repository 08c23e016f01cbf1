"""`Refused`: how handlers unwind from a validation failure to the error they answer;
`CloseConnection`: how one asks for its connection to close instead of answering."""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode


class Refused(Exception):
    """A request, or one topic, partition or resource of it, is refused with `code`;
    `message` says why (sent where the response version has an error message)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CloseConnection(Exception):
    """The request gets no answer and its connection closes (Kafka's
    RequestChannel.closeConnection); the message says why, for the broker's log."""
