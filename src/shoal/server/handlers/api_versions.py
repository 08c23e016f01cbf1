"""ApiVersions (18) v0-v4: which APIs and versions this broker serves.

Built from the handler registry (`services.api_versions`), so the advertised table is
exactly what is served. v3+ also carries the feature levels (server/metadata/features.py): each
feature's supported range (v0-v3 leave out those whose minimum is 0, as Kafka does: older
clients cannot read a 0 minimum) and the finalized levels above 0, at epoch 1 (the levels
never change while the broker runs). An unknown ApiVersions version is answered in v0 with
UNSUPPORTED_VERSION and ApiVersions' own range only, as Kafka does (KIP-511), so the
client can pick a version of it (the registry's fallback, declared here).

The answer depends only on the version, the API table and `share.version` (a dynamic
config), and clients ask on every connection: it is built once per such key and kept,
its body encoded once (`codec.constant_body`).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i64

from shoal.config import broker_keys
from shoal.protocol import codec
from shoal.protocol.codec import response_class
from shoal.server.context import RequestContext
from shoal.server.handler_services import Services
from shoal.server.metadata import features
from shoal.server.registry import api, unsupported_version

log = logging.getLogger(__name__)
API_KEY = 18
_FALLBACK_VERSION = 0
_ZERO = datetime.timedelta(0)
_MIN_ZERO_FEATURES_VERSION = 4
"""From v4 supported features whose minimum level is 0 are listed too (KIP-1022)."""
_FEATURES_EPOCH = 1


_KEPT_MAX = 64
"""Answers kept (module docstring): a handful per broker; more only when one process
builds many brokers (tests), and then the oldest are dropped."""
_kept: dict[tuple[int, int, int], tuple[object, Any]] = {}
"""(version, share.version, id of the broker's API table) -> (that table, the answer)."""


@api(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    services = ctx.services
    version = ctx.api_version
    share_level = services.config.current.get(broker_keys.SHARE_VERSION)
    ranges = services.api_versions
    key = (version, share_level, id(ranges))
    kept = _kept.get(key)
    if kept is not None and kept[0] is ranges:  # the same table, not one at a reused id
        return kept[1]
    response = codec.constant_body(api_versions_response(services, version, error=ErrorCode.none))
    if len(_kept) >= _KEPT_MAX:
        del _kept[next(iter(_kept))]
    _kept[key] = (ranges, response)
    return response


@unsupported_version(API_KEY)
def unsupported(ctx: RequestContext) -> tuple[int, Any]:
    """Kafka's answer to ApiVersions at a version it does not know: a v0 body with
    UNSUPPORTED_VERSION listing ApiVersions' own range only (ApiVersionsRequest's
    error response in Kafka 4.2: tests/differential/test_bad_input.py)."""
    log.info(
        "ApiVersions v%d is not supported; answering in v%d (connection %d, client %r)",
        ctx.api_version,
        _FALLBACK_VERSION,
        ctx.connection.connection_id,
        ctx.client_id,
    )
    response = api_versions_response(
        ctx.services, _FALLBACK_VERSION, error=ErrorCode.unsupported_version, only=API_KEY
    )
    return _FALLBACK_VERSION, response


def api_versions_response(
    services: Services, version: int, *, error: ErrorCode, only: int | None = None
) -> Any:
    """The answer at `version`; with `only`, listing that API's range alone."""
    cls = response_class(API_KEY, version)
    module = __import__(cls.__module__, fromlist=["ApiVersion"])
    keys = tuple(
        module.ApiVersion(
            api_key=i16(r.api_key), min_version=i16(r.min_version), max_version=i16(r.max_version)
        )
        for r in services.api_versions
        if only is None or r.api_key == only
    )
    fields: dict[str, Any] = {"error_code": error, "api_keys": keys}
    if version >= 1:
        fields["throttle_time"] = _ZERO
    if version >= 3:
        known = features.features(services.config.current)
        fields["supported_features"] = tuple(
            module.SupportedFeatureKey(
                name=f.name, min_version=i16(f.min_supported), max_version=i16(f.max_supported)
            )
            for f in known
            if version >= _MIN_ZERO_FEATURES_VERSION or f.min_supported > 0
        )
        fields["finalized_features_epoch"] = i64(_FEATURES_EPOCH)
        fields["finalized_features"] = tuple(
            module.FinalizedFeatureKey(
                name=f.name, max_version_level=i16(f.level), min_version_level=i16(f.level)
            )
            for f in known
            if f.level > 0
        )
    return cls(**fields)
