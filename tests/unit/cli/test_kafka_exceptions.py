"""kafka_exceptions: an error as Java prints Kafka's exception for it (the strings
kafka-consumer-groups 4.2 printed in its --delete-offsets table)."""

from __future__ import annotations

from shoal.cli.kafka_exceptions import exception_class, exception_text, message
from shoal.client import KafkaError
from shoal.client.errors import ErrorCode


def test_the_text_kafkas_tool_printed() -> None:
    assert exception_text(KafkaError(ErrorCode.group_id_not_found)) == (
        "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist."
    )
    assert exception_text(KafkaError(ErrorCode.unknown_topic_or_partition)) == (
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "This server does not host this topic-partition."
    )
    assert exception_text(KafkaError(ErrorCode.group_subscribed_to_topic)) == (
        "org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a "
        "topic is forbidden while the consumer group is actively subscribed to it."
    )


def test_classes_kafka_named_otherwise_and_the_brokers_message_first() -> None:
    assert exception_class("NON_EMPTY_GROUP") == "GroupNotEmptyException"
    assert exception_class("REQUEST_TIMED_OUT") == "TimeoutException"
    assert message(KafkaError(ErrorCode.group_id_not_found, "Group g not found.")) == (
        "Group g not found."
    )
    assert message(KafkaError(ErrorCode.group_authorization_failed)) == (
        "Group authorization failed."
    )
