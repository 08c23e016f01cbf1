"""DescribeDelegationToken (41) v1-v3: no token is listed; token authentication is
off (server/handlers/common/delegation_tokens.py says which error and why). Whatever owners are
asked for, the answer is the error and no tokens.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.handlers.common import delegation_tokens as tokens
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 41
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 3)
async def handle(ctx: RequestContext, request: Any) -> Any:
    code = (
        ErrorCode.delegation_token_auth_disabled
        if tokens.requests_allowed(ctx)
        else ErrorCode.delegation_token_request_not_allowed
    )
    log.info("DescribeDelegationToken refused: %s (client %s)", code.name, ctx.client_id)
    return response_schema(API_KEY, ctx.api_version).response(
        error_code=code, tokens=(), throttle_time=_ZERO
    )
