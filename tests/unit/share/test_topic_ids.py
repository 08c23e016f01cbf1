"""Interned topic ids (share/topic_ids.py): one shared object per value, equal to and
hashing like the plain UUID, the same repr, surviving copy and pickle; the table's
limit."""

from __future__ import annotations

import copy
import pickle
import uuid

import pytest

from shoal import limits
from shoal.share import topic_ids
from shoal.share.sessions import TopicIdPartition
from shoal.share.topic_ids import TopicId, interned


def test_interned_id_is_shared_and_behaves_as_the_plain_uuid() -> None:
    plain = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
    shared = interned(plain)
    assert isinstance(shared, TopicId)
    assert interned(uuid.UUID(str(plain))) is shared
    assert interned(shared) is shared
    assert shared == plain and plain == shared
    assert hash(shared) == hash(plain)
    assert repr(shared) == repr(plain) and str(shared) == str(plain)
    assert shared.bytes == plain.bytes and shared.int == plain.int
    # mixed keys find each other, bare and inside the share path's key tuples
    assert {plain: 1}[shared] == 1 and {shared: 2}[plain] == 2
    assert {TopicIdPartition(plain, 3): "x"}[TopicIdPartition(shared, 3)] == "x"
    assert interned(uuid.UUID(int=plain.int + 1)) != shared


def test_interned_id_survives_copy_and_pickle() -> None:
    shared = interned(uuid.UUID("00000000-0000-0000-0000-0000000000a1"))
    for other in (copy.copy(shared), copy.deepcopy(shared), pickle.loads(pickle.dumps(shared))):
        assert other == shared and hash(other) == hash(shared)
    with pytest.raises(TypeError):
        shared.foo = 1  # type: ignore[attr-defined]  # immutable like a UUID


def test_table_starts_afresh_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "TOPIC_IDS_INTERNED_MAX", 3)
    monkeypatch.setattr(topic_ids, "_interned", {})
    first = interned(uuid.UUID(int=1))
    for value in (2, 3):
        interned(uuid.UUID(int=value))
    assert len(topic_ids._interned) == 3
    assert interned(uuid.UUID(int=1)) is first  # still there at the limit
    fourth = interned(uuid.UUID(int=4))  # past it: the table starts afresh
    assert topic_ids._interned == {4: fourth}
    again = interned(uuid.UUID(int=1))
    assert again is not first and again == first and hash(again) == hash(first)


def test_the_null_id_kio_decodes_as_none_is_the_null_topic_id() -> None:
    """A request's all-zero topic id reaches the share path as a UUID (int 0), never
    None: the lookups there key by the id's int (a fuzzed ShareFetch found it)."""
    null = interned(None)
    assert isinstance(null, TopicId)
    assert null == uuid.UUID(int=0) and null.int == 0
    assert interned(None) is null
    assert null.bytes == bytes(16)  # encoded back as the zero bytes it came as
