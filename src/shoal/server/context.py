"""What a handler is given: the request's header, its connection and the services.

A handler never sees the broker: `services` (server/handler_services.py) holds the narrow
collaborators handlers use.
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.server.connection_info import ConnectionInfo
from shoal.server.handler_services import Services


@dataclass(slots=True)
class RequestContext:
    services: Services
    connection: ConnectionInfo
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
