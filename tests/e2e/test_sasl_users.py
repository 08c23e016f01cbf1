"""SCRAM users managed with `shoal configs`, kept across a restart, then used over
SASL_PLAINTEXT by librdkafka and by Shoal's own client; and KIP-368 re-authentication
(librdkafka re-authenticates by itself; a client that does not is closed)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from shoal.client import Client, ClientSettings
from shoal.client.errors import ClientError
from shoal.client.requests import metadata
from shoal.client.security import ClientSecurity
from shoal.server.metadata.metadata_log import METADATA_DIR
from tests.support.broker import Brokers
from tests.support.cli import shoal
from tests.support.wire import open_connection

SASL = (
    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
)
PASSWORD = "alice-scram-secret-5d1e"


def scram_client(bootstrap: str, password: str = PASSWORD) -> Client:
    security = ClientSecurity(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="alice",
        sasl_password=password,
    )
    return Client(bootstrap, settings=ClientSettings(security=security, api_timeout_ms=5_000))


def test_configs_users_survive_a_restart_and_log_in(brokers: Brokers) -> None:
    broker = brokers.start()
    base = ("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "users")
    # one mechanism per request, as with Kafka's tool (two at once: DUPLICATE_RESOURCE)
    for credential in (
        f"SCRAM-SHA-256=[iterations=8192,password={PASSWORD}]",
        "SCRAM-SHA-512=[password=x-secret]",
    ):
        added = shoal(*base, "--alter", "--entity-name", "alice", "--add-config", credential)
        assert added.returncode == 0, added.stderr
        assert added.stdout.strip() == "Completed updating config for user alice."
    described = shoal(*base, "--describe")
    assert described.stdout.strip() == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    deleted = shoal(*base, "--alter", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr
    again = shoal(*base, "--alter", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-512")
    assert again.returncode == 1 and "ResourceNotFoundException" in again.stderr
    weak = shoal(
        *base,
        "--alter",
        "--entity-name",
        "bob",
        "--add-config",
        "SCRAM-SHA-256=[iterations=100,password=p]",
    )
    assert weak.returncode == 1  # refused by the tool, as Kafka's refuses it
    assert "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256" in (
        weak.stderr
    )
    stored = b"".join(p.read_bytes() for p in (broker.data_dir / METADATA_DIR).glob("*.log"))
    assert b"alice" in stored
    assert PASSWORD.encode() not in stored and b"x-secret" not in stored

    broker.stop()
    broker.overrides = list(SASL)
    broker.start()
    assert broker.wait_for_log("loaded SCRAM credentials of 1 users")
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": PASSWORD,
        }
    )
    assert producer.list_topics(timeout=30).brokers
    with scram_client(broker.bootstrap) as client:
        assert client.call(metadata(None)).brokers
    with pytest.raises(ClientError), scram_client(broker.bootstrap, "wrong") as client:
        client.call(metadata(None))
    assert PASSWORD not in broker.log_text()


def test_reauthentication(brokers: Brokers, tmp_path: Path) -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'
    broker = brokers.start(
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "connections.max.reauth.ms=1500",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}",
    )
    security = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-pw",
    }
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, **security})
    deadline = time.monotonic() + 4.5  # three session lifetimes
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic, b"x")
        assert producer.flush(30) == 0
        sent += 1
        time.sleep(0.1)
    assert sent > 10
    assert len(broker.log_text().split("SASL authenticated User:alice")) > 3  # re-authenticated

    async def raw_client_is_closed_after_its_session() -> bool:
        settings = ClientSettings(
            security=ClientSecurity(
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_username="alice",
                sasl_password="alice-pw",
            )
        )
        conn = await open_connection(broker.bootstrap)
        await conn.handshake(timeout_s=10, settings=settings)
        await conn.call(metadata(None), timeout_s=10)  # authenticated: served
        await asyncio.sleep(2.0)
        with pytest.raises((ConnectionError, ClientError, asyncio.IncompleteReadError)):
            await conn.call(metadata(None), timeout_s=10)
        await conn.close()
        return True

    assert asyncio.run(raw_client_is_closed_after_its_session())
    assert broker.wait_for_log("the SASL session expired and the client did not re-authenticate")
    producer.produce(topic, b"after")  # the broker keeps serving everyone else
    assert producer.flush(30) == 0
    assert "alice-pw" not in broker.log_text()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signed_token(key: rsa.RSAPrivateKey, *, audience: str, lifetime_s: float = 300) -> str:
    header = _b64(json.dumps({"alg": "RS256", "kid": "k1"}).encode())
    claims = {"sub": "svc-orders", "iss": "https://idp.test", "aud": audience}
    claims["exp"] = time.time() + lifetime_s  # type: ignore[assignment]
    body = _b64(json.dumps(claims).encode())
    signature = key.sign(f"{header}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{body}.{_b64(signature)}"


def test_oauthbearer_with_a_jwks_file(brokers: Brokers, tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = key.public_key().public_numbers()
    jwk = {
        "kty": "RSA",
        "kid": "k1",
        "n": _b64(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
        "e": _b64(numbers.e.to_bytes(3, "big")),
    }
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk]}))
    broker = brokers.start(
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=OAUTHBEARER",
        f"sasl.oauthbearer.jwks.endpoint.url=file://{jwks}",
        "sasl.oauthbearer.expected.audience=shoal",
        "sasl.oauthbearer.expected.issuer=https://idp.test",
    )

    def client(audience: str, errors: list[str]) -> Producer:
        def token(_config: str) -> tuple[str, float]:
            return _signed_token(key, audience=audience), time.time() + 300

        return Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "oauth_cb": token,
                "error_cb": lambda e: errors.append(str(e)),
            }
        )

    good = client("shoal", [])
    good.poll(0.5)
    assert good.list_topics(timeout=30).brokers
    assert broker.wait_for_log(r"SASL authenticated User:svc-orders \(mechanism OAUTHBEARER")
    errors: list[str] = []
    wrong = client("another-service", errors)
    deadline = time.monotonic() + 30
    while not any("invalid_token" in e for e in errors) and time.monotonic() < deadline:
        wrong.poll(0.1)
    assert any("invalid_token" in e for e in errors), errors
    assert broker.wait_for_log("token audience")
