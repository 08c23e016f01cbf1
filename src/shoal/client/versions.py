"""Which version of an API to speak: never hard-coded, always from ApiVersions.

`choose_version` picks the highest version that the call's builder knows, kio has a
schema for, and the broker serves; when there is none it raises UNSUPPORTED_VERSION
naming the API in Kafka's spelling ("ListGroups (API 16)") and what the broker serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shoal.client.calls import Call
from shoal.client.errors import ErrorCode, KafkaError
from shoal.protocol import codec

BrokerVersions = Mapping[int, tuple[int, int]]
"""api key -> (min version, max version) the broker serves, from ApiVersions."""


def api_label(api_key: int) -> str:
    """Kafka's name of an API with its key, e.g. 16 -> "ListGroups (API 16)"."""
    name = codec.api_name(api_key) or "Unknown"
    return f"{''.join(part.title() for part in name.split('_'))} (API {api_key})"


def choose_version(call: Call, broker: BrokerVersions, *, where: str = "the broker") -> int:
    """The highest version allowed by the builder, kio and the broker (`where` names
    the broker in the error)."""
    low, high = broker.get(call.api_key, (0, -1))
    for version in range(min(call.max_version, high), max(call.min_version, low) - 1, -1):
        if codec.request_class(call.api_key, version) is not None:
            return version
    served = f"serves v{low}-v{high}" if high >= 0 else "does not serve it"
    raise KafkaError(
        ErrorCode.unsupported_version,
        f"{where} cannot answer {api_label(call.api_key)} "
        f"(the client speaks v{call.min_version}-v{call.max_version}; the broker {served})",
    )


def parse_api_versions(response: Any) -> dict[int, tuple[int, int]]:
    """The version ranges of an ApiVersions response."""
    return {int(v.api_key): (int(v.min_version), int(v.max_version)) for v in response.api_keys}
