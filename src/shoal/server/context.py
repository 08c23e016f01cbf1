"""What a handler is given: the request's header, its connection and the broker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.server.broker import Broker


@dataclass(slots=True)
class ConnectionInfo:
    connection_id: int
    peer_host: str
    peer_port: int
    closed: bool = False
    busy: bool = False
    """A request has been read and its response is not yet written."""


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    connection: ConnectionInfo
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
