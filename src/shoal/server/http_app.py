"""The HTTP listener's application: `/metrics` (Prometheus text) and the web console.

A Starlette app built from the services; the listener (`metrics.listener`) serves it
in the broker's event loop. The app's lifespan runs the console's chart sampler.
"""

from __future__ import annotations

from prometheus_client import make_asgi_app
from starlette.applications import Starlette
from starlette.routing import Mount

from shoal.server.console.routes import Console
from shoal.server.services import Services


def build_app(services: Services) -> Starlette:
    routes = [Mount("/metrics", app=make_asgi_app(registry=services.metrics.registry))]
    console = Console(services)  # web console (issue 13): routes + chart sampler lifespan
    return Starlette(routes=[*routes, *console.routes()], lifespan=console.lifespan)
