"""CreateDelegationToken (38) v1-v3: always refused; token authentication is off
(server/handlers/common/delegation_tokens.py says which error and why).

The owner is the request's owner (v3+) when it names one, else the caller; the answer
names the owner and (v3+) the requester, with an empty token id and HMAC.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation, KafkaPrincipal, ResourceType
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import delegation_tokens as tokens
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 38
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 3)
async def handle(ctx: RequestContext, request: Any) -> Any:
    requester = ctx.connection.principal
    owner_name = getattr(request, "owner_principal_name", None)
    owner = (
        KafkaPrincipal(str(request.owner_principal_type), owner_name) if owner_name else requester
    )
    timestamp = tokens.ERROR_TIMESTAMP
    if not tokens.requests_allowed(ctx):
        code = ErrorCode.delegation_token_request_not_allowed
    elif owner != requester and not authz.allowed(
        ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, str(owner)
    ):
        code = ErrorCode.delegation_token_authorization_failed
    elif any(r.principal_type != tokens.USER_TYPE for r in request.renewers):
        code = ErrorCode.invalid_principal_type
    else:
        code, timestamp = ErrorCode.delegation_token_auth_disabled, tokens.DISABLED_TIMESTAMP
    log.info(
        "CreateDelegationToken for %s by %s refused: %s (client %s)",
        owner,
        requester,
        code.name,
        ctx.client_id,
    )
    return response_schema(API_KEY, ctx.api_version).response(
        error_code=code,
        principal_type=owner.type,
        principal_name=owner.name,
        token_requester_principal_type=requester.type,
        token_requester_principal_name=requester.name,
        issue_timestamp=timestamp,
        expiry_timestamp=timestamp,
        max_timestamp=timestamp,
        token_id="",
        hmac=b"",
        throttle_time=_ZERO,
    )
