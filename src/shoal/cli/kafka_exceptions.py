"""An error as Kafka's Java tools print a failed future: `str()` of the exception the
Admin client raised for the error code, `org.apache.kafka.common.errors.<Class>:
<message>` (`kafka-consumer-groups --delete-offsets` prints it per partition).

The class is Kafka's for the code (its `Errors` enum): the error's name in camel case
plus `Exception`, except where Kafka named the class otherwise (`IRREGULAR`). The
message is the broker's, else Kafka's default one for the code.
"""

from __future__ import annotations

from shoal.client import KafkaError

PACKAGE = "org.apache.kafka.common.errors"
IRREGULAR = {
    "NON_EMPTY_GROUP": "GroupNotEmptyException",
    "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
    "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
    "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
    "REQUEST_TIMED_OUT": "TimeoutException",
    "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "INVALID_CONFIG": "InvalidConfigurationException",
    "UNKNOWN_TOPIC_OR_PARTITION": "UnknownTopicOrPartitionException",
}
"""Kafka's exception classes not named after their error."""
MESSAGES = {
    "GROUP_SUBSCRIBED_TO_TOPIC": "Deleting offsets of a topic is forbidden while the "
    "consumer group is actively subscribed to it.",
    "GROUP_AUTHORIZATION_FAILED": "Group authorization failed.",
    "TOPIC_AUTHORIZATION_FAILED": "Topic authorization failed.",
    "REQUEST_TIMED_OUT": "The request timed out.",
    "UNKNOWN_SERVER_ERROR": "The server experienced an unexpected error when processing "
    "the request.",
}
"""Kafka's default messages of errors the group tools print that the client's own
table (shoal.client.errors) does not hold."""


def exception_class(name: str) -> str:
    """Kafka's exception class (simple name) of the error named `name`."""
    return IRREGULAR.get(name) or "".join(w.capitalize() for w in name.split("_")) + "Exception"


def message(error: KafkaError) -> str:
    """The broker's message, else Kafka's default for the code, else its name."""
    return MESSAGES.get(error.name, error.text) if error.text == error.name else error.text


def exception_text(error: KafkaError) -> str:
    """`org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not
    exist.`, as Java prints the exception."""
    return f"{PACKAGE}.{exception_class(error.name)}: {message(error)}"


def execution_exception_text(error: KafkaError) -> str:
    """A failed Admin future as Kafka's tools print what `get()` threw:
    `java.util.concurrent.ExecutionException: org.apache.kafka...: message`."""
    return f"java.util.concurrent.ExecutionException: {exception_text(error)}"
