"""Refuse a null where the schema does not allow one. Sans-I/O.

kio's readers decode a null length (-1, or 0 when compact) as None even for an array,
string or bytes field that Kafka's schema declares non-nullable. Kafka's own parser
rejects such a request ("non-nullable field ... was serialized as null") and the broker
closes the connection; handlers rely on that and iterate the field. `null_field(entity)`
names the first such field (a dotted path) or returns None; `codec.decode_body` turns a
hit into a `ProtocolError`. It runs only when the request's walk (protocol/walk.py)
saw a null length in one of the fields checked here: kio decodes None from nothing
else, so a request without one needs no second walk.

The fields to look at are worked out once per kio class from its annotations: a field
is nullable when its annotation is a union with None. Only non-nullable fields and the
nested entities that can hold one are visited, so a request costs a walk over its
nested entities (per topic and partition), never per record.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, classify_field


@dataclasses.dataclass(frozen=True)
class _Check:
    name: str
    nullable: bool
    child: Any
    """The nested entity class to descend into (None for a primitive)."""
    array: bool


def _nullable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(annotation)


_CHECKS: dict[Any, tuple[_Check, ...]] = {}


def _checks(cls: Any) -> tuple[_Check, ...]:
    cached = _CHECKS.get(cls)
    if cached is None:
        cached = _CHECKS[cls] = _work_out_checks(cls)
    return cached


def _work_out_checks(cls: Any) -> tuple[_Check, ...]:
    checks: list[_Check] = []
    for field in dataclasses.fields(cls):
        if "tag" in field.metadata:
            continue  # an absent tagged field takes its default
        kind = classify_field(field)
        child = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
        if child is not None and not _checks(child):
            child = None
        nullable = _nullable(field.type)
        if nullable and child is None:
            continue
        checks.append(_Check(field.name, nullable, child, isinstance(kind, EntityTupleField)))
    return tuple(checks)


def null_field(entity: Any) -> str | None:
    """The dotted name of the first non-nullable field of `entity` holding None."""
    for check in _checks(type(entity)):
        value = getattr(entity, check.name)
        if value is None:
            if check.nullable:
                continue
            return check.name
        if check.child is None:
            continue
        for item in value if check.array else (value,):
            inner = null_field(item)
            if inner is not None:
                return f"{check.name}.{inner}"
    return None
