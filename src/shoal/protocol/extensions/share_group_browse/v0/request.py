"""ShareGroupBrowse (30000) v0 request, a Shoal extension declared as kio declares
Kafka's messages (see `shoal.protocol.extensions`).

One share group, one topic, the partitions to browse (each answered by its leader)
and how many in-flight entries to return per partition at most.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.types import GroupId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupBrowseRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30000)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    """The share group."""
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic."""
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The partitions to browse."""
    max_entries: i32 = field(metadata={"kafka_type": "int32"})
    """The most in-flight entries to return per partition (the broker caps it)."""
