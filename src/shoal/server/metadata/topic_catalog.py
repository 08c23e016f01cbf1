"""The log manager's topic list in the metadata log: `MetadataTopicCatalog`.

A topic is a TopicRecord (name, id, partition count, internal flag) and its config
overrides ConfigRecords of resource type TOPIC, as the strings Kafka shows
(metadata/records.py). `record` writes a creation, growth or config change as one
batch, durably, in the topic change's disk work (`TopicWrite.run`, in a disk worker:
the broker's change lane runs one change at a time, so no other write meets it); the
replay waits for the log manager's finish, on the loop. `remove` writes a deletion's
records and replays them at once (DeleteTopics renames the partition directories on
the loop too). docs/design/metadata-log.md.
"""

from __future__ import annotations

from collections.abc import Callable

from shoal.clock import Clock
from shoal.config import BrokerConfig
from shoal.coordinator.result import CoordinatorResult
from shoal.log.api import TopicInfo
from shoal.log.topics import parse_configs, render_configs
from shoal.metadata.image import TopicImage
from shoal.metadata.records import TOPIC_RESOURCE, MetadataRecord
from shoal.server.metadata.metadata_log import MetadataLog
from shoal.server.metadata.migration import open_metadata_log


class MetadataTopicCatalog:
    """A `TopicCatalog` (log/topics.py) on the metadata log."""

    def __init__(self, metadata: MetadataLog) -> None:
        self.metadata = metadata

    def load(self) -> list[TopicInfo]:
        image = self.metadata.image
        return [
            TopicInfo(
                name=topic.name,
                topic_id=topic.topic_id,
                partitions=topic.partitions,
                configs=parse_configs(topic.name, image.config(TOPIC_RESOURCE, topic.name)),
                internal=topic.internal,
            )
            for topic in sorted(image.topics.values(), key=lambda t: t.name)
        ]

    def record(self, info: TopicInfo) -> Callable[[], None]:
        shard = self.metadata.shard
        topic = TopicImage(info.name, info.topic_id, info.partitions, info.internal)
        records: tuple[MetadataRecord, ...] = (
            *shard.put_topic(topic).records,
            *shard.set_configs(TOPIC_RESOURCE, info.name, render_configs(info.configs)).records,
        )
        return self.metadata.append_durably(CoordinatorResult(records, None))

    def remove(self, info: TopicInfo) -> None:
        self.metadata.write_now(self.metadata.shard.remove_topic(info.name))


def open_topic_catalog(config: BrokerConfig, clock: Clock) -> MetadataTopicCatalog:
    """The topic catalog of `config.data_dir`'s metadata log, opened (and migrated):
    for tools that open a data directory's logs without a broker (bench/)."""
    return MetadataTopicCatalog(open_metadata_log(config, clock))
