"""Build kio messages for whichever version a request came in.

Kafka messages gain fields with versions. Handlers describe a response once, with
every field they know, and `Schema.make` keeps only the fields the negotiated
version has. Nested types are looked up by their kio class name in the version's
module. Cached per (api key, version, direction); the cost is per object built
(per topic or partition), never per record.
"""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from typing import Any

from shoal.protocol.codec import request_class, response_class


class Schema:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.version = int(root.__version__)
        self._module = sys.modules[root.__module__]
        self._fields: dict[str, frozenset[str]] = {}

    def cls(self, name: str) -> Any:
        return getattr(self._module, name)

    def has(self, name: str, field: str) -> bool:
        return field in self._field_names(name)

    def _field_names(self, name: str) -> frozenset[str]:
        names = self._fields.get(name)
        if names is None:
            names = frozenset(f.name for f in dataclasses.fields(self.cls(name)))
            self._fields[name] = names
        return names

    def make(self, type_name: str, /, **values: Any) -> Any:
        """An instance of nested type `type_name` with the fields this version has."""
        names = self._field_names(type_name)
        return self.cls(type_name)(**{k: v for k, v in values.items() if k in names})

    def response(self, **values: Any) -> Any:
        return self.make(self.root.__name__, **values)


@cache
def response_schema(api_key: int, version: int) -> Schema:
    return Schema(response_class(api_key, version))


@cache
def request_schema(api_key: int, version: int) -> Schema:
    cls = request_class(api_key, version)
    assert cls is not None, f"no request schema for api {api_key} v{version}"
    return Schema(cls)
