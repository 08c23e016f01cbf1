"""The cleaner's configs refused as Kafka 4.2 refuses them (server/services/log_cleaner.py,
docs/reference/configs.md): a dirty ratio outside [0, 1], negative lags and retention, a
minimum lag above the maximum, a negative thread count or backoff; on CreateTopics,
IncrementalAlterConfigs of a topic and of the broker, with Kafka's error code (and
its message where Shoal words it as Kafka)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import pytest
from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig as IncrementalConfig,
)
from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as IncrementalResource,
)
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest
from kio.static.primitive import i8, i16, i32

from tests.differential.conftest import Pair, unique
from tests.support.topics import create_topic
from tests.support.wire import call1

TOPIC, BROKER = 2, 4
SET = 0
TIMEOUT_S = 30

BAD_TOPIC_CONFIGS = [
    {"min.cleanable.dirty.ratio": "1.5"},
    {"min.cleanable.dirty.ratio": "-0.1"},
    {"min.cleanable.dirty.ratio": "half"},
    {"min.compaction.lag.ms": "-1"},
    {"max.compaction.lag.ms": "0"},
    {"max.compaction.lag.ms": "-5"},
    {"delete.retention.ms": "-1"},
    {"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"},
    {"cleanup.policy": "compact,shred"},
]
GOOD_TOPIC_CONFIGS = [
    {"min.cleanable.dirty.ratio": "0"},
    {"min.cleanable.dirty.ratio": "1"},
    {"min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "1000"},
    {"cleanup.policy": "compact,delete", "delete.retention.ms": "0"},
]
BAD_BROKER_CONFIGS = [
    ("log.cleaner.min.cleanable.ratio", "1.01"),
    ("log.cleaner.min.cleanable.ratio", "-1"),
    ("log.cleaner.min.compaction.lag.ms", "-1"),
    ("log.cleaner.max.compaction.lag.ms", "0"),
    ("log.cleaner.delete.retention.ms", "-1"),
    ("log.cleaner.threads", "-1"),
    ("log.cleaner.backoff.ms", "-1"),
    ("log.cleaner.io.max.bytes.per.second", "fast"),
]


def create(bootstrap: str, name: str, configs: dict[str, str]) -> tuple[str, str | None]:
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=name,
                num_partitions=i32(1),
                replication_factor=i16(1),
                assignments=(),
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in configs.items()),
            ),
        ),
        timeout=datetime.timedelta(seconds=TIMEOUT_S),
        validate_only=True,
    )
    (topic,) = call1(bootstrap, request).topics
    return topic.error_code.name, topic.error_message


def incremental(
    bootstrap: str, resource_type: int, name: str, ops: Sequence[tuple[str, str]]
) -> tuple[str, str | None]:
    request = IncrementalAlterConfigsRequest(
        resources=(
            IncrementalResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(
                    IncrementalConfig(name=k, config_operation=i8(SET), value=v) for k, v in ops
                ),
            ),
        ),
        validate_only=True,
    )
    (response,) = call1(bootstrap, request).responses
    return response.error_code.name, response.error_message


@pytest.mark.parametrize("configs", BAD_TOPIC_CONFIGS + GOOD_TOPIC_CONFIGS, ids=str)
def test_create_topics_checks_the_cleaner_keys_as_kafka(
    pair: Pair, configs: dict[str, str]
) -> None:
    kafka, shoal = pair.run(create, unique("clean-cfg"), configs)
    assert kafka[0] == shoal[0], (kafka, shoal)
    expected_ok = configs in GOOD_TOPIC_CONFIGS
    assert (kafka[0] == "none") == expected_ok, kafka


@pytest.mark.parametrize("configs", BAD_TOPIC_CONFIGS + GOOD_TOPIC_CONFIGS, ids=str)
def test_altering_a_topic_checks_the_cleaner_keys_as_kafka(
    pair: Pair, configs: dict[str, str]
) -> None:
    def scenario(bootstrap: str, name: str) -> tuple[str, str | None]:
        create_topic(bootstrap, name)
        return incremental(bootstrap, TOPIC, name, list(configs.items()))

    kafka, shoal = pair.run(scenario, unique("clean-alt"))
    assert kafka[0] == shoal[0], (kafka, shoal)


@pytest.mark.parametrize(("key", "value"), BAD_BROKER_CONFIGS, ids=str)
def test_altering_the_broker_checks_the_cleaner_keys_as_kafka(
    pair: Pair, key: str, value: str
) -> None:
    kafka, shoal = pair.run(incremental, BROKER, "1", [(key, value)])
    assert kafka[0] == shoal[0], (kafka, shoal)
    assert kafka[0] != "none"


@pytest.mark.parametrize("threads", ["0", "3", "5", "2"])  # the one accepted last
def test_changing_the_cleaner_thread_count_as_kafka(pair: Pair, threads: str) -> None:
    """From the default of 1 thread: at least 1, at most double (Kafka's
    LogCleaner.validateReconfiguration; for 0 Kafka's message is its division by zero,
    Shoal's says what is wrong)."""
    kafka, shoal = pair.run(incremental, BROKER, "1", [("log.cleaner.threads", threads)])
    assert kafka[0] == shoal[0]
    if threads != "0":
        assert kafka == shoal
