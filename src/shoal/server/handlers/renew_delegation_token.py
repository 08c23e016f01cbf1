"""RenewDelegationToken (39) v1-v2: always refused; token authentication is off
(server/handlers/common/delegation_tokens.py says which error and why). No token exists, so the HMAC
is not looked at; the expiry timestamp is -1 with the broker's own refusal, else 0.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.handlers.common import delegation_tokens as tokens
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 39
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    code, expiry = tokens.refusal(ctx)
    log.info("RenewDelegationToken refused: %s (client %s)", code.name, ctx.client_id)
    return response_schema(API_KEY, ctx.api_version).response(
        error_code=code, expiry_timestamp=expiry, throttle_time=_ZERO
    )
