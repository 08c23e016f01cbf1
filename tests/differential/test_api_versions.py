"""ApiVersions: every API Kafka serves on one node, Shoal serves at the same versions, and
reports the same finalized features, but for the deliberate exceptions listed here."""

from __future__ import annotations

import subprocess
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from tests.differential.conftest import Pair
from tests.support import kafka_reference
from tests.support.wire import call1

NOT_SERVED_ON_PURPOSE = {
    88: "StreamsGroupHeartbeat: no streams groups (KIP-1071); Kafka Streams defaults to "
    "group.protocol=classic, served by classic groups; =streams fails with "
    "UnsupportedVersionException",
    89: "StreamsGroupDescribe: no streams groups (see 88)",
}
"""APIs Kafka 4.2 serves that Shoal does not, each with its one-line reason."""

FEATURES_ON_PURPOSE = {
    "kraft.version": (0, "a static one-voter quorum: voters cannot be added or removed"),
    "streams.version": (0, "no streams groups (see NOT_SERVED_ON_PURPOSE)"),
}
"""Finalized features whose level differs from Kafka's: Shoal's level (0: not
finalized) and why. Supported ranges differ on purpose too: Shoal's are the levels it
can run at (its one level, share.version 0-1), each within Kafka's range."""


def _api_versions(bootstrap: str, request: Any = None) -> Any:
    response = call1(
        bootstrap,
        request
        or ApiVersionsRequest(
            client_software_name="shoal-differential", client_software_version="1"
        ),
    )
    assert response.error_code == ErrorCode.none
    return response


def _served(bootstrap: str) -> dict[int, tuple[int, int]]:
    response = _api_versions(bootstrap)
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def test_every_api_kafka_serves_is_served_at_its_versions(pair: Pair) -> None:
    kafka, shoal = pair.run(_served)
    missing = {
        api: kafka[api] for api in kafka if api not in shoal and api not in NOT_SERVED_ON_PURPOSE
    }
    narrower = {
        api: (kafka[api], shoal[api])
        for api in kafka
        if api in shoal and (shoal[api][0] > kafka[api][0] or shoal[api][1] < kafka[api][1])
    }
    assert (missing, narrower) == ({}, {}), (
        f"APIs Kafka serves and Shoal does not: {missing}; "
        f"(Kafka's, Shoal's) version ranges: {narrower}"
    )
    assert set(NOT_SERVED_ON_PURPOSE) <= set(kafka), "an exception Kafka does not serve either"
    assert not set(NOT_SERVED_ON_PURPOSE) & set(shoal), "an exception Shoal serves after all"


def _features(bootstrap: str) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
    response = _api_versions(bootstrap)
    finalized = {f.name: int(f.max_version_level) for f in response.finalized_features}
    assert all(f.min_version_level == f.max_version_level for f in response.finalized_features)
    supported = {
        f.name: (int(f.min_version), int(f.max_version)) for f in response.supported_features
    }
    return finalized, supported


def test_finalized_features_are_kafkas_but_the_listed_ones(pair: Pair) -> None:
    (kafka, kafka_supported), (shoal, shoal_supported) = pair.run(_features)
    for name, level in kafka.items():
        expected = FEATURES_ON_PURPOSE[name][0] if name in FEATURES_ON_PURPOSE else level
        assert shoal.get(name, 0) == expected, (name, kafka, shoal)
    assert set(shoal) <= set(kafka), shoal
    assert set(FEATURES_ON_PURPOSE) <= set(kafka), "an exception Kafka does not finalize"
    assert set(shoal_supported) == set(kafka_supported)
    for name, (low, high) in shoal_supported.items():
        kafka_low, kafka_high = kafka_supported[name]
        assert kafka_low <= low <= high <= kafka_high, (name, kafka_supported, shoal_supported)
        assert low <= shoal.get(name, 0) <= high, (name, shoal, shoal_supported)


def _v3_supported_minimums(bootstrap: str) -> set[int]:
    request = ApiVersionsRequestV3(client_software_name="shoal-diff", client_software_version="1")
    return {int(f.min_version) for f in _api_versions(bootstrap, request).supported_features}


def test_v3_leaves_out_features_whose_minimum_is_zero(pair: Pair) -> None:
    kafka, shoal = pair.run(_v3_supported_minimums)
    assert 0 not in kafka and 0 not in shoal, (kafka, shoal)


def _kafka_features_describe(bootstrap: str) -> dict[str, tuple[str, str, str]]:
    done = subprocess.run(
        kafka_reference.java_command(
            "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", bootstrap, "describe"
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    described = {}
    for line in done.stdout.splitlines():
        fields = dict(part.split(": ", 1) for part in line.split("\t") if ": " in part)
        described[fields["Feature"]] = (
            fields["SupportedMinVersion"],
            fields["SupportedMaxVersion"],
            fields["FinalizedVersionLevel"],
        )
    return described


def test_kafka_features_describe(pair: Pair) -> None:
    """`kafka-features describe` lists the same features; finalized levels as Kafka's but
    the ones FEATURES_ON_PURPOSE lists."""
    kafka, shoal = pair.run(_kafka_features_describe)
    assert set(shoal) == set(kafka)
    for name, (_, _, level) in kafka.items():
        if name not in FEATURES_ON_PURPOSE:
            assert shoal[name][2] == level, (name, kafka[name], shoal[name])
        else:
            assert shoal[name][2] == str(FEATURES_ON_PURPOSE[name][0]), (name, shoal[name])
