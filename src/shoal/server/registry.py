"""Which APIs the broker serves, at which versions, and by which handler.

A handler module registers itself with `@api(key, min_version, max_version)`; the
ApiVersions response is built from this registry, so what is advertised is exactly
what is served. A handler is `async def handle(ctx, request) -> response | None`
(None = send no response, as for Produce with acks=0).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shoal.server.context import RequestContext

HandlerFn = Callable[["RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    api_key: int
    min_version: int
    max_version: int
    handle: HandlerFn

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, ApiHandler] = {}


def api(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register the decorated coroutine as the handler of `api_key` for the versions."""

    def register(fn: HandlerFn) -> HandlerFn:
        assert api_key not in REGISTRY, f"api {api_key} registered twice"
        REGISTRY[api_key] = ApiHandler(api_key, min_version, max_version, fn)
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
