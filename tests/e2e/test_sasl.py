"""SASL over a SASL_PLAINTEXT listener, end to end with real clients.

One broker for the module: PLAIN users from the listener's JAAS config, SCRAM users
created with AlterUserScramCredentials (confluent-kafka's AdminClient salts client
side, as Kafka's tools do), OAUTHBEARER with librdkafka's unsecured JWT. Negatives: a
wrong password, an unknown user, a request before the handshake, a 100 MiB token; the
broker's log never shows a password.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import share_consumer

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer

ALICE_PLAIN = "alice-plain-secret-7f3a"
SCRAM_PASSWORDS = {"bob": "bob-scram-secret-91c2", "carol": "carol-scram-secret-44de"}
WAIT_S = 30.0
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="admin-secret" user_alice="{ALICE_PLAIN}";'
)


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("sasl") / "data",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "connection.failed.authentication.delay.ms=50",
    )


def plain(user: str = "alice", password: str = ALICE_PLAIN) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


def scram(mechanism: str, user: str) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": SCRAM_PASSWORDS[user],
    }


def oauth(principal: str) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": f"principal={principal}",
    }


def admin(broker: BrokerProcess, security: dict[str, Any]) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, **security})


def create(broker: BrokerProcess, security: dict[str, Any], topic: str) -> None:
    client = admin(broker, security)  # kept alive until the result is in
    client.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=WAIT_S)


def roundtrip(broker: BrokerProcess, security: dict[str, Any]) -> None:
    """Create a topic, produce three records and read them back, all authenticated."""
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    create(broker, security, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, **security})
    for i in range(3):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(WAIT_S) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"g-{topic}",
            "enable.auto.commit": False,
            **security,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(values) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"v0", b"v1", b"v2"]


def auth_error(broker: BrokerProcess, security: dict[str, Any]) -> str:
    """The error a client reports when its authentication is refused."""
    errors: list[str] = []
    config = {"bootstrap.servers": broker.bootstrap, **security}
    client = AdminClient({**config, "error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + WAIT_S
    while not any("Authentication" in e for e in errors) and time.monotonic() < deadline:
        client.poll(0.05)
    return " | ".join(errors)


def test_plain_roundtrip(sasl_broker: BrokerProcess) -> None:
    roundtrip(sasl_broker, plain())
    assert sasl_broker.wait_for_log(r"SASL authenticated User:alice \(mechanism PLAIN")


@pytest.mark.parametrize(
    ("mechanism", "user"),
    [(ScramMechanism.SCRAM_SHA_256, "bob"), (ScramMechanism.SCRAM_SHA_512, "carol")],
)
def test_scram_users_created_then_roundtrip(
    sasl_broker: BrokerProcess, mechanism: ScramMechanism, user: str
) -> None:
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(mechanism, 8192), SCRAM_PASSWORDS[user].encode()
    )
    client = admin(sasl_broker, plain())
    client.alter_user_scram_credentials([upsert])[user].result(timeout=WAIT_S)
    described = client.describe_user_scram_credentials([user])[user].result(timeout=WAIT_S)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(mechanism, 8192)]
    name = "SCRAM-SHA-256" if mechanism == ScramMechanism.SCRAM_SHA_256 else "SCRAM-SHA-512"
    roundtrip(sasl_broker, scram(name, user))


def test_oauthbearer_unsecured_jwt(sasl_broker: BrokerProcess) -> None:
    roundtrip(sasl_broker, oauth("dave"))
    assert sasl_broker.wait_for_log(r"SASL authenticated User:dave \(mechanism OAUTHBEARER")


def test_share_consumer_over_sasl(sasl_broker: BrokerProcess) -> None:
    security = plain()
    topic = f"sasl-share-{uuid.uuid4().hex[:8]}"
    create(sasl_broker, security, topic)
    consumer = share_consumer(
        sasl_broker.bootstrap,
        f"sg-{topic}",
        [topic],
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        sasl_password=ALICE_PLAIN,
    )
    producer = Producer({"bootstrap.servers": sasl_broker.bootstrap, **security})
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while not got and time.monotonic() < deadline:
            producer.produce(topic, b"queued")
            producer.flush(WAIT_S)
            got += [m.value() for m in consumer.poll(0.5) if m.error() is None]
    finally:
        consumer.close()
    assert b"queued" in got


def test_kafka_python_plain_and_scram(sasl_broker: BrokerProcess) -> None:
    topic = f"sasl-kp-{uuid.uuid4().hex[:8]}"
    create(sasl_broker, plain(), topic)
    producer = KafkaProducer(
        bootstrap_servers=sasl_broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=ALICE_PLAIN,
    )
    producer.send(topic, b"from-kafka-python").get(timeout=WAIT_S)
    producer.close()
    client = admin(sasl_broker, plain())
    upsert = UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"erin-secret-x"
    )
    client.alter_user_scram_credentials([upsert])["erin"].result(timeout=WAIT_S)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=sasl_broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="erin",
        sasl_plain_password="erin-secret-x",
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(WAIT_S * 1000),
    )
    value = next(iter(consumer)).value
    consumer.close()
    assert value == b"from-kafka-python"


def test_wrong_password_and_unknown_user_are_refused(sasl_broker: BrokerProcess) -> None:
    assert "Invalid username or password" in auth_error(sasl_broker, plain(password="nope-123"))
    assert "Invalid username or password" in auth_error(sasl_broker, plain(user="mallory"))
    unknown = {**scram("SCRAM-SHA-512", "bob"), "sasl.username": "nobody"}
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in auth_error(
        sasl_broker, unknown
    )
    assert sasl_broker.wait_for_log(r"SASL authentication failed \(mechanism PLAIN, user 'mallory'")
    roundtrip(sasl_broker, plain())  # the broker keeps serving everyone else


def _frame(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation, 4) + b"test"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def test_request_before_handshake_closes_the_connection(sasl_broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.port)) as sock:
        sock.sendall(_frame(3, 1, 1, struct.pack(">i", 0)))  # Metadata v1, all topics
        assert _closed(sock)
    assert sasl_broker.wait_for_log("Unexpected Kafka request of type metadata during SASL")
    roundtrip(sasl_broker, plain())  # the broker keeps serving everyone else


def test_huge_token_is_refused_at_the_frame(sasl_broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.port)) as sock:
        sock.sendall(_frame(17, 1, 1, struct.pack(">h", 5) + b"PLAIN"))
        size = struct.unpack(">i", sock.recv(4))[0]
        sock.recv(size)
        # a SaslAuthenticate v0 frame announcing a 100 MiB token: refused by its size
        sock.sendall(struct.pack(">i", 100 * 1024 * 1024 + 20) + struct.pack(">hhi", 36, 0, 2))
        assert _closed(sock)
    assert sasl_broker.wait_for_log(r"size 104857620 outside \[8, 524288\]")
    roundtrip(sasl_broker, plain())


def test_no_password_in_the_log(sasl_broker: BrokerProcess) -> None:
    auth_error(sasl_broker, plain(password="leaked-password-canary"))
    text = sasl_broker.log_text()
    for secret in (ALICE_PLAIN, "leaked-password-canary", *SCRAM_PASSWORDS.values()):
        assert secret not in text
