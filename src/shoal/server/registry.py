"""Which APIs the broker serves, at which versions, and by which handler.

A handler module registers itself with `@api(key, min_version, max_version)`; the
ApiVersions response is built from this registry (`api_ranges`), so what is advertised
is exactly what is served. A handler is `async def handle(ctx, request) -> response |
None` (None = send no response, as for Produce with acks=0).

A request at a version outside the range closes the connection, unless the API's
module declared a fallback with `@unsupported_version(key)`: it is called with the
context (the body is not decoded) and returns the version to encode its response in
and the response. ApiVersions declares one (Kafka answers an unknown ApiVersions
version in v0 with UNSUPPORTED_VERSION and the key list).

`@api(..., parks=True)` marks an API whose handler may wait on purpose, for a timer or
for other clients (a long poll, a rebalance): responses a connection holds for a
pipeline are written before such a request is served (server/net/connection.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shoal.server.handler_services import ApiRange

if TYPE_CHECKING:
    from shoal.server.context import RequestContext

HandlerFn = Callable[["RequestContext", Any], Awaitable[Any]]
UnsupportedFn = Callable[["RequestContext"], tuple[int, Any]]
"""A fallback for unsupported versions: returns (response version, response)."""


@dataclass(frozen=True, slots=True)
class ApiHandler:
    api_key: int
    min_version: int
    max_version: int
    handle: HandlerFn
    unsupported: UnsupportedFn | None = None
    parks: bool = False
    """The handler may wait on purpose (a long poll, a rebalance): see the module docstring."""

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, ApiHandler] = {}


def api(
    api_key: int, min_version: int, max_version: int, *, parks: bool = False
) -> Callable[[HandlerFn], HandlerFn]:
    """Register the decorated coroutine as the handler of `api_key` for the versions;
    `parks`: it may wait on purpose (module docstring)."""

    def register(fn: HandlerFn) -> HandlerFn:
        assert api_key not in REGISTRY, f"api {api_key} registered twice"
        REGISTRY[api_key] = ApiHandler(api_key, min_version, max_version, fn, parks=parks)
        return fn

    return register


def unsupported_version(api_key: int) -> Callable[[UnsupportedFn], UnsupportedFn]:
    """Register the decorated function as `api_key`'s answer to unsupported versions
    (the API's handler must be registered first)."""

    def register(fn: UnsupportedFn) -> UnsupportedFn:
        handler = REGISTRY.get(api_key)
        assert handler is not None, f"api {api_key} has no handler"
        assert handler.unsupported is None, f"api {api_key} has two fallbacks"
        REGISTRY[api_key] = dataclasses.replace(handler, unsupported=fn)
        return fn

    return register


def load_all_handlers() -> dict[int, ApiHandler]:
    """Import every handler module so each registers itself."""
    import importlib
    import pkgutil

    from shoal.server import handlers

    for module in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"{handlers.__name__}.{module.name}")
    return REGISTRY


def api_ranges(handlers: Mapping[int, ApiHandler]) -> tuple[ApiRange, ...]:
    """What ApiVersions advertises, by API key."""
    return tuple(
        ApiRange(h.api_key, h.min_version, h.max_version)
        for h in sorted(handlers.values(), key=lambda h: h.api_key)
    )
