"""RemoveRaftVoter (81) v0: remove a controller from the KRaft voter set (KIP-853).

Shoal is a static quorum of one voter (server/metadata/quorum.py, kraft.version 0): after
Kafka's checks of the request (KafkaRaftClient.handleRemoveVoterRequest: the cluster id,
then a voter with a directory id) the answer is Kafka's at kraft.version 0:
UNSUPPORTED_VERSION.

Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.metadata import quorum
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 81
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    refused = (
        authz.cluster_refusal(ctx, AclOperation.ALTER)
        or quorum.cluster_id_refusal(request.cluster_id, ctx.services.node.cluster_id)
        or _invalid(request)
        or quorum.reconfiguration_refusal("removing")
    )
    code, message = refused
    log.info("RemoveRaftVoter of %d refused (%s): %s", int(request.voter_id), code.name, message)
    return response_schema(API_KEY, ctx.api_version).response(
        throttle_time=_ZERO, error_code=code, error_message=message
    )


def _invalid(request: Any) -> tuple[ErrorCode, str] | None:
    if int(request.voter_id) < 0 or request.voter_directory_id is None:
        return ErrorCode.invalid_request, "Remove voter request didn't include a valid voter"
    return None
