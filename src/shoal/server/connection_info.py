"""What the broker knows of one client connection (its id, peer and state).

A leaf module: the connection loop, the request context and the services that track
per-connection state (share sessions) all import it, and it imports nothing of
`server/` (only the principal type of `security/`, and the SASL session's type for
annotations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoal.security.acl import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from shoal.security.sasl import SaslSession


@dataclass(slots=True)
class ConnectionInfo:
    connection_id: int
    peer_host: str
    peer_port: int
    closed: bool = False
    busy: bool = False
    """A request has been read and its response is not yet written."""
    listener_name: str = "PLAINTEXT"
    """The listener the connection arrived on (`listeners`' NAME)."""
    security_protocol: str = "PLAINTEXT"
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (`listener.security.protocol.map`)."""
    principal: KafkaPrincipal = ANONYMOUS
    """Who is on the other end: set by TLS client authentication or SASL."""
    sasl: SaslSession | None = None
    """The SASL authentication state on SASL listeners (server/net/sasl.py), else None."""
    # deadlines checked by server/net/idle.py (monotonic ms)
    last_active_ms: int = 0
    """When the connection was accepted, last read a whole request or wrote a response."""
    frame_started_ms: int | None = None
    """When the size of the request being read arrived (None between frames)."""
    write_started_ms: int | None = None
    """When the response being written started waiting for the client (None otherwise)."""
    close_reason: str | None = None
    """Why the broker closed the connection (set by the idle sweep, already logged)."""
    mute_ms: int = 0
    """Client quotas: how long to read nothing more once the response in hand
    is written (a throttled request, server/net/throttle.py); the connection loop resets it."""
