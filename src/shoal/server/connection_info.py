"""What the broker knows of one client connection (its id, peer and state).

A leaf module: the connection loop, the request context and the services that track
per-connection state (share sessions) all import it, and it imports nothing of
`server/`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ConnectionInfo:
    connection_id: int
    peer_host: str
    peer_port: int
    closed: bool = False
    busy: bool = False
    """A request has been read and its response is not yet written."""
