"""ApiVersions' answer is built once per (version, share.version, API table) and kept
(server/handlers/api_versions.py); a kept answer equals a freshly built one, and a
change of `share.version` or of the table gets a new one."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.config import BrokerConfig
from shoal.protocol import codec
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.server.handler_services import ApiRange, Services
from shoal.server.handlers import api_versions
from shoal.server.metadata.dynamic_config import DynamicBrokerConfig, LiveBrokerConfig
from tests.support.metadata import metadata_at


def _answer(services: Services, version: int) -> Any:
    ctx = RequestContext(services, ConnectionInfo(1, "127.0.0.1", 1), 18, version, 1, "t")
    return asyncio.run(api_versions.handle(ctx, None))


def _encoded(response: Any, version: int) -> bytes:
    return bytes(codec.encode_response(18, version, 7, response))


def test_the_answer_is_kept_and_encodes_as_a_fresh_one(broker: Broker) -> None:
    for version in range(5):
        kept = _answer(broker.services, version)
        assert _answer(broker.services, version) is kept
        fresh = api_versions.api_versions_response(broker.services, version, error=ErrorCode.none)
        assert fresh == kept
        assert _encoded(kept, version) == _encoded(fresh, version)


def test_share_version_and_the_api_table_are_part_of_the_key(
    broker: Broker, tmp_path: Path
) -> None:
    with_share = _answer(broker.services, 4)
    assert "share.version" in {f.name for f in with_share.finalized_features}
    raw = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "share.version": "0",
    }
    live = LiveBrokerConfig(
        DynamicBrokerConfig.load(BrokerConfig.from_raw(raw)),
        metadata=metadata_at(tmp_path / "live"),
    )
    without_share = _answer(dataclasses.replace(broker.services, config=live), 4)
    finalized = {f.name for f in without_share.finalized_features}
    assert "share.version" not in finalized and "metadata.version" in finalized
    assert _answer(broker.services, 4) is with_share  # each level kept apart
    fewer = broker.services.api_versions[:1]
    assert fewer == (ApiRange(fewer[0].api_key, fewer[0].min_version, fewer[0].max_version),)
    one_api = _answer(dataclasses.replace(broker.services, api_versions=fewer), 4)
    assert len(one_api.api_keys) == 1
    assert len(_answer(broker.services, 4).api_keys) == len(broker.services.api_versions)
