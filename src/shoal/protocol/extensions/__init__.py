"""Shoal's extension APIs: Kafka-protocol messages that no Kafka version defines.

Each is declared the way kio generates Kafka's messages (frozen dataclasses with kio's
class variables and `kafka_type` field metadata, one module per version and direction),
so kio's own generic readers and writers encode them and every other layer (the codec,
`Schema.make`, the client's version choice, ApiVersions) treats them as one more API.
Nothing here writes a byte by hand.

Keys are taken from `EXTENSION_KEY_BASE` up, far above Kafka's (0-92 in Kafka 4.2),
and only Shoal advertises them in ApiVersions; Kafka clients ignore keys they do not
know. The index below has kio's shapes (`kio.schema.index.api_key_map` and
`schema_name_map`); `protocol/codec.py` merges it with kio's.

- ShareGroupBrowse (30000) v0: the in-flight records of share-partitions with their
  state, delivery count, lock holder and lock expiry, read without acquiring
  (server/handlers/share_group_browse.py); tagged fields added since: a record's
  redelivery due time, its `shoal.deliver.at` due time and whether its key holds it
  back, and per partition what key-ordered and scheduled delivery hold back.
"""

from __future__ import annotations

from collections.abc import Mapping

from kio.static.constants import EntityType

EXTENSION_KEY_BASE = 30_000
SHARE_GROUP_BROWSE = EXTENSION_KEY_BASE

_BROWSE = "shoal.protocol.extensions.share_group_browse"

API_KEYS: Mapping[int, str] = {SHARE_GROUP_BROWSE: "share_group_browse"}
"""api key -> name, as kio's `api_key_map`."""

SCHEMAS: Mapping[str, Mapping[int, Mapping[EntityType, str]]] = {
    "share_group_browse": {
        0: {
            EntityType.request: f"{_BROWSE}.v0.request:ShareGroupBrowseRequest",
            EntityType.response: f"{_BROWSE}.v0.response:ShareGroupBrowseResponse",
        },
    },
}
"""name -> version -> direction -> "module:class", as kio's `schema_name_map`."""
