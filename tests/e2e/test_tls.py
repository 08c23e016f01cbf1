"""Listeners and TLS end to end: one broker with three listeners (PLAINTEXT, SSL, and
MTLS = SSL with `ssl.client.auth=required` set per listener), real clients.

confluent-kafka (Producer, Consumer, ShareConsumer, AdminClient) and kafka-python work
over SSL; Metadata answers with the endpoint of the listener asked; mutual TLS maps the
client certificate's DN to the principal (the broker logs it per connection); plaintext
bytes, a missing or untrusted client certificate close that connection with a logged
reason while the PLAINTEXT listener keeps serving; a replaced server certificate is
what the next connection sees.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition as CkPartition
from confluent_kafka.admin import AdminClient
from cryptography import x509

from shoal.client import AsyncClient, Client, ClientSettings
from shoal.client.security import ClientSecurity
from tests.support import share_consumers as sc
from tests.support.broker import BrokerProcess, Brokers, running, wait_until
from tests.support.certs import Pki, make_pki, reissue_server
from tests.support.cli import shoal
from tests.support.clients import consumer, create_topic, flush_all, producer
from tests.support.topics import topic_name

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

WAIT_S = 30.0
KEY_PASSWORD = "unused-but-secret"


class TlsBroker:
    def __init__(self, process: BrokerProcess, pki: Pki) -> None:
        self.process = process
        self.pki = pki
        self.ports = process.listener_ports()

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def ssl_config(self, identity: str | None = None) -> dict[str, str]:
        """librdkafka's settings for the SSL listeners, with a client certificate."""
        config = {"security.protocol": "SSL", "ssl.ca.location": str(self.pki.ca)}
        if identity is not None:
            who = getattr(self.pki, identity)
            config["ssl.certificate.location"] = str(who.cert)
            config["ssl.key.location"] = str(who.key)
        return config


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    root = tmp_path_factory.mktemp("tls")
    pki = make_pki(root / "pki")
    overrides = (
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        f"ssl.keystore.location={pki.server.keystore}",
        f"ssl.truststore.location={pki.ca}",
        "listener.name.mtls.ssl.client.auth=required",
        "ssl.principal.mapping.rules=RULE:^CN=(.*?),OU=clients,.*$/$1/,DEFAULT",
        "shoal.ssl.reload.check.interval.ms=200",
        "shoal.ssl.handshake.timeout.ms=3000",
        f"ssl.key.password={KEY_PASSWORD}",  # the keys are not encrypted; unused, kept secret
    )
    for process in running(root / "data", *overrides):
        yield TlsBroker(process, pki)


def _kw(config: dict[str, str]) -> dict[str, str]:
    """Settings as the support helpers' keyword arguments (dots as underscores)."""
    return {k.replace(".", "_"): v for k, v in config.items()}


def test_confluent_clients_over_ssl(tls: TlsBroker) -> None:
    bootstrap = tls.bootstrap("SSL")
    ssl_kw = _kw(tls.ssl_config())
    admin = AdminClient({"bootstrap.servers": bootstrap, **tls.ssl_config()})
    metadata = admin.list_topics(timeout=WAIT_S)
    (broker,) = metadata.brokers.values()
    assert broker.port == tls.ports["SSL"], "Metadata must answer with the SSL endpoint"
    plain = AdminClient({"bootstrap.servers": tls.bootstrap("PLAINTEXT")})
    (plain_broker,) = plain.list_topics(timeout=WAIT_S).brokers.values()
    assert plain_broker.port == tls.ports["PLAINTEXT"]

    topic = topic_name("tls")
    create_topic(tls.bootstrap("PLAINTEXT"), topic, partitions=1)
    p = producer(bootstrap, **ssl_kw)
    for i in range(20):
        p.produce(topic, value=f"v{i}".encode())
    flush_all(p)
    c = consumer(bootstrap, **ssl_kw)
    c.assign([CkPartition(topic, 0, 0)])
    got: list[bytes] = []

    def read_all() -> bool:
        got.extend(m.value() for m in c.consume(20, 0.2) if m.error() is None)
        return len(got) >= 20

    wait_until(read_all, timeout_s=WAIT_S)
    c.close()
    assert got == [f"v{i}".encode() for i in range(20)]

    group = sc.share_group(tls.bootstrap("PLAINTEXT"), topic_name("tls-share"))
    share = sc.share_consumer(bootstrap, group, [topic], **ssl_kw)
    try:
        seen: set[bytes] = set()
        sc.poll_until(
            [share],
            lambda: len(seen) >= 20,
            on_message=lambda _i, m: seen.add(m.value()),
            what="20 records over SSL",
        )
    finally:
        share.close()
    assert seen == set(got)


def test_kafka_python_over_ssl(tls: TlsBroker) -> None:
    topic = topic_name("tls-kp")
    create_topic(tls.bootstrap("PLAINTEXT"), topic, partitions=1)
    common = {
        "bootstrap_servers": tls.bootstrap("MTLS"),
        "security_protocol": "SSL",
        "ssl_cafile": str(tls.pki.ca),
        "ssl_certfile": str(tls.pki.alice.cert),
        "ssl_keyfile": str(tls.pki.alice.key),
    }
    p = KafkaProducer(acks="all", request_timeout_ms=30_000, **common)
    try:
        for i in range(5):
            p.send(topic, value=f"k{i}".encode()).get(timeout=30)
    finally:
        p.close(timeout=10)
    c = KafkaConsumer(group_id=None, enable_auto_commit=False, **common)
    try:
        c.assign([TopicPartition(topic, 0)])
        c.seek_to_beginning()
        values: list[bytes] = []

        def read_all() -> bool:
            values.extend(r.value for rs in c.poll(200).values() for r in rs)
            return len(values) >= 5

        wait_until(read_all, timeout_s=WAIT_S)
    finally:
        c.close()
    assert values == [f"k{i}".encode() for i in range(5)]


def test_mutual_tls_maps_the_principal(tls: TlsBroker) -> None:
    for identity, principal in (("alice", "User:alice"), ("bob", "User:CN=bob,OU=ops,O=shoal")):
        admin = AdminClient(
            {"bootstrap.servers": tls.bootstrap("MTLS"), **tls.ssl_config(identity)}
        )
        admin.list_topics(timeout=WAIT_S)
        assert tls.process.wait_for_log(
            rf"listener MTLS: TLS connection from \S+ as {re.escape(principal)} ", timeout_s=10
        ), principal


def _still_serving(tls: TlsBroker) -> None:
    plain = AdminClient({"bootstrap.servers": tls.bootstrap("PLAINTEXT")})
    assert plain.list_topics(timeout=WAIT_S).brokers


def _closed_by_broker(sock: socket.socket) -> bool:
    sock.settimeout(WAIT_S)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_plaintext_bytes_to_the_tls_listener_close_it(tls: TlsBroker) -> None:
    with socket.create_connection(("127.0.0.1", tls.ports["SSL"])) as sock:
        # an ApiVersions v0 request frame, sent in the clear
        sock.sendall(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x04test")
        assert _closed_by_broker(sock)
    assert tls.process.wait_for_log(r"listener SSL: TLS handshake with \S+ failed")
    _still_serving(tls)


@pytest.mark.parametrize("identity", [None, "stranger"])
def test_required_client_auth_refuses_missing_or_untrusted_certs(
    tls: TlsBroker, identity: str | None
) -> None:
    before = tls.process.log_text().count("listener MTLS: TLS handshake with")
    context = ssl.create_default_context(cafile=str(tls.pki.ca))
    if identity is not None:
        who = getattr(tls.pki, identity)
        context.load_cert_chain(who.cert, who.key)
    with socket.create_connection(("127.0.0.1", tls.ports["MTLS"])) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
                # TLS 1.3: the server's verdict on the client certificate comes after
                # the client's handshake ends, as an alert on the first read.
                sock.sendall(b"\x00\x00\x00\x00")
                assert _closed_by_broker(sock)
        except (ssl.SSLError, ConnectionResetError):
            pass
    assert wait_until(
        lambda: tls.process.log_text().count("listener MTLS: TLS handshake with") > before,
        timeout_s=10,
    ), "the refused handshake is logged"
    _still_serving(tls)


def test_shoal_tool_with_command_config(tls: TlsBroker, tmp_path: Path) -> None:
    topic = topic_name("tls-cli")
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={tls.pki.ca}\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={tls.pki.alice.keystore}\n"
    )
    common = ("--bootstrap-server", tls.bootstrap("MTLS"), "--command-config", str(config))
    created = shoal("topics", "--create", "--topic", topic, "--partitions", "2", *common)
    assert created.returncode == 0, created.stderr
    listed = shoal("topics", "--list", *common)
    assert listed.returncode == 0, listed.stderr
    assert topic in listed.stdout.split()
    plaintext = tmp_path / "plaintext.properties"
    plaintext.write_text("default.api.timeout.ms=3000\nrequest.timeout.ms=1000\n")
    without = shoal(
        "topics",
        "--list",
        "--bootstrap-server",
        tls.bootstrap("MTLS"),
        "--command-config",
        str(plaintext),
        timeout_s=60,
    )
    assert without.returncode == 1, "plaintext to a TLS listener fails"


def test_replaced_server_certificate_is_seen_by_new_connections(tls: TlsBroker) -> None:
    def served_serial() -> int:
        context = ssl.create_default_context(cafile=str(tls.pki.ca))
        with (
            socket.create_connection(("127.0.0.1", tls.ports["SSL"])) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
        ):
            der = sock.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    assert served_serial() == tls.pki.server.serial
    reloads = tls.process.log_text().count("listener SSL: TLS key/trust store reloaded")
    fresh = reissue_server(tls.pki)
    assert wait_until(
        lambda: (
            tls.process.log_text().count("listener SSL: TLS key/trust store reloaded") > reloads
        ),
        timeout_s=WAIT_S,
    )
    assert served_serial() == fresh.serial
    _still_serving(tls)


def test_unmapped_listener_is_a_config_error(tmp_path: Path) -> None:
    result = shoal(
        "serve",
        "--data-dir",
        str(tmp_path / "d"),
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        timeout_s=60,
    )
    assert result.returncode == 2
    assert "listener EXTERNAL has no security protocol" in result.stderr


def test_console_share_consumer_with_command_config(tls: TlsBroker, tmp_path: Path) -> None:
    topic = topic_name("tls-console")
    create_topic(tls.bootstrap("PLAINTEXT"), topic, partitions=1)
    p = producer(tls.bootstrap("PLAINTEXT"))
    for i in range(3):
        p.produce(topic, value=f"c{i}".encode())
    flush_all(p)
    group = sc.share_group(tls.bootstrap("PLAINTEXT"), topic_name("tls-console-group"))
    config = tmp_path / "consumer.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.truststore.location={tls.pki.ca}\n"
        f"ssl.keystore.location={tls.pki.alice.keystore}\n"
    )
    done = shoal(
        "console-share-consumer",
        "--bootstrap-server",
        tls.bootstrap("MTLS"),
        "--topic",
        topic,
        "--group",
        group,
        "--command-config",
        str(config),
        "--max-messages",
        "3",
        timeout_s=90,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["c0", "c1", "c2"]


def test_password_configs_are_sensitive(tls: TlsBroker) -> None:
    from confluent_kafka.admin import ConfigResource

    admin = AdminClient({"bootstrap.servers": tls.bootstrap("PLAINTEXT")})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(WAIT_S)
    entry = configs["ssl.key.password"]
    assert entry.is_sensitive
    assert entry.value is None
    assert configs["ssl.truststore.location"].value == str(tls.pki.ca)
    assert KEY_PASSWORD not in tls.process.log_text()


def test_max_connections_counts_pending_handshakes(brokers: Brokers, tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    process = brokers.start(
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        f"ssl.keystore.location={pki.server.keystore}",
        "max.connections=1",
    )
    port = process.listener_ports()["SSL"]
    with (
        socket.create_connection(("127.0.0.1", port)) as first,
        socket.create_connection(("127.0.0.1", port)) as second,
    ):
        assert _closed_by_broker(second), "the second connection is over the limit"
        assert process.wait_for_log(r"listener SSL: refusing connection .* max\.connections=1")
        first.settimeout(0.5)
        with pytest.raises(TimeoutError):
            first.recv(1)  # the first one still waits for its ClientHello


def test_a_silent_peer_is_closed_after_the_handshake_timeout(tls: TlsBroker) -> None:
    before = tls.process.log_text().count("taking longer than 3.0 seconds")
    with socket.create_connection(("127.0.0.1", tls.ports["SSL"])) as sock:
        assert _closed_by_broker(sock), "shoal.ssl.handshake.timeout.ms=3000 closes it"
    assert wait_until(
        lambda: tls.process.log_text().count("taking longer than 3.0 seconds") > before,
        timeout_s=10,
    )


def test_shoal_clients_over_mutual_tls(tls: TlsBroker) -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(tls.pki.ca),
            "ssl.keystore.location": str(tls.pki.bob.keystore),
        }
    )
    settings = ClientSettings(security=security)
    with Client(tls.bootstrap("MTLS"), settings=settings, api_timeout_ms=20_000) as client:
        (node,) = client.metadata([]).brokers.values()
    assert node.port == tls.ports["MTLS"]

    async def over_asyncio() -> int:
        async with AsyncClient(tls.bootstrap("MTLS"), settings=settings) as client:
            (node,) = (await client.metadata([])).brokers.values()
            return node.port

    assert asyncio.run(over_asyncio()) == tls.ports["MTLS"]
    assert tls.process.wait_for_log(r"as User:CN=bob,OU=ops,O=shoal ")


def test_a_key_store_that_does_not_load_stops_start_up(tmp_path: Path) -> None:
    (tmp_path / "broken.pem").write_text("not PEM")
    result = shoal(
        "serve",
        "--data-dir",
        str(tmp_path / "d"),
        "--port",
        "0",
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "--override",
        f"ssl.keystore.location={tmp_path / 'broken.pem'}",
        timeout_s=60,
    )
    assert result.returncode == 2
    assert "invalid configuration: ssl.keystore.location" in result.stderr
