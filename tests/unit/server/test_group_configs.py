"""The broker's share-group config store: persistence (the metadata log; an old
group-configs.json migrated), listeners, nothing changed on a refusal; and the
DescribeConfigs entries of a group (values, sources, synonyms)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from shoal.config import BrokerConfig, ConfigType
from shoal.group.configs import KAFKA_42_GROUP_KEYS, GroupConfigError, GroupConfigs
from shoal.metadata.records import GROUP_RESOURCE
from shoal.server.metadata.config_resources import ConfigSource, group_entries
from shoal.server.metadata.dynamic_config import DynamicBrokerConfig, DynamicLayer
from shoal.server.metadata.group_config_store import GroupConfigStore
from shoal.server.metadata.metadata_log import METADATA_DIR
from shoal.server.metadata.migration import GROUP_CONFIGS_FILE, MIGRATED_SUFFIX
from tests.support.metadata import metadata_at

LOCK = "share.record.lock.duration.ms"
RESET = "share.auto.offset.reset"


class Box:
    """A broker config the test can swap, as `Broker.reconfigure` does."""

    def __init__(self, **raw: object) -> None:
        self.config = BrokerConfig.from_raw(raw)


def make_store(tmp_path: Path, box: Box | None = None) -> tuple[GroupConfigStore, list[str]]:
    holder = box or Box()
    store = GroupConfigStore(metadata=metadata_at(tmp_path), broker_config=lambda: holder.config)
    calls: list[str] = []
    store.listeners.append(calls.append)
    return store, calls


def test_alter_persists_adopts_and_notifies(tmp_path: Path) -> None:
    store, calls = make_store(tmp_path)
    typed = asyncio.run(store.alter("g", {RESET: "earliest", LOCK: "20000"}))
    assert typed == {RESET: "earliest", LOCK: 20_000}
    assert store.overrides("g") == typed
    assert store.effective("g")[LOCK] == 20_000
    assert calls == ["g"]
    image = store._metadata.image
    assert image.configs == {(GROUP_RESOURCE, "g"): {RESET: "earliest", LOCK: "20000"}}
    assert [p.name for p in tmp_path.iterdir()] == [METADATA_DIR]  # no other file
    reloaded, _ = make_store(tmp_path)
    assert reloaded.configs == store.configs


def test_an_unchanged_set_is_neither_written_nor_announced(tmp_path: Path) -> None:
    store, calls = make_store(tmp_path)
    asyncio.run(store.alter("g", {RESET: "earliest"}))
    end = store._metadata.partition.log_end_offset
    asyncio.run(store.alter("g", {RESET: "earliest"}))
    assert calls == ["g"]
    assert store._metadata.partition.log_end_offset == end


def test_a_refused_set_changes_nothing(tmp_path: Path) -> None:
    store, calls = make_store(tmp_path)
    asyncio.run(store.alter("g", {RESET: "earliest"}))
    before = store._metadata.partition.log_end_offset
    with pytest.raises(GroupConfigError, match=LOCK):
        asyncio.run(store.alter("g", {RESET: "latest", LOCK: "1000"}))
    with pytest.raises(GroupConfigError, match="1h"):
        asyncio.run(store.alter("g", {RESET: "by_duration:1h"}))
    assert store.overrides("g") == {RESET: "earliest"}
    assert store._metadata.partition.log_end_offset == before
    assert calls == ["g"]


def test_validate_only_changes_nothing(tmp_path: Path) -> None:
    store, calls = make_store(tmp_path)
    assert asyncio.run(store.alter("g", {RESET: "earliest"}, validate_only=True)) == {
        RESET: "earliest"
    }
    with pytest.raises(GroupConfigError):
        asyncio.run(store.alter("g", {LOCK: "5"}, validate_only=True))
    assert store.overrides("g") == {}
    assert calls == []
    assert store._metadata.partition.log_end_offset == 0


def test_an_empty_set_restores_every_default(tmp_path: Path) -> None:
    store, calls = make_store(tmp_path)
    asyncio.run(store.alter("g", {LOCK: "20000"}))
    asyncio.run(store.alter("g", {}))
    assert store.overrides("g") == {}
    assert store.effective("g")[LOCK] == 30_000
    assert calls == ["g", "g"]
    reloaded, _ = make_store(tmp_path)
    assert len(reloaded.configs) == 0


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    calls: list[str] = []
    metadata = metadata_at(tmp_path)
    store = GroupConfigStore(metadata=metadata, broker_config=lambda: BrokerConfig.from_raw({}))
    store.listeners.append(calls.append)
    metadata.partition.close()  # the log refuses every append now
    with pytest.raises(OSError, match="not written"):
        asyncio.run(store.alter("g", {RESET: "earliest"}))
    assert store.overrides("g") == {}
    assert calls == []


def test_a_failing_listener_does_not_stop_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, calls = make_store(tmp_path)

    def broken(group_id: str) -> None:
        raise RuntimeError(f"cannot apply {group_id}")

    store.listeners.insert(0, broken)
    with caplog.at_level(logging.ERROR):
        asyncio.run(store.alter("g", {RESET: "earliest"}))
    assert calls == ["g"]
    assert store.overrides("g") == {RESET: "earliest"}
    assert "cannot apply g" in caplog.text


def test_effective_values_follow_the_current_broker_config(tmp_path: Path) -> None:
    box = Box()
    store, _ = make_store(tmp_path, box)
    asyncio.run(store.alter("g", {LOCK: "60000"}))
    assert store.effective("g")[LOCK] == 60_000
    box.config = BrokerConfig.from_raw({"group.share.max.record.lock.duration.ms": 40_000})
    assert store.effective("g")[LOCK] == 40_000
    assert store.overrides("g") == {LOCK: 60_000}


def test_load_skips_entries_that_no_longer_parse(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    groups = {"g": {RESET: "earliest", "retired.key": "1", LOCK: "5"}, "h": "junk", "": {}}
    (tmp_path / GROUP_CONFIGS_FILE).write_text(json.dumps({"version": 1, "groups": groups}))
    with caplog.at_level(logging.WARNING):
        store, _ = make_store(tmp_path)
    assert store.configs == GroupConfigs({"g": {RESET: "earliest"}})
    assert (tmp_path / (GROUP_CONFIGS_FILE + MIGRATED_SUFFIX)).exists()
    assert "retired.key" in caplog.text
    assert LOCK in caplog.text


def test_load_keeps_values_outside_todays_broker_bounds(tmp_path: Path) -> None:
    """Broker ranges are enforced when a value is set and by clamping later, never by
    dropping a stored value (docs/reference/configs.md, Group configs)."""
    stored = {"version": 1, "groups": {"g": {LOCK: "1000"}}}
    (tmp_path / GROUP_CONFIGS_FILE).write_text(json.dumps(stored))
    store, _ = make_store(tmp_path)
    assert store.overrides("g") == {LOCK: 1_000}
    assert store.effective("g")[LOCK] == 15_000


@pytest.mark.parametrize("text", ["{", "[]", '{"version": 2, "groups": {}}', '{"groups": []}'])
def test_an_unreadable_file_stops_start_up(tmp_path: Path, text: str) -> None:
    (tmp_path / GROUP_CONFIGS_FILE).write_text(text)
    with pytest.raises(OSError, match=GROUP_CONFIGS_FILE):
        make_store(tmp_path)


# ---- DescribeConfigs entries of a group


def dynamic(tmp_path: Path, **static: str) -> DynamicBrokerConfig:
    config = BrokerConfig.from_raw({"log.dirs": str(tmp_path), **static})
    return DynamicBrokerConfig.load(config, metadata_at(tmp_path).image)


def test_entries_of_a_group_that_sets_nothing(tmp_path: Path) -> None:
    entries = {e.name: e for e in group_entries({}, dynamic(tmp_path))}
    assert set(entries) == set(KAFKA_42_GROUP_KEYS)  # Shoal's extensions only once set
    assert all(e.source is ConfigSource.DEFAULT and not e.read_only for e in entries.values())
    lock = entries[LOCK]
    assert (lock.value, lock.config_type) == ("30000", ConfigType.INT)
    # as Kafka shows a group: one synonym, the key itself at its default
    assert [(s.name, s.value, s.source) for s in lock.synonyms] == [
        (LOCK, "30000", ConfigSource.DEFAULT)
    ]
    reset = entries[RESET]
    assert [(s.name, s.value, s.source) for s in reset.synonyms] == [
        (RESET, "latest", ConfigSource.DEFAULT)
    ]
    assert entries["share.isolation.level"].config_type == ConfigType.STRING


def test_an_extension_key_is_listed_once_the_group_sets_it(tmp_path: Path) -> None:
    renew = "share.renew.acknowledge.enable"
    entries = {e.name: e for e in group_entries({renew: False}, dynamic(tmp_path))}
    assert set(entries) == set(KAFKA_42_GROUP_KEYS) | {renew}
    assert (entries[renew].value, entries[renew].source) == ("false", ConfigSource.GROUP)
    assert entries[renew].config_type == ConfigType.BOOLEAN


def test_entries_of_a_group_that_sets_keys(tmp_path: Path) -> None:
    overrides = {LOCK: 20_000, RESET: "earliest"}
    entries = {e.name: e for e in group_entries(overrides, dynamic(tmp_path))}
    lock = entries[LOCK]
    assert (lock.value, lock.source) == ("20000", ConfigSource.GROUP)
    assert [(s.name, s.source) for s in lock.synonyms] == [(LOCK, ConfigSource.GROUP)]
    assert (entries[RESET].value, entries[RESET].source) == ("earliest", ConfigSource.GROUP)
    assert entries["share.session.timeout.ms"].source is ConfigSource.DEFAULT


def test_entries_show_broker_values_as_defaults_and_clamped_values(tmp_path: Path) -> None:
    config = dynamic(tmp_path, **{"group.share.record.lock.duration.ms": "20000"})
    config = config.with_layer(
        DynamicLayer.BROKER, {"group.share.max.record.lock.duration.ms": "40000"}
    )
    plain = {e.name: e for e in group_entries({}, config)}
    # Kafka shows a group key the group does not set as DEFAULT_CONFIG, whatever
    # broker layer its value comes from
    assert (plain[LOCK].value, plain[LOCK].source) == ("20000", ConfigSource.DEFAULT)
    assert [(s.name, s.value) for s in plain[LOCK].synonyms] == [(LOCK, "20000")]
    clamped = {e.name: e for e in group_entries({LOCK: 60_000}, config)}
    assert (clamped[LOCK].value, clamped[LOCK].source) == ("40000", ConfigSource.GROUP)
    assert clamped[LOCK].synonyms[0].value == "60000"  # the override as set


def test_an_oversized_old_file_stops_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / GROUP_CONFIGS_FILE).write_text(json.dumps({"version": 1, "groups": {}}))
    size = (tmp_path / GROUP_CONFIGS_FILE).stat().st_size
    monkeypatch.setattr("shoal.limits.METADATA_FILE_BYTES_MAX", size - 1)
    with pytest.raises(OSError, match="larger than"):
        make_store(tmp_path)
    monkeypatch.setattr("shoal.limits.METADATA_FILE_BYTES_MAX", size)
    store, _ = make_store(tmp_path)
    assert len(store.configs) == 0
