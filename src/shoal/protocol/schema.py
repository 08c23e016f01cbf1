"""Build kio messages for whichever version a request came in.

Kafka messages gain fields with versions. Handlers describe a response once, with
every field they know, and `Schema.make` keeps only the fields the negotiated
version has. A field name that no version of that message type has (a typo, a field
given to the wrong nested type) is our bug, not a version difference: `make` raises
TypeError naming the type, the field and the API, so it cannot be dropped silently.

Nested types are looked up by their kio class name in the version's module. Cached
per (api key, version, direction); the union of field names across versions is
cached per (api key, direction). The cost is per object built (per topic or
partition), never per record: a dict lookup and a subset check when every field
given is the version's, and the unknown-field check once per (type, field) dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.static.constants import EntityType

from shoal.protocol.codec import SCHEMA_NAMES, api_name, request_class, response_class


class Schema:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.version = int(root.__version__)
        self.api_key = int(root.__api_key__)
        self.entity_type: EntityType = root.__type__
        self._module = sys.modules[root.__module__]
        self._types: dict[str, tuple[Any, frozenset[str]]] = {}
        """Nested type name -> (its class in this version, its field names)."""
        self._dropped: set[tuple[str, str]] = set()
        """(type name, field) given to `make` that another version has: checked once."""
        self.response: Callable[..., Any] = functools.partial(self.make, root.__name__)
        """`make` of the root type (the message itself): a partial, not a method, so
        that building a response costs no call of its own around `make`."""

    def cls(self, name: str) -> Any:
        return getattr(self._module, name)

    def has(self, name: str, field: str) -> bool:
        return field in self._type(name)[1]

    def _type(self, name: str) -> tuple[Any, frozenset[str]]:
        entry = self._types.get(name)
        if entry is None:
            cls = self.cls(name)
            entry = self._types[name] = (cls, frozenset(f.name for f in dataclasses.fields(cls)))
        return entry

    def make(self, type_name: str, /, **values: Any) -> Any:
        """An instance of nested type `type_name` with the fields this version has.

        Fields other versions of the type have are dropped; a field no version has
        raises TypeError (naming the type, the field and the API)."""
        entry = self._types.get(type_name)
        cls, names = entry if entry is not None else self._type(type_name)
        if names.issuperset(values):  # every field given is this version's
            return cls(**values)
        for key in values:
            if key not in names and (type_name, key) not in self._dropped:
                if not field_known(self.api_key, self.entity_type, type_name, key):
                    raise TypeError(
                        f"{type_name} has no field {key!r} in any version of "
                        f"{api_name(self.api_key)} (api {self.api_key}) {self.entity_type.name}"
                    )
                self._dropped.add((type_name, key))
        return cls(**{k: v for k, v in values.items() if k in names})


@cache
def field_known(api_key: int, entity_type: EntityType, type_name: str, field: str) -> bool:
    """Whether some version kio knows of this api key and direction has `field` in
    `type_name`. Versions are looked at newest first and the search stops at the first
    that has it: a field a handler gives for newer clients is found in one module, and
    one removed later (Metadata's ClusterAuthorizedOperations) a few versions down,
    instead of importing every version (`known_field_names`)."""
    name = api_name(api_key)
    assert name is not None, f"unknown api key {api_key}"
    of_version = request_class if entity_type is EntityType.request else response_class
    for version in sorted(SCHEMA_NAMES[name], reverse=True):
        cls = of_version(api_key, version)
        nested = None if cls is None else getattr(sys.modules[cls.__module__], type_name, None)
        if (
            nested is not None
            and dataclasses.is_dataclass(nested)
            and field in {f.name for f in dataclasses.fields(nested)}
        ):
            return True
    return False


@cache
def known_field_names(api_key: int, entity_type: EntityType, type_name: str) -> frozenset[str]:
    """Every field name `type_name` has in any version kio knows of this api key and
    direction (empty if no version defines the type)."""
    name = api_name(api_key)
    assert name is not None, f"unknown api key {api_key}"
    of_version = request_class if entity_type is EntityType.request else response_class
    names: set[str] = set()
    for version in SCHEMA_NAMES[name]:
        cls = of_version(api_key, version)
        if cls is None:
            continue
        nested = getattr(sys.modules[cls.__module__], type_name, None)
        if nested is not None and dataclasses.is_dataclass(nested):
            names.update(f.name for f in dataclasses.fields(nested))
    return frozenset(names)


@cache
def response_schema(api_key: int, version: int) -> Schema:
    return Schema(response_class(api_key, version))


@cache
def request_schema(api_key: int, version: int) -> Schema:
    cls = request_class(api_key, version)
    assert cls is not None, f"no request schema for api {api_key} v{version}"
    return Schema(cls)


def preload(api_key: int, versions: range) -> int:
    """Load what serving `versions` of `api_key` needs, so the first request of a
    kind does not pay for it on the broker's loop: the kio request and response
    modules (imported lazily by kio, ~5-20 ms each), their decoders (with the
    generated walk of the request: ~0.5-2 ms) and composed writers, and the field
    names of this version `Schema.make` keeps. Returns how
    many versions kio knows of those asked."""
    from shoal.protocol import codec, fast_writer

    loaded = 0
    for version in versions:
        request = request_class(api_key, version)
        if request is None:
            continue
        codec.is_flexible(api_key, version)
        codec.request_reader(request)
        codec.prepare_decode(api_key, version)
        response = response_schema(api_key, version)
        fast_writer.entity_writer(response.root)
        for name, nested in vars(response._module).items():
            if isinstance(nested, type) and dataclasses.is_dataclass(nested):
                response.has(name, "")
        loaded += 1
    return loaded
