"""Version choice: the highest the builder, kio and the broker allow."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.calls import Call
from shoal.client.errors import KafkaError
from shoal.client.versions import api_label, choose_version


def test_highest_common_version() -> None:
    call = requests.metadata(["t"])  # builder v1-v13
    assert choose_version(call, {3: (0, 12)}) == 12
    assert choose_version(call, {3: (0, 99)}) == 13
    assert choose_version(call, {3: (5, 7)}) == 7


def test_versions_kio_lacks_are_skipped() -> None:
    # kio has ListOffsets from v1 only: a builder claiming v0 never gets it
    call = Call(2, 0, 11, lambda v: v)
    with pytest.raises(KafkaError):
        choose_version(call, {2: (0, 0)})


def test_unsupported_names_the_api_and_what_the_broker_serves() -> None:
    with pytest.raises(KafkaError) as info:
        choose_version(
            requests.list_groups(types=["share"]), {16: (0, 4)}, where="the broker at h:1"
        )
    assert info.value.code == ErrorCode.unsupported_version
    text = str(info.value)
    assert "ListGroups (API 16)" in text and "serves v0-v4" in text and "the broker at h:1" in text
    with pytest.raises(KafkaError, match="does not serve it"):
        choose_version(requests.share_group_describe(["g"]), {})


def test_exact_call_pins_its_version() -> None:
    request = requests.metadata(None).build(4)
    call = Call.exact(request)
    assert choose_version(call, {3: (0, 13)}) == 4
    assert call.build(4) is request
    with pytest.raises(KafkaError):
        choose_version(call, {3: (5, 13)})


def test_api_label_uses_kafkas_spelling() -> None:
    assert api_label(90) == "DescribeShareGroupOffsets (API 90)"
    assert api_label(18) == "ApiVersions (API 18)"
