"""The one error model of Shoal's Kafka client.

- `KafkaError`: the broker answered an error code. Carries the `ErrorCode`, Kafka's
  name of it (`"GROUP_ID_NOT_FOUND"`), the broker's message or Kafka's default one,
  and whether Kafka's clients treat it as retriable.
- `BrokerUnreachable`: no connection could be made (or kept) within the deadline.
- `RequestTimeout`: a request got no answer within `request.timeout.ms`.

All three are `ClientError`s whose `str()` is a message fit for a user. The error sets
below say what the client does on its own: refresh metadata (leadership moved), find
the coordinator again (it moved), or back off and resend (loading, transient).
"""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode, error_name

__all__ = [
    "COORDINATOR_LOADING",
    "COORDINATOR_MOVED",
    "LEADERSHIP_MOVED",
    "RETRIABLE",
    "BrokerUnreachable",
    "ClientError",
    "ErrorCode",
    "KafkaError",
    "RequestTimeout",
    "check",
    "error_name",
]

LEADERSHIP_MOVED = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.unknown_topic_or_partition,
    }
)
"""The partition's leader is elsewhere or being elected: refresh metadata, resend.
(UNKNOWN_TOPIC_OR_PARTITION is retriable in Kafka's clients: a broker that has not yet
learnt of a new topic answers it.)"""
COORDINATOR_MOVED = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available})
"""The group's coordinator is elsewhere: FindCoordinator again, resend."""
COORDINATOR_LOADING = frozenset({ErrorCode.coordinator_load_in_progress})
"""The coordinator is loading its state: back off, resend to the same node."""
RETRIABLE = (
    LEADERSHIP_MOVED
    | COORDINATOR_MOVED
    | COORDINATOR_LOADING
    | frozenset(
        {
            ErrorCode.request_timed_out,
            ErrorCode.network_exception,
            ErrorCode.not_enough_replicas,
            ErrorCode.not_enough_replicas_after_append,
            ErrorCode.kafka_storage_error,
            ErrorCode.offset_not_available,
            ErrorCode.rebalance_in_progress,
            ErrorCode.concurrent_transactions,
            ErrorCode.throttling_quota_exceeded,
        }
    )
)
"""Errors Kafka's clients mark retriable (`RetriableException` subclasses)."""

# Kafka's default messages for the errors Shoal's tools meet most, shown when the
# broker sends no message of its own.
_DEFAULT_MESSAGES = {
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "GROUP_ID_NOT_FOUND": "The group id does not exist.",
    "NON_EMPTY_GROUP": "The group is not empty.",
    "INVALID_GROUP_ID": "The configured groupId is invalid.",
    "TOPIC_ALREADY_EXISTS": "Topic with this name already exists.",
    "INVALID_PARTITIONS": "Number of partitions is below 1.",
    "INVALID_REPLICATION_FACTOR": "Replication factor is below 1 or larger than the number of "
    "available brokers.",
    "INVALID_TOPIC_EXCEPTION": "The request attempted to perform an operation on an invalid topic.",
    "INVALID_CONFIG": "Configuration is invalid.",
    "UNSUPPORTED_VERSION": "The version of API is not supported.",
    "COORDINATOR_LOAD_IN_PROGRESS": "The coordinator is loading and hence can't process requests.",
    "COORDINATOR_NOT_AVAILABLE": "The coordinator is not available.",
    "NOT_COORDINATOR": "This is not the correct coordinator.",
    "NOT_LEADER_OR_FOLLOWER": "For requests intended only for the leader, this error indicates "
    "that the broker is not the current leader.",
}


class ClientError(Exception):
    """A client call failed; `str(error)` is the message for the user."""


class KafkaError(ClientError):
    """The broker answered a Kafka error code."""

    def __init__(self, code: int, message: str | None = None, *, context: str = "") -> None:
        try:
            self.code: ErrorCode | int = ErrorCode(code)
        except ValueError:
            self.code = int(code)
        self.name = error_name(code)
        self.text = message or _DEFAULT_MESSAGES.get(self.name) or self.name
        self.context = context
        shown = f"{self.text} ({self.name})" if self.text != self.name else self.name
        super().__init__(f"{context}: {shown}" if context else shown)

    @property
    def retriable(self) -> bool:
        return self.code in RETRIABLE


class BrokerUnreachable(ClientError):
    """No connection to a broker could be made, or kept, within the deadline."""


class RequestTimeout(ClientError):
    """A request got no answer within the request timeout."""


def check(code: int, message: str | None = None, *, context: str = "") -> None:
    """Raise `KafkaError` unless `code` is NONE."""
    if code != ErrorCode.none:
        raise KafkaError(code, message, context=context)
