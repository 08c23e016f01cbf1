"""Internal topics seen from a client: Metadata marks them internal, Produce to one
gets INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic", as Kafka's
ReplicaManager answers) and writes nothing, and DeleteTopics refuses to delete one.

The data directory is prepared with `__consumer_offsets` exactly as the broker makes
it (server/services/group_persistence.py) before the broker starts, so the test holds whether
or not the broker creates the topic itself."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.manager import LogManager
from shoal.server.services.group_persistence import GROUP_METADATA_TOPIC, open_group_log
from tests.support.batches import build_batch
from tests.support.broker import BrokerProcess, running
from tests.support.metadata import metadata_at, topic_catalog
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, log_end_offset, produced


@pytest.fixture(scope="module")
def internal_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir = tmp_path_factory.mktemp("internal") / "data"
    config = BrokerConfig.from_raw({"log.dirs": str(data_dir)})
    logs = LogManager.open(
        data_dir=data_dir,
        broker_config=config,
        clock=ManualClock(),
        catalog=topic_catalog(data_dir),
    )
    open_group_log(logs, config, ManualClock())
    logs.close()
    metadata_at(data_dir).close()
    yield from running(data_dir)


def test_metadata_marks_the_topic_internal(internal_broker: BrokerProcess) -> None:
    user_topic = topic_name("plain")
    create_topic(internal_broker.bootstrap, user_topic)
    response = call1(
        internal_broker.bootstrap, requests.metadata([GROUP_METADATA_TOPIC, user_topic]).build(12)
    )
    by_name = {t.name: t for t in response.topics}
    internal = by_name[GROUP_METADATA_TOPIC]
    assert internal.error_code == ErrorCode.none and internal.is_internal
    assert len(internal.partitions) == 50
    assert not by_name[user_topic].is_internal


def test_produce_to_an_internal_topic_is_refused(internal_broker: BrokerProcess) -> None:
    batch = build_batch([b"not a coordinator record"])
    for acks in (-1, 1):
        response = call1(
            internal_broker.bootstrap,
            requests.produce({(GROUP_METADATA_TOPIC, 0): batch}, acks=acks).build(9),
        )
        partition = produced(response)
        assert partition.error_code == ErrorCode.invalid_topic_exception
        assert partition.error_message is None  # as Kafka 4.2 answers it (its log says why)
        assert partition.base_offset == -1
    assert log_end_offset(internal_broker.bootstrap, GROUP_METADATA_TOPIC, 0) == 0
    # An ordinary topic on the same broker still takes the same batch.
    user_topic = topic_name("plain")
    create_topic(internal_broker.bootstrap, user_topic)
    ok = produced(
        call1(internal_broker.bootstrap, requests.produce({(user_topic, 0): batch}).build(9))
    )
    assert ok.error_code == ErrorCode.none and ok.base_offset == 0


def test_delete_topics_refuses_an_internal_topic(internal_broker: BrokerProcess) -> None:
    request = DeleteTopicsRequest(
        topics=(DeleteTopicState(name=GROUP_METADATA_TOPIC, topic_id=None),),
        timeout=datetime.timedelta(seconds=10),
    )
    (result,) = call1(internal_broker.bootstrap, request).responses
    assert result.error_code == ErrorCode.invalid_request
    assert "internal topic" in (result.error_message or "")
    response = call1(internal_broker.bootstrap, requests.metadata([GROUP_METADATA_TOPIC]).build(12))
    assert response.topics[0].error_code == ErrorCode.none


def test_internal_topic_survives_a_restart_as_internal(internal_broker: BrokerProcess) -> None:
    internal_broker.kill()
    internal_broker.start()
    response = call1(internal_broker.bootstrap, requests.metadata([GROUP_METADATA_TOPIC]).build(12))
    assert response.topics[0].is_internal
