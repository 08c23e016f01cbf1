"""Delegation tokens (KIP-48) as Kafka 4.2 answers without `delegation.token.secret.key`:
token authentication is off, so no token is ever created, renewed, expired or listed.

Shoal has no token authentication (no secret key, no SASL/SCRAM token login), so it
answers the four token APIs as a Kafka broker with that key unset does:

- a connection that may not ask for tokens gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
  (Kafka's `allowTokenRequests`: PLAINTEXT, SSL without a client certificate, or a
  principal that itself logged in with a token); its timestamps are -1;
- otherwise CreateDelegationToken first checks what Kafka's broker checks (another
  owner needs CREATE_TOKENS on that user: DELEGATION_TOKEN_AUTHORIZATION_FAILED; a
  renewer must be a `User`: INVALID_PRINCIPAL_TYPE; timestamps -1), then every API gets
  DELEGATION_TOKEN_AUTH_DISABLED, with the controller's timestamps 0.
"""

from __future__ import annotations

import datetime

from shoal.protocol.errors import ErrorCode
from shoal.security.acl import ANONYMOUS
from shoal.server.context import RequestContext

ERROR_TIMESTAMP = datetime.datetime.fromtimestamp(-0.001, tz=datetime.UTC)
"""-1 ms: the timestamps of an answer the broker itself refuses (Kafka's
DelegationTokenManager.ErrorTimestamp)."""
DISABLED_TIMESTAMP = datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
"""0: the timestamps of the controller's DELEGATION_TOKEN_AUTH_DISABLED answer."""
USER_TYPE = "User"


def requests_allowed(ctx: RequestContext) -> bool:
    """Whether this connection may ask for tokens (Kafka's KafkaApis.allowTokenRequests;
    no Shoal principal is token-authenticated)."""
    connection = ctx.connection
    protocol = connection.security_protocol
    if protocol == "PLAINTEXT":
        return False
    return not (protocol == "SSL" and connection.principal == ANONYMOUS)


def refusal(ctx: RequestContext) -> tuple[ErrorCode, datetime.datetime]:
    """The code and timestamps of a token API that checks nothing of its own (renew,
    expire): the broker's refusal where requests are not allowed, else the
    controller's DELEGATION_TOKEN_AUTH_DISABLED."""
    if requests_allowed(ctx):
        return ErrorCode.delegation_token_auth_disabled, DISABLED_TIMESTAMP
    return ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP
