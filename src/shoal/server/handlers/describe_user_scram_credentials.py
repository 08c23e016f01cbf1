"""DescribeUserScramCredentials (50) v0: which SCRAM mechanisms (and iterations) each
user has; never a salt or key.

Null or empty `users` describes every user with a credential. A named user without one
gets RESOURCE_NOT_FOUND and a user named twice DUPLICATE_RESOURCE, with Kafka's messages.
Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top level otherwise).
"""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.security.scram import MECHANISMS
from shoal.server.context import RequestContext
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 50
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    assert ctx.services.sasl is not None, "the broker wires the SASL service"
    store = ctx.services.sasl.scram
    refusal = cluster_refusal(ctx, AclOperation.DESCRIBE)
    if refusal is not None:
        refused_code, refused_message = refusal
        return schema.response(
            throttle_time=_ZERO,
            error_code=refused_code,
            error_message=refused_message,
            results=(),
        )
    asked = [str(u.name) for u in request.users or ()]
    names = asked or store.users()
    counts = Counter(asked)
    results = []
    for name in dict.fromkeys(names):
        code, message = ErrorCode.none, ""  # Kafka's empty message on success
        mechanisms = store.mechanisms(name)
        if counts[name] > 1:
            code = ErrorCode.duplicate_resource
            message = (
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {name}"
            )
        elif not mechanisms:
            code = ErrorCode.resource_not_found
            message = f"Attempt to describe a user credential that does not exist: {name}"
        infos = (
            tuple(
                schema.make(
                    "CredentialInfo",
                    mechanism=MECHANISMS[mechanism].type_id,
                    iterations=credential.iterations,
                )
                for mechanism, credential in sorted(mechanisms.items())
            )
            if code is ErrorCode.none
            else ()
        )
        results.append(
            schema.make(
                "DescribeUserScramCredentialsResult",
                user=name,
                error_code=code,
                error_message=message,
                credential_infos=infos,
            )
        )
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, error_message="", results=tuple(results)
    )
