"""UnregisterBroker (64) v0: remove a broker's registration (`kafka-cluster unregister`).

The only registered broker is this node. Any other id gets BROKER_ID_NOT_REGISTERED
with Kafka's message. Deliberate difference: Kafka unregisters even its own running
broker, which leaves every partition of a single node without a leader until it
restarts; Shoal refuses its own id with INVALID_REQUEST (it would have nothing to do:
it has no registration apart from running).

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
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 64
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    broker_id = int(request.broker_id)
    node_id = ctx.services.node.node_id
    refused = authz.cluster_refusal(ctx, AclOperation.ALTER)
    if refused is not None:
        code, message = refused
    elif broker_id != node_id:
        code = ErrorCode.broker_id_not_registered
        message = f"Broker ID {broker_id} is not currently registered"
    else:
        code = ErrorCode.invalid_request
        message = f"Broker ID {broker_id} is this running node; Shoal does not unregister it"
    log.info("UnregisterBroker of %d refused (%s): %s", broker_id, code.name, message)
    return response_schema(API_KEY, 0).response(
        throttle_time=_ZERO, error_code=code, error_message=message
    )
