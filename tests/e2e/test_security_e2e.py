"""Security end to end (TLS, SASL, ACLs): a SASL_SSL listener with the StandardAuthorizer on.

One broker for the module: one SASL_SSL listener (certificates from tests/support/certs),
PLAIN users from the listener's JAAS config, a SCRAM-SHA-512 user created with
`shoal configs --add-config` (AlterUserScramCredentials), User:admin a super user. Each
principal gets exactly the ACLs `shoal acls --producer / --consumer / --operation ...`
grants (the tools run over SASL_SSL with `--command-config`). confluent-kafka (Producer,
Consumer, ShareConsumer, AdminClient) and kafka-python connect with PLAIN and
SCRAM-SHA-512; a principal without the ACL gets Kafka's error as the client surfaces it;
the negatives leave the broker serving; ACLs and SCRAM users survive a restart (the last
test); no secret used here appears in the broker's log.
"""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
)

from tests.support.broker import BrokerProcess, running
from tests.support.certs import Pki, make_pki
from tests.support.cli import ENV, rows, shoal
from tests.support.share_consumers import share_consumer

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

WAIT_S = 30.0
TOOL = [sys.executable, "-m", "shoal.cli.main"]
PASSWORDS = {
    "admin": "admin-e2e-secret-0b1d",
    "alice": "alice-e2e-secret-5c7e",  # producer ACLs
    "carl": "carl-e2e-secret-8a2f",  # consumer ACLs (topic + group)
    "dora": "dora-e2e-secret-3e90",  # DESCRIBE on the share group and the topic
    "pat": "pat-e2e-secret-19b5",  # DESCRIBE on the share group only
    "sam": "sam-e2e-secret-d41c",  # READ on the topic only
    "nobody": "nobody-e2e-secret-77aa",  # no ACL at all
}
SCOTT = "scott-scram512-secret-6f02"  # SCRAM-SHA-512, created by the admin
TOPIC = f"sec-{uuid.uuid4().hex[:6]}"
GROUP = f"cg-{TOPIC}"
SHARE_GROUP = f"sg-{TOPIC}"
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required " + " ".join(
    f'user_{user}="{password}"' for user, password in PASSWORDS.items()
)


class Secured:
    def __init__(self, process: BrokerProcess, pki: Pki, folder: Path) -> None:
        self.process = process
        self.pki = pki
        self.folder = folder

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    def plain(self, user: str, password: str | None = None) -> dict[str, Any]:
        return {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self.pki.ca),
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": PASSWORDS[user] if password is None else password,
        }

    def scram(self) -> dict[str, Any]:
        """User:scott's settings (SCRAM-SHA-512)."""
        return {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self.pki.ca),
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "scott",
            "sasl.password": SCOTT,
        }

    def command_config(self, user: str) -> str:
        """A Java-style client properties file for `--command-config`."""
        path = self.folder / f"{user}.properties"
        path.write_text(
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="{user}" password="{PASSWORDS[user]}";\n'
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={self.pki.ca}\n"
            "default.api.timeout.ms=10000\n"
        )
        return str(path)

    def tool(self, user: str, *args: str) -> Any:
        return shoal(
            *args,
            "--bootstrap-server",
            self.bootstrap,
            "--command-config",
            self.command_config(user),
            timeout_s=90,
        )


def _acl(secured: Secured, *args: str) -> None:
    done = secured.tool("admin", "acls", "--add", *args)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("sece2e")
    pki = make_pki(root / "pki")
    overrides = (
        "listeners=SASL_SSL://127.0.0.1:0",
        f"ssl.keystore.location={pki.server.keystore}",
        f"ssl.truststore.location={pki.ca}",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
        f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS};",
        "connection.failed.authentication.delay.ms=50",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:admin",
    )
    for process in running(root / "data", *overrides):
        s = Secured(process, pki, root)
        admin = AdminClient({"bootstrap.servers": s.bootstrap, **s.plain("admin")})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=WAIT_S)
        created = s.tool(
            "admin",
            "configs",
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "scott",
            "--add-config",
            f"SCRAM-SHA-512=[iterations=8192,password={SCOTT}]",
        )
        assert created.returncode == 0, created.stderr
        assert SCOTT not in created.stdout + created.stderr
        _acl(s, "--allow-principal", "User:alice", "--producer", "--topic", TOPIC)
        for user in ("carl", "scott"):
            for group in (GROUP, SHARE_GROUP):
                _acl(
                    s,
                    "--allow-principal",
                    f"User:{user}",
                    "--consumer",
                    "--topic",
                    TOPIC,
                    "--group",
                    group,
                )
            _acl(s, "--allow-principal", f"User:{user}", "--producer", "--topic", TOPIC)
        _acl(s, "--allow-principal", "User:sam", "--operation", "Read", "--topic", TOPIC)
        for user in ("dora", "pat"):
            _acl(
                s,
                "--allow-principal",
                f"User:{user}",
                "--operation",
                "Describe",
                "--group",
                SHARE_GROUP,
            )
        _acl(s, "--allow-principal", "User:dora", "--operation", "Describe", "--topic", TOPIC)
        yield s


def produce(secured: Secured, security: dict[str, Any], *values: bytes) -> list[KafkaError | None]:
    """Produce `values`; each record's delivery error (None when written)."""
    errors: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": secured.bootstrap,
            "linger.ms": 5,
            "message.timeout.ms": 15000,
            **security,
        }
    )
    for value in values:
        producer.produce(TOPIC, value, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(WAIT_S)
    return errors


def consume(
    secured: Secured, security: dict[str, Any], group: str, count: int
) -> tuple[list[bytes], list[KafkaError]]:
    """Subscribe to TOPIC as a member of `group` (from its committed offset, else the
    earliest) and read up to `count` records; the values and the errors seen."""
    consumer = Consumer(
        {
            "bootstrap.servers": secured.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **security,
        }
    )
    consumer.subscribe([TOPIC])
    values: list[bytes] = []
    errors: list[KafkaError] = []
    deadline = time.monotonic() + WAIT_S
    while len(values) < count and not errors and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is None:
            values.append(message.value())
        else:
            errors.append(message.error())
    if values:
        consumer.commit(asynchronous=False)
    consumer.close()
    return values, errors


def share_poll(secured: Secured, security: dict[str, Any]) -> tuple[list[bytes], list[int]]:
    """A ShareConsumer of SHARE_GROUP on TOPIC: values acquired and error codes seen
    (records are produced by the admin while it polls)."""
    consumer = share_consumer(
        secured.bootstrap,
        SHARE_GROUP,
        [TOPIC],
        **{k.replace(".", "_"): v for k, v in security.items()},
    )
    got: list[bytes] = []
    codes: list[int] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while not got and not codes and time.monotonic() < deadline:
            produce(secured, secured.plain("admin"), b"shared")
            try:
                for m in consumer.poll(0.5):
                    if m.error() is None:
                        got.append(m.value())
                    else:
                        codes.append(m.error().code())
            except KafkaException as exc:
                codes.append(exc.args[0].code())
    finally:
        consumer.close()
    return got, codes


def test_confluent_clients_over_sasl_ssl_plain_and_scram_512(secured: Secured) -> None:
    assert produce(secured, secured.plain("alice"), b"a0", b"a1") == [None, None]
    assert produce(secured, secured.scram(), b"s0") == [None]
    values, errors = consume(secured, secured.scram(), GROUP, 3)
    assert (values, errors) == ([b"a0", b"a1", b"s0"], [])
    admin = AdminClient({"bootstrap.servers": secured.bootstrap, **secured.scram()})
    assert TOPIC in admin.list_topics(timeout=WAIT_S).topics
    got, codes = share_poll(secured, secured.scram())
    assert b"shared" in got and codes == []
    assert secured.process.wait_for_log(r"SASL authenticated User:scott \(mechanism SCRAM-SHA-512")


def test_kafka_python_over_sasl_ssl_plain_and_scram_512(secured: Secured) -> None:
    common = {
        "bootstrap_servers": secured.bootstrap,
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(secured.pki.ca),
    }
    producer = KafkaProducer(
        **common,
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORDS["alice"],
    )
    producer.send(TOPIC, b"from-kafka-python").get(timeout=WAIT_S)
    producer.close()
    consumer = KafkaConsumer(
        TOPIC,
        **common,
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="scott",
        sasl_plain_password=SCOTT,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=int(WAIT_S * 1000),
    )
    values = []
    for record in consumer:
        values.append(record.value)
        if record.value == b"from-kafka-python":
            break
    consumer.close()
    assert b"from-kafka-python" in values
    denied = KafkaProducer(
        **common,
        sasl_mechanism="PLAIN",
        sasl_plain_username="nobody",
        sasl_plain_password=PASSWORDS["nobody"],
        max_block_ms=int(WAIT_S * 1000),
    )
    with pytest.raises(TopicAuthorizationFailedError):
        denied.send(TOPIC, b"denied").get(timeout=WAIT_S)
    denied.close()


def test_producer_acls_write_but_do_not_read(secured: Secured) -> None:
    assert produce(secured, secured.plain("alice"), b"by-alice") == [None]
    values, errors = consume(secured, secured.plain("alice"), GROUP, 1)
    assert values == []
    assert [e.code() for e in errors] in (
        [KafkaError.TOPIC_AUTHORIZATION_FAILED],
        [KafkaError.GROUP_AUTHORIZATION_FAILED],
    ), errors


def test_without_acls_produce_is_refused(secured: Secured) -> None:
    errors = produce(secured, secured.plain("nobody"), b"denied")
    assert [e.code() if e else None for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    errors = produce(secured, secured.plain("sam"), b"denied")  # READ is not WRITE
    assert [e.code() if e else None for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_consumer_acls_read_their_group_only(secured: Secured) -> None:
    values, errors = consume(secured, secured.plain("carl"), GROUP, 1)
    assert values and errors == []
    errors_w = produce(secured, secured.plain("carl"), b"x")
    assert errors_w == [None], "carl also holds the producer ACLs"
    values, errors = consume(secured, secured.plain("carl"), f"other-{GROUP}", 1)
    assert values == []
    assert [e.code() for e in errors] == [KafkaError.GROUP_AUTHORIZATION_FAILED], errors


def test_share_consumer_needs_read_on_the_group(secured: Secured) -> None:
    got, codes = share_poll(secured, secured.plain("sam"))
    assert got == []
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in codes, codes
    got, codes = share_poll(secured, secured.plain("carl"))
    assert b"shared" in got and codes == []


def _offset_rows(text: str) -> list[tuple[str, ...]]:
    """GROUP TOPIC PARTITION of each `--describe` row."""
    return [tuple(line.split()[:3]) for line in text.splitlines() if line.startswith(SHARE_GROUP)]


def _start_offset(text: str) -> int:
    (row,) = [line.split() for line in text.splitlines() if line.startswith(SHARE_GROUP)]
    return int(row[3])


def test_describe_only_sees_the_share_group_but_cannot_reset_or_delete(secured: Secured) -> None:
    share_poll(secured, secured.plain("carl"))  # the group exists, has state, and is empty
    admin = secured.tool("admin", "share-groups", "--describe", "--group", SHARE_GROUP)
    assert admin.returncode == 0, admin.stderr
    assert _offset_rows(admin.stdout) == [(SHARE_GROUP, TOPIC, "0")]
    # DESCRIBE on the group and the topic: the same description as the super user's
    described = secured.tool("dora", "share-groups", "--describe", "--group", SHARE_GROUP)
    assert described.returncode == 0, described.stderr
    assert _offset_rows(described.stdout) == _offset_rows(admin.stdout)
    assert _start_offset(described.stdout) >= _start_offset(admin.stdout) > 0
    state = secured.tool("dora", "share-groups", "--describe", "--state", "--group", SHARE_GROUP)
    assert state.returncode == 0, state.stderr
    assert "Empty" in state.stdout
    # ... but neither a reset (READ on the group) nor a delete (DELETE on the group)
    reset = secured.tool(
        "dora",
        "share-groups",
        "--reset-offsets",
        "--group",
        SHARE_GROUP,
        "--topic",
        TOPIC,
        "--to-earliest",
        "--execute",
    )
    assert reset.returncode == 1
    assert "GROUP_AUTHORIZATION_FAILED" in reset.stderr, reset.stderr
    deleted = secured.tool("dora", "share-groups", "--delete", "--group", SHARE_GROUP)
    assert deleted.returncode == 1
    assert "GROUP_AUTHORIZATION_FAILED" in deleted.stderr, deleted.stderr
    after = secured.tool("admin", "share-groups", "--describe", "--group", SHARE_GROUP)
    assert _offset_rows(after.stdout) == _offset_rows(admin.stdout), "not deleted"
    assert _start_offset(after.stdout) >= _start_offset(admin.stdout), "not reset to earliest"
    # DESCRIBE on the group only: the group, without the topic it may not DESCRIBE
    hidden = secured.tool("pat", "share-groups", "--describe", "--group", SHARE_GROUP)
    assert hidden.returncode == 0, hidden.stderr
    assert _offset_rows(hidden.stdout) == []
    assert "has no offset information" in hidden.stdout


def test_describe_only_browses_the_in_flight_records_but_cannot_acquire(
    secured: Secured,
) -> None:
    """`share-groups --browse` (ShareGroupBrowse, Shoal's extension API) over SASL_SSL
    with --command-config: dora (DESCRIBE on the group and the topic) sees the records
    carl's ShareConsumer holds, with carl's member id; pat (no DESCRIBE on the topic)
    is refused; dora's own ShareConsumer acquires nothing."""
    carl = share_consumer(
        secured.bootstrap,
        SHARE_GROUP,
        [TOPIC],
        explicit=True,
        **{k.replace(".", "_"): v for k, v in secured.plain("carl").items()},
    )
    try:
        held: list[int] = []
        deadline = time.monotonic() + WAIT_S
        while not held and time.monotonic() < deadline:
            produce(secured, secured.plain("admin"), b"shared")  # as share_poll does
            held = [int(m.offset()) for m in carl.poll(0.5) if m.error() is None]
        assert held, "carl's ShareConsumer got nothing"
        members = secured.tool(
            "admin", "share-groups", "--describe", "--members", "--group", SHARE_GROUP
        )
        (member,) = [r["CONSUMER-ID"] for r in rows(members.stdout)]
        browse = ("share-groups", "--browse", "--group", SHARE_GROUP, "--topic", TOPIC)
        seen = secured.tool("dora", *browse)
        assert seen.returncode == 0, seen.stderr
        acquired = [r for r in rows(seen.stdout) if r["STATE"] == "ACQUIRED"]
        offsets = [
            o for r in acquired for o in range(int(r["FIRST-OFFSET"]), int(r["LAST-OFFSET"]) + 1)
        ]
        assert offsets == held and {r["HOLDER"] for r in acquired} == {member}, seen.stdout
        refused = secured.tool("pat", *browse)
        assert refused.returncode == 1
        assert "TOPIC_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    finally:
        carl.close()
    got, codes = share_poll(secured, secured.plain("dora"))
    assert got == [] and KafkaError.GROUP_AUTHORIZATION_FAILED in codes, codes


def test_undescribable_topics_are_not_listed(secured: Secured) -> None:
    for user, visible in (("admin", True), ("carl", True), ("pat", False), ("nobody", False)):
        listed = secured.tool(user, "topics", "--list")
        assert listed.returncode == 0, listed.stderr
        assert (TOPIC in listed.stdout.split()) is visible, (user, listed.stdout)
    admin = AdminClient({"bootstrap.servers": secured.bootstrap, **secured.plain("nobody")})
    assert TOPIC not in admin.list_topics(timeout=WAIT_S).topics


def test_admin_client_describe_needs_describe_on_the_group(secured: Secured) -> None:
    consume(secured, secured.plain("carl"), GROUP, 1)  # the group exists
    allowed = AdminClient({"bootstrap.servers": secured.bootstrap, **secured.plain("carl")})
    (group,) = allowed.describe_consumer_groups([GROUP]).values()
    assert group.result(timeout=WAIT_S).group_id == GROUP
    denied = AdminClient({"bootstrap.servers": secured.bootstrap, **secured.plain("nobody")})
    (group,) = denied.describe_consumer_groups([GROUP]).values()
    with pytest.raises(KafkaException) as refused:
        group.result(timeout=WAIT_S)
    assert refused.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_console_share_consumer_with_command_config(secured: Secured) -> None:
    """`shoal console-share-consumer` passes the Java-style SASL_SSL settings of
    `--command-config` on to confluent-kafka's ShareConsumer."""
    tool = subprocess.Popen(
        [
            *TOOL,
            "console-share-consumer",
            "--bootstrap-server",
            secured.bootstrap,
            "--topic",
            TOPIC,
            "--group",
            SHARE_GROUP,
            "--command-config",
            secured.command_config("carl"),
            "--max-messages",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + 90
        while tool.poll() is None and time.monotonic() < deadline:
            produce(secured, secured.plain("admin"), b"to-the-console")
            time.sleep(0.5)
        out, err = tool.communicate(timeout=WAIT_S)
    finally:
        tool.kill()
    assert tool.returncode == 0, err
    (line,) = out.split()  # one record: earlier tests' unread records come first
    assert line in ("shared", "to-the-console")


def test_transactional_producer_needs_write_on_its_transactional_id(secured: Secured) -> None:
    txn_id = f"tx-{TOPIC}"
    _acl(
        secured,
        "--allow-principal",
        "User:carl",
        "--producer",
        "--topic",
        TOPIC,
        "--transactional-id",
        txn_id,
    )
    settings = {"bootstrap.servers": secured.bootstrap, "transactional.id": txn_id}
    producer = Producer({**settings, **secured.plain("carl")})
    producer.init_transactions(WAIT_S)
    producer.begin_transaction()
    producer.produce(TOPIC, b"in-a-transaction")
    producer.commit_transaction(WAIT_S)
    denied = Producer({**settings, **secured.plain("alice")})
    with pytest.raises(KafkaException) as refused:
        denied.init_transactions(WAIT_S)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_super_user_needs_no_acl(secured: Secured) -> None:
    admin_security = secured.plain("admin")
    assert produce(secured, admin_security, b"by-admin") == [None]
    values, errors = consume(secured, admin_security, f"admin-{GROUP}", 1)
    assert values and errors == []
    admin = AdminClient({"bootstrap.servers": secured.bootstrap, **admin_security})
    scratch = f"scratch-{TOPIC}"
    admin.create_topics([NewTopic(scratch, 1, 1)])[scratch].result(timeout=WAIT_S)
    admin.delete_topics([scratch])[scratch].result(timeout=WAIT_S)
    (group,) = admin.delete_consumer_groups([f"admin-{GROUP}"]).values()
    group.result(timeout=WAIT_S)


def test_wrong_password_is_refused_and_others_still_served(secured: Secured) -> None:
    errors: list[str] = []
    config = {"bootstrap.servers": secured.bootstrap, **secured.plain("alice", "wrong-pw-canary")}
    client = AdminClient({**config, "error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + WAIT_S
    while not any("Authentication" in e for e in errors) and time.monotonic() < deadline:
        client.poll(0.05)
    assert any("Invalid username or password" in e for e in errors), errors
    assert produce(secured, secured.plain("alice"), b"still-served") == [None]


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, 4) + b"test"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(WAIT_S)
    try:
        return sock.recv(4096) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def _tls(secured: Secured) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(secured.pki.ca))
    raw = socket.create_connection(("127.0.0.1", secured.process.port))
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def test_negatives_over_sasl_ssl_leave_the_broker_serving(secured: Secured) -> None:
    """Unknown SCRAM user, plaintext bytes, a request before the SASL handshake and a
    100 MiB token, each on the SASL_SSL listener; after each, alice still produces."""
    errors: list[str] = []
    unknown = {**secured.scram(), "sasl.username": "ghost"}
    client = AdminClient(
        {
            "bootstrap.servers": secured.bootstrap,
            **unknown,
            "error_cb": lambda e: errors.append(str(e)),
        }
    )
    deadline = time.monotonic() + WAIT_S
    while not any("Authentication" in e for e in errors) and time.monotonic() < deadline:
        client.poll(0.05)
    assert any("invalid credentials with SASL mechanism SCRAM-SHA-512" in e for e in errors)
    assert produce(secured, secured.plain("alice"), b"after-unknown") == [None]

    with socket.create_connection(("127.0.0.1", secured.process.port)) as sock:
        sock.sendall(_frame(18, 0, b""))  # ApiVersions v0 in the clear
        assert _closed(sock)
    assert secured.process.wait_for_log(r"TLS handshake with \S+ failed")
    assert produce(secured, secured.plain("alice"), b"after-plaintext") == [None]

    with _tls(secured) as sock:
        sock.sendall(_frame(3, 1, struct.pack(">i", 0)))  # Metadata v1 before SaslHandshake
        assert _closed(sock)
    assert secured.process.wait_for_log("Unexpected Kafka request of type metadata during SASL")
    assert produce(secured, secured.plain("alice"), b"after-early") == [None]

    with _tls(secured) as sock:
        sock.sendall(_frame(17, 1, struct.pack(">h", 5) + b"PLAIN"))
        size = struct.unpack(">i", sock.recv(4))[0]
        sock.recv(size)
        # a SaslAuthenticate v0 frame announcing a 100 MiB token: refused by its size
        sock.sendall(struct.pack(">i", 100 * 1024 * 1024 + 20) + struct.pack(">hhi", 36, 0, 2))
        assert _closed(sock)
    assert secured.process.wait_for_log(r"size 104857620 outside \[8, 524288\]")
    assert produce(secured, secured.plain("alice"), b"after-huge") == [None]


def test_zz_acls_and_scram_users_survive_a_restart(secured: Secured) -> None:
    secured.process.restart()
    assert produce(secured, secured.scram(), b"after-restart") == [None]
    errors = produce(secured, secured.plain("nobody"), b"denied")
    assert [e.code() if e else None for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    values, errors = consume(secured, secured.plain("carl"), GROUP, 1)
    assert values and errors == []
    values, errors = consume(secured, secured.plain("carl"), f"other-{GROUP}", 1)
    assert [e.code() for e in errors] == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    text = secured.process.log_text()
    for secret in (*PASSWORDS.values(), SCOTT, "wrong-pw-canary"):  # nor before the restart
        assert secret not in text
