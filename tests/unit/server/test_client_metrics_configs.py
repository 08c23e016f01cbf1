"""Client metrics subscriptions (server/metadata/client_metrics_configs.py): Kafka's checks and
codes, canonical values, and the store on the metadata log (all or nothing, removal when
empty; an old file migrated, refused when unreadable)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.server.metadata.client_metrics_configs import ClientMetricsConfigStore, validate
from shoal.server.metadata.migration import CLIENT_METRICS_FILE as FILE
from shoal.server.refused import Refused
from tests.support.metadata import metadata_at


@pytest.mark.parametrize(
    ("name", "proposed", "code"),
    [
        ("", {"interval.ms": "1000"}, ErrorCode.invalid_request),
        ("s", {"no.such": "1"}, ErrorCode.invalid_request),
        ("s", {"interval.ms": "99"}, ErrorCode.invalid_request),
        ("s", {"interval.ms": "3600001"}, ErrorCode.invalid_request),
        ("s", {"interval.ms": "soon"}, ErrorCode.invalid_config),
        ("s", {"match": "client_id"}, ErrorCode.invalid_config),
        ("s", {"match": "hostname=a"}, ErrorCode.invalid_config),
        ("s", {"match": "client_id=("}, ErrorCode.invalid_config),
    ],
)
def test_refusals(name: str, proposed: dict[str, str], code: ErrorCode) -> None:
    with pytest.raises(Refused) as refused:
        validate(name, proposed)
    assert refused.value.code is code


def test_values_are_kept_canonical() -> None:
    given = {"interval.ms": " 100 ", "match": "client_id=a.*, client_software_name=b"}
    assert validate("s", given) == {
        "interval.ms": "100",
        "match": "client_id=a.*,client_software_name=b",
    }


def test_the_store_persists_and_forgets_empty_resources(tmp_path: Path) -> None:
    store = ClientMetricsConfigStore(metadata_at(tmp_path))
    asyncio.run(store.alter("s", {"metrics": "org."}, validate_only=False))
    asyncio.run(store.alter("t", {"interval.ms": "500"}, validate_only=True))
    assert store.names() == ["s"]
    reloaded = ClientMetricsConfigStore(metadata_at(tmp_path))
    assert dict(reloaded.settings("s")) == {"metrics": "org."}
    asyncio.run(reloaded.alter("s", {}, validate_only=False))
    assert ClientMetricsConfigStore(metadata_at(tmp_path)).names() == []
    (tmp_path / FILE).write_text("not json")
    with pytest.raises(OSError, match="unreadable"):
        ClientMetricsConfigStore(metadata_at(tmp_path))


def test_an_old_file_is_migrated_and_invalid_resources_skipped(tmp_path: Path) -> None:
    (tmp_path / FILE).write_text(
        '{"version": 1, "resources": {"s": {"metrics": "org."}, "bad": {"interval.ms": "5"}}}'
    )
    store = ClientMetricsConfigStore(metadata_at(tmp_path))
    assert store.names() == ["s"] and dict(store.settings("s")) == {"metrics": "org."}
    assert not (tmp_path / FILE).exists()
    asyncio.run(store.alter("s", {}, validate_only=False))
    assert ClientMetricsConfigStore(metadata_at(tmp_path)).names() == []
