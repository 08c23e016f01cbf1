"""SaslAuthenticate (36) v0-v2: one round of the SASL exchange chosen by SaslHandshake.

The token goes to the connection's session (security/sasl.py); its size is bounded by
the mechanism parsers and, before that, by `socket.request.max.bytes` at the frame.
Success sets the connection's principal; v1+ carries SessionLifetimeMs (KIP-368,
`connections.max.reauth.ms`). A failure is logged with the mechanism, the user name and
the peer (never the password or token), answered after
`connection.failed.authentication.delay.ms` with SASL_AUTHENTICATION_FAILED and Kafka's
message (server/net/sasl.py `authenticate`), and the connection closes after it. Outside an
exchange (a non-SASL listener, an authenticated connection) the answer is
ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.net import sasl
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 36


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    services, info = ctx.services, ctx.connection
    config = services.config.current
    session = services.sasl.session(config, info) if services.sasl else None
    if session is None:
        return _response(
            schema,
            ErrorCode.illegal_sasl_state,
            # Kafka's words (its KafkaApis answers any SaslAuthenticate it is given)
            "SaslAuthenticate request received after successful authentication",
        )
    result = await sasl.authenticate(
        config, info, session, bytes(request.auth_bytes), services.clock.wall_ms()
    )
    if result.illegal:
        return _response(schema, ErrorCode.illegal_sasl_state, result.failure)
    if result.failure is not None:
        return _response(schema, ErrorCode.sasl_authentication_failed, result.failure)
    return _response(schema, ErrorCode.none, "", result.auth_bytes, result.session_lifetime_ms)


def _response(
    schema: Any,
    code: ErrorCode,
    message: str | None,
    auth_bytes: bytes = b"",
    lifetime_ms: int = 0,
) -> Any:
    return schema.response(
        error_code=code,
        error_message=message,
        auth_bytes=auth_bytes,
        session_lifetime=datetime.timedelta(milliseconds=lifetime_ms),
    )
