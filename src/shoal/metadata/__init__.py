"""The cluster metadata as one event-sourced log (docs/design/metadata-log.md), sans-I/O.

`records` defines the metadata records (KRaft's record kinds, Shoal's key/value
encoding) and their codec; `shard.MetadataShard` decides every metadata change as
records (a `CoordinatorResult`) and rebuilds its state only by `replay`; `image`
is the immutable snapshot readers take. The shell that writes the records to
`__cluster_metadata-0`, fsyncs them and only then replays is server/metadata/metadata_log.py.
"""

from shoal.metadata.image import MetadataImage, TopicImage
from shoal.metadata.records import CODEC, METADATA_TOPIC, MetadataRecord
from shoal.metadata.shard import MetadataShard, ScramDeletion, ScramUpsertion

__all__ = [
    "CODEC",
    "METADATA_TOPIC",
    "MetadataImage",
    "MetadataRecord",
    "MetadataShard",
    "ScramDeletion",
    "ScramUpsertion",
    "TopicImage",
]
