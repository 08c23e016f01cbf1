"""SaslHandshake (17) v0-v1: the client names its SASL mechanism.

v1 is followed by SaslAuthenticate requests; after v0 the tokens come as bare
size-prefixed frames without headers (security/sasl.py; the connection loop reads them,
server/net/sasl.py `raw_token`), as Kafka serves both. On a SASL listener the connection's
session (security/sasl.py) decides: an enabled mechanism starts the exchange (or, on an
authenticated connection, a KIP-368 re-authentication with the same mechanism); any
other gets UNSUPPORTED_SASL_MECHANISM with the enabled list and the connection closes
after that answer. On a listener without SASL the answer is ILLEGAL_SASL_STATE, as
Kafka's.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 17


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    mechanism = str(request.mechanism)
    sasl = ctx.services.sasl
    session = sasl.session(ctx.services.config.current, ctx.connection) if sasl else None
    if session is None:
        log.info(
            "SaslHandshake (%s) on non-SASL listener %s from %s",
            mechanism,
            ctx.connection.listener_name,
            ctx.connection.peer_host,
        )
        return schema.response(error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    result = session.handshake(mechanism, raw_tokens=ctx.api_version == 0)
    if result.error is None:
        return schema.response(error_code=ErrorCode.none, mechanisms=result.mechanisms)
    log.warning(
        "SASL handshake refused (connection %d from %s): %s",
        ctx.connection.connection_id,
        ctx.connection.peer_host,
        result.message,
    )
    code = (
        ErrorCode.unsupported_sasl_mechanism
        if result.error == "unsupported"
        else ErrorCode.illegal_sasl_state
    )
    return schema.response(error_code=code, mechanisms=result.mechanisms)
