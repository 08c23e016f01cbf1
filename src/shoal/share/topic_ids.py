"""Interned topic ids with a precomputed hash, for the share request path.

A share fetch looks its partitions up in many dicts (the session, the share-partition
index, the purgatory, the response's topics), each keyed by a tuple holding the topic
id. `uuid.UUID.__hash__` is Python code (`hash(self.int)`), and two equal UUIDs that
are distinct objects compare through `UUID.__eq__`, also Python: a few dozen calls
per fetch. `interned` maps each decoded topic id to one shared `TopicId` per value,
whose hash is computed once and whose dict lookups then match by identity.

A `TopicId` is a `uuid.UUID` in every respect (equal to, and hashing like, the plain
UUID of the same value; the same `repr`), so it mixes freely with plain ones: a
plain UUID finds an entry keyed by a `TopicId` and the other way round.

The table keeps at most `limits.TOPIC_IDS_INTERNED_MAX` ids; past that it starts afresh
(topic churn cannot grow it without bound; ids interned before still compare and
hash as before, only no longer shared).
"""

from __future__ import annotations

import uuid
from typing import Any

from shoal import limits


class TopicId(uuid.UUID):
    """A `uuid.UUID` whose hash is computed once."""

    __slots__ = ("_hash",)
    _hash: int

    def __init__(self, value: uuid.UUID) -> None:
        super().__init__(int=value.int)
        object.__setattr__(self, "_hash", hash(value.int))

    def __hash__(self) -> int:
        return self._hash

    def __setstate__(self, state: Any) -> None:  # copy and pickle
        getattr(super(), "__setstate__")(state)  # noqa: B009 (not in the uuid stubs)
        object.__setattr__(self, "_hash", hash(self.int))

    def __repr__(self) -> str:
        return f"UUID({str(self)!r})"


_interned: dict[int, TopicId] = {}
NULL_TOPIC_ID = uuid.UUID(int=0)
"""The null topic id (what kio decodes as None)."""


def interned(topic_id: uuid.UUID | None) -> Any:
    """The shared `TopicId` equal to `topic_id`. kio decodes the null UUID (all zero
    bytes) as None; it is the null `TopicId` here (int 0), so that the share path's
    lookups by the id's int never meet a None: no topic has it, so its partitions
    answer UNKNOWN_TOPIC_ID, and it encodes back as the same zero bytes."""
    if topic_id is None:
        topic_id = NULL_TOPIC_ID
    found = _interned.get(topic_id.int)
    if found is None:
        if len(_interned) >= limits.TOPIC_IDS_INTERNED_MAX:
            _interned.clear()
        found = _interned[topic_id.int] = TopicId(topic_id)
    return found
