"""The cleaner's bounded map from record key to the latest offset seen for it.

Owns `KeyMap`: the one data structure of a clean that grows with the data
(docs/design/compaction.md, "The key map"). Keys are not kept: each is reduced to a fixed
16-byte MD5 digest, as Kafka's SkimpyOffsetMap does, so an entry costs the same
whatever the key's length. Two keys with the same digest count as one key; the
chance is negligible (2^-64 at a few billion keys) and Kafka accepts the same.

The bound is in entries. `ENTRY_BYTES` (a 16-byte digest and an 8-byte offset, 24
bytes) is Kafka's packed figure; the Python dict spends several times that per entry,
so the broker's cleaner service counts an entry at what it really costs
(`server/services/log_cleaner.KEY_MAP_ENTRY_BYTES`) when it turns `log.cleaner.dedupe.buffer.size`
into `max_entries`: the buffer bounds the memory it names.

Invariant: `len(map) <= max_entries`, except for the first batch a clean maps:
`put` of a new key into a full map refuses (returns False) and changes nothing, so
the caller ends the mapped range before the batch that did not fit; but a batch
with more distinct keys than the whole map would then never be cleaned, so the
cleaner maps the first batch of its dirty range whole (`overflow=True`), exceeding
the bound by at most one batch's keys (docs/design/compaction.md, "The key map").
"""

from __future__ import annotations

import hashlib

DIGEST_BYTES = 16
ENTRY_BYTES = DIGEST_BYTES + 8
"""Bytes one entry is accounted at (digest + offset), for sizing from a byte budget."""


def key_digest(key: bytes) -> bytes:
    """The fixed-size stand-in for `key` in the map."""
    return hashlib.md5(key, usedforsecurity=False).digest()


class KeyMap:
    """Key digest -> latest offset, at most `max_entries` keys."""

    __slots__ = ("_offsets", "latest_offset", "max_entries")

    def __init__(self, max_entries: int) -> None:
        assert max_entries > 0, "the key map needs room for at least one key"
        self.max_entries = max_entries
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1
        """The last offset the map covers: every record at or below it was mapped
        (if it had a key and was not aborted); records above it are kept whole."""

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def put(self, key: bytes, offset: int, *, overflow: bool = False) -> bool:
        """Remember `offset` as the latest for `key`; False (nothing changed) if the
        key is new and the map is full, unless `overflow` (the first batch mapped)."""
        digest = key_digest(key)
        offsets = self._offsets
        if digest not in offsets and len(offsets) >= self.max_entries and not overflow:
            return False
        offsets[digest] = offset
        return True

    def get(self, key: bytes) -> int:
        """The latest offset of `key`, or -1 if it was not mapped."""
        return self._offsets.get(key_digest(key), -1)

    def utilization(self) -> float:
        return len(self._offsets) / self.max_entries
