"""The HTTP listener's application: `/metrics` (Prometheus text) and the web console.

A Starlette app built from the services; the listener (`metrics.listener`) serves it
in the broker's event loop. The app's lifespan runs the console's chart sampler.
"""

from __future__ import annotations

from prometheus_client import make_asgi_app
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from shoal.server.handler_services import Services
from shoal.server.observability.console.routes import Console


def build_app(services: Services) -> Starlette:
    metrics = _AsgiEndpoint(make_asgi_app(registry=services.metrics.registry))
    routes = [Route("/metrics", endpoint=metrics)]
    console = Console(services)  # web console: routes + chart sampler lifespan
    return Starlette(routes=[*routes, *console.routes()], lifespan=console.lifespan)


class _AsgiEndpoint:
    """An ASGI app as a route's endpoint: `/metrics` answers itself (a Mount would
    redirect it to `/metrics/`)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)
