"""ApiVersions (18) v0-v4: which APIs and versions this broker serves.

Built from the handler registry, so the advertised table is exactly what is served.
v3+ also carries the `share.version` feature (supported 0-1, finalized per config).
An unknown ApiVersions version is answered by the connection in v0 with
UNSUPPORTED_VERSION (see connection.py), as Kafka does.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i64

from shoal.protocol.codec import response_class
from shoal.server.context import RequestContext
from shoal.server.registry import api

if TYPE_CHECKING:
    from shoal.server.broker import Broker

API_KEY = 18
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    return api_versions_response(ctx.broker, ctx.api_version, error=ErrorCode.none)


def api_versions_response(broker: Broker, version: int, *, error: ErrorCode) -> Any:
    cls = response_class(API_KEY, version)
    module = __import__(cls.__module__, fromlist=["ApiVersion"])
    keys = tuple(
        module.ApiVersion(
            api_key=i16(h.api_key), min_version=i16(h.min_version), max_version=i16(h.max_version)
        )
        for h in sorted(broker.handlers.values(), key=lambda h: h.api_key)
    )
    fields: dict[str, Any] = {"error_code": error, "api_keys": keys}
    if version >= 1:
        fields["throttle_time"] = _ZERO
    if version >= 3:
        share_level = int(broker.config["share.version"])
        supported: tuple[Any, ...] = ()
        if version >= 4:  # v0-v3 omit features whose minimum is 0
            supported = (
                module.SupportedFeatureKey(
                    name="share.version", min_version=i16(0), max_version=i16(1)
                ),
            )
        fields["supported_features"] = supported
        fields["finalized_features_epoch"] = i64(1)
        fields["finalized_features"] = (
            (
                module.FinalizedFeatureKey(
                    name="share.version",
                    max_version_level=i16(share_level),
                    min_version_level=i16(share_level),
                ),
            )
            if share_level > 0
            else ()
        )
    return cls(**fields)
