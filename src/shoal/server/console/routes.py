"""The console's routes, mounted by the HTTP app (server/http_app.py)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from shoal.server.services import Services


def console_routes(services: Services) -> list[BaseRoute]:
    """Every route of the console (none yet)."""
    return []
