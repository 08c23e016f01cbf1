"""UpdateFeatures (57) v0-v2: change finalized feature levels (`kafka-features`).

Shoal's levels are fixed while it runs (server/metadata/features.py), so an update is accepted
only when it changes nothing; every update is still checked as Kafka's
FeatureControlManager.updateFeature checks it, in the request's order, and the first
failure fails them all with INVALID_UPDATE_VERSION and Kafka's message:

- an upgrade type other than 1-3 (v1+): "The controller does not support the given
  upgrade type."; a level below 0: "A feature version cannot be less than 0.";
- a feature this broker does not know: "Local controller N does not support this
  feature." (level 0: "Feature X not found.");
- a level outside the supported range: "Local controller N only supports versions A-B";
- a lower level without a downgrade type: "Can't downgrade the version of this feature
  without setting the upgrade type to either safe or unsafe downgrade."; a higher level
  with one: "Can't downgrade to a newer version.". v0's AllowDowngrade is not honoured
  (Kafka 4.2 treats every v0 update as an upgrade).

Deliberate difference: a change that passes those checks (only share.version can, its
supported range being 0-1) is refused with INVALID_UPDATE_VERSION saying the level is
set by the `share.version` config at start; Kafka applies it. ValidateOnly changes
nothing in either. v0-v1 answer one result per update (message "NONE" when it passed,
as Kafka's), none after a failure; v2 only the top-level error.

Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.metadata import features
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 57
_ZERO = datetime.timedelta(0)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
_FAILED_PREFIX = "The update failed for all features since the following feature had an error: "
_PASSED = "NONE"
"""The message of a result that passed (Kafka's ApiError.NONE message)."""


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    updates = request.feature_updates
    refused = authz.cluster_refusal(ctx, AclOperation.ALTER)
    if refused is not None:
        code, message = refused
        return _response(schema, code, message, [])
    known = features.by_name(ctx.services.config.current)
    for update in updates:
        upgrade_type = UPGRADE if ctx.api_version == 0 else int(update.upgrade_type)
        reason = _refusal(ctx, known, update.feature, int(update.max_version_level), upgrade_type)
        if reason is not None:
            message = (
                f"{_FAILED_PREFIX}Invalid update version {int(update.max_version_level)} "
                f"for feature {update.feature}. {reason}"
            )
            log.info("UpdateFeatures refused (client %s): %s", ctx.client_id, message)
            return _response(schema, ErrorCode.invalid_update_version, message, [])
    return _response(
        schema, ErrorCode.none, None, [(u.feature, ErrorCode.none, _PASSED) for u in updates]
    )


def _refusal(
    ctx: RequestContext,
    known: dict[str, features.Feature],
    name: str,
    level: int,
    upgrade_type: int,
) -> str | None:
    """Why Kafka's checks refuse this update, then whether Shoal can make it; None if
    it changes nothing."""
    node = ctx.services.node.node_id
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    feature = known.get(name)
    if feature is None:
        if level == 0:
            return f"Feature {name} not found."
        return f"Local controller {node} does not support this feature."
    if not feature.min_supported <= level <= feature.max_supported:
        return (
            f"Local controller {node} only supports versions "
            f"{feature.min_supported}-{feature.max_supported}"
        )
    if level < feature.level and upgrade_type == UPGRADE:
        return (
            "Can't downgrade the version of this feature without setting the upgrade type "
            "to either safe or unsafe downgrade."
        )
    if level > feature.level and upgrade_type != UPGRADE:
        return "Can't downgrade to a newer version."
    if level != feature.level:
        return (
            f"Shoal runs at level {feature.level} of this feature until it restarts "
            "(set by its config at start)."
        )
    return None


def _response(
    schema: Schema,
    code: ErrorCode,
    message: str | None,
    results: list[tuple[str, ErrorCode, str | None]],
) -> Any:
    if not schema.has("UpdateFeaturesResponse", "results"):  # v2 answers no results
        return schema.response(throttle_time=_ZERO, error_code=code, error_message=message)
    return schema.response(
        throttle_time=_ZERO,
        error_code=code,
        error_message=message,
        results=tuple(
            schema.make(
                "UpdatableFeatureResult", feature=name, error_code=error, error_message=text
            )
            for name, error, text in results
        ),
    )
