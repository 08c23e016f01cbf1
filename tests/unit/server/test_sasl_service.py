"""The SASL shell pieces without sockets: per-listener settings from the config
(listener.name.<l>.<mech>.sasl.jaas.config), the frame bound before authentication,
and the SCRAM credential store's durability."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from shoal.config import BrokerConfig, ConfigError
from shoal.security.oauth import UnsecuredJwsValidator
from shoal.security.sasl_plain import plain_token
from shoal.security.scram import SCRAM_SHA_256, credential_from_salted, salted_password
from shoal.server.connection_info import ConnectionInfo
from shoal.server.metadata.metadata_log import METADATA_DIR
from shoal.server.metadata.migration import MIGRATED_SUFFIX, SCRAM_FILE
from shoal.server.metadata.scram_store import Deletion, ScramStore, Upsertion
from shoal.server.net.sasl import SaslService, frame_bytes_max
from tests.support.metadata import metadata_at, open_metadata

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-pw" user_bob="bob-pw";'
)


def config(tmp_path: Path, **extra: str) -> BrokerConfig:
    return BrokerConfig.load(
        overrides={
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_plaintext.connections.max.reauth.ms": "5000",
            **extra,
        }
    )


def connection(protocol: str = "SASL_PLAINTEXT") -> ConnectionInfo:
    return ConnectionInfo(1, "127.0.0.1", 5000, listener_name=protocol, security_protocol=protocol)


def test_listener_keys_are_parsed_and_looked_up_per_listener(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    assert cfg.listener_value("SASL_PLAINTEXT", "connections.max.reauth.ms") == 5000
    assert cfg.listener_value("OTHER", "connections.max.reauth.ms") == 0
    assert cfg.listener_value("SASL_PLAINTEXT", "plain.sasl.jaas.config") == JAAS
    with pytest.raises(ConfigError, match="unknown per-listener"):
        config(tmp_path, **{"listener.name.x.not.a.key": "1"})
    with pytest.raises(ConfigError, match=r"connections\.max\.reauth\.ms"):
        config(tmp_path, **{"listener.name.x.connections.max.reauth.ms": "-1"})
    with pytest.raises(ConfigError, match="unsupported SASL mechanisms"):
        config(tmp_path, **{"sasl.enabled.mechanisms": "GSSAPI"})


def test_settings_come_from_the_listener_config(tmp_path: Path) -> None:
    service = SaslService(ScramStore(metadata_at(tmp_path)))
    cfg = config(tmp_path)
    info = connection()
    session = service.session(cfg, info)
    assert session is not None and info.sasl is session
    assert session.settings.plain_users == {"alice": "alice-pw", "bob": "bob-pw"}
    assert session.settings.max_reauth_ms == 5000
    assert isinstance(session.settings.token_validator, UnsecuredJwsValidator)
    assert service.settings(cfg, "SASL_PLAINTEXT") is session.settings  # cached per config
    assert service.session(cfg, connection("PLAINTEXT")) is None
    session.handshake("PLAIN")
    assert session.authenticate(plain_token("bob", "bob-pw"), now_ms=0).complete


def test_frames_are_small_until_authenticated(tmp_path: Path) -> None:
    cfg = config(tmp_path, **{"sasl.server.max.receive.size": "1000"})
    info = connection()
    assert frame_bytes_max(cfg, info) == 1000
    assert frame_bytes_max(cfg, connection("PLAINTEXT")) == 104_857_600
    session = SaslService(ScramStore(metadata_at(tmp_path))).session(cfg, info)
    assert session is not None
    session.handshake("PLAIN")
    session.authenticate(plain_token("alice", "alice-pw"), now_ms=0)
    assert frame_bytes_max(cfg, info) == 104_857_600


def test_scram_store_survives_a_reload_and_keeps_no_password(tmp_path: Path) -> None:
    salt = b"0123456789abcdef"
    credential = credential_from_salted(
        SCRAM_SHA_256, salted_password(SCRAM_SHA_256, "pw-canary", salt, 4096), salt, 4096
    )
    store = ScramStore(metadata_at(tmp_path))
    asyncio.run(
        store.apply(upsertions=[Upsertion("alice", "SCRAM-SHA-256", credential)], deletions=[])
    )
    assert ScramStore(open_metadata(tmp_path)).credential("SCRAM-SHA-256", "alice") == credential
    stored = b"".join(p.read_bytes() for p in (tmp_path / METADATA_DIR).glob("*.log"))
    assert b"alice" in stored and b"pw-canary" not in stored
    asyncio.run(store.apply(upsertions=[], deletions=[Deletion("alice", "SCRAM-SHA-256")]))
    reloaded = ScramStore(open_metadata(tmp_path))
    assert reloaded.users() == [] and reloaded.credential("SCRAM-SHA-256", "alice") is None


def test_an_old_credentials_file_is_migrated_once(tmp_path: Path) -> None:
    salt = b"0123456789abcdef"
    credential = credential_from_salted(
        SCRAM_SHA_256, salted_password(SCRAM_SHA_256, "pw", salt, 4096), salt, 4096
    )

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    old = {
        "alice": {
            "SCRAM-SHA-256": {
                "salt": b64(credential.salt),
                "stored_key": b64(credential.stored_key),
                "server_key": b64(credential.server_key),
                "iterations": 4096,
            }
        }
    }
    (tmp_path / SCRAM_FILE).write_text(json.dumps({"version": 1, "users": old}))
    store = ScramStore(metadata_at(tmp_path))
    assert store.credential("SCRAM-SHA-256", "alice") == credential
    assert (tmp_path / (SCRAM_FILE + MIGRATED_SUFFIX)).exists()
    asyncio.run(store.apply(upsertions=[], deletions=[Deletion("alice", "SCRAM-SHA-256")]))
    assert ScramStore(metadata_at(tmp_path)).users() == [], "the old file is not read again"
