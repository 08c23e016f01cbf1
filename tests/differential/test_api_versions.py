"""ApiVersions: every API Kafka serves on one node, Shoal serves at the same versions."""

from __future__ import annotations

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.differential.conftest import Pair
from tests.support.wire import call1


def _served(bootstrap: str) -> dict[int, tuple[int, int]]:
    request = ApiVersionsRequest(
        client_software_name="shoal-differential", client_software_version="1"
    )
    response = call1(bootstrap, request)
    assert response.error_code == ErrorCode.none
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def test_every_api_kafka_serves_is_served_at_its_versions(pair: Pair) -> None:
    kafka, shoal = pair.run(_served)
    missing = {api: kafka[api] for api in kafka if api not in shoal}
    narrower = {
        api: (kafka[api], shoal[api])
        for api in kafka
        if api in shoal and (shoal[api][0] > kafka[api][0] or shoal[api][1] < kafka[api][1])
    }
    assert (missing, narrower) == ({}, {}), (
        f"APIs Kafka serves and Shoal does not: {missing}; "
        f"(Kafka's, Shoal's) version ranges: {narrower}"
    )
