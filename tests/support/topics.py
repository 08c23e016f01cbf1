"""Topic set-up for wire tests, through the client's request builders: unique names,
create (and wait for leaders), produce."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.calls import Call
from tests.support.wire import call1

LAST_VERIFIED_PRODUCE_VERSION = 11


def topic_name(prefix: str) -> str:
    """A topic name no other test uses, even across broker restarts."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
) -> uuid.UUID:
    """Create a topic (CreateTopics, replication factor 1); returns its topic id."""
    call = requests.create_topic(name, partitions=partitions, replication_factor=1, configs=configs)
    (result,) = call1(bootstrap, call).topics
    assert result.error_code == ErrorCode.none, result
    assert result.topic_id is not None
    return result.topic_id  # type: ignore[no-any-return]


def produce(
    bootstrap: str,
    topic: str,
    records: bytes,
    *,
    partition: int = 0,
    transactional_id: str | None = None,
) -> int:
    """Append record batches (acks=-1); returns the base offset. Transactional batches
    need a `transactional_id` (Kafka refuses them without one); they are sent at v11,
    the last version whose transactional writes the broker verifies instead of adding
    to the transaction (so that `transaction.partition.verification.enable=false`
    lets a test leave a hanging transaction, as an old client would)."""
    call = requests.produce({(topic, partition): records}, transactional_id=transactional_id)
    if transactional_id is not None:
        call = Call.exact(call.build(LAST_VERIFIED_PRODUCE_VERSION))
    response = call1(bootstrap, call)
    (result,) = response.responses[0].partition_responses
    assert result.error_code == ErrorCode.none, result
    return int(result.base_offset)


def create_led_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> uuid.UUID:
    """`create_topic`, then wait until every partition answers ListOffsets: Kafka answers
    CreateTopics before its partitions have leaders (NOT_LEADER_OR_FOLLOWER, or
    UNKNOWN_TOPIC_OR_PARTITION meanwhile), and the differential tests run the same steps
    against it."""
    topic_id = create_topic(bootstrap, name, partitions=partitions, configs=configs)
    ask = requests.list_offsets(dict.fromkeys(((name, p) for p in range(partitions)), -1))
    deadline = time.monotonic() + timeout_s
    while True:
        answers = [p for t in call1(bootstrap, ask).topics for p in t.partitions]
        if all(p.error_code == ErrorCode.none for p in answers):
            return topic_id
        assert time.monotonic() < deadline, f"topic {name} is not led yet: {answers}"
        time.sleep(0.05)


def alter_topic(bootstrap: str, name: str, configs: Mapping[str, str]) -> None:
    """Set topic configs (IncrementalAlterConfigs SET); fails on any error."""
    changes = [requests.ConfigChange(key, value) for key, value in configs.items()]
    call = requests.incremental_alter_configs({(requests.TOPIC_RESOURCE, name): changes})
    for result in call1(bootstrap, call).responses:
        assert result.error_code == ErrorCode.none, result
