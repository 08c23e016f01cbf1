"""The Spark sources over TLS and SASL with Spark Kafka's `kafka.`-prefixed options:
a batch write (the sink) and a batch read (the batch source)

- over mutual TLS, through the MTLS listener of a TLS broker;
- over SASL_SSL with SCRAM-SHA-512 (`kafka.security.protocol`, `kafka.sasl.mechanism`,
  `kafka.sasl.jaas.config`, `kafka.ssl.truststore.*`), against a broker with the
  StandardAuthorizer on: the SCRAM user holds exactly the producer and consumer ACLs
  `shoal acls` grants."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")

from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.support.broker import BrokerProcess, running
from tests.support.certs import Pki, make_pki
from tests.support.cli import shoal
from tests.support.clients import create_topic
from tests.support.topics import topic_name

PASSWORD = "spark-scram512-secret-e1"


def _write_then_read(spark: Any, topic: str, security: dict[str, str]) -> list[str]:
    """Ten rows written by the sink, then the topic's values read by the batch source."""
    rows = spark.createDataFrame([(f"v{i}",) for i in range(10)], "value string")
    rows.write.format("shoal").options(**security).option("topic", topic).mode("append").save()
    read = (
        spark.read.format("shoal")
        .options(**security)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("cast(value as string) as v")
        .collect()
    )
    return sorted(r.v for r in read)


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, Pki]]:
    root = tmp_path_factory.mktemp("spark-tls")
    pki = make_pki(root / "pki")
    overrides = (
        "listeners=PLAINTEXT://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,MTLS:SSL",
        f"ssl.keystore.location={pki.server.keystore}",
        f"ssl.truststore.location={pki.ca}",
        "ssl.client.auth=required",
    )
    for process in running(root / "data", *overrides):
        yield process, pki


def test_write_and_read_over_mutual_tls(spark: Any, tls_broker: tuple[BrokerProcess, Pki]) -> None:
    process, pki = tls_broker
    port = process.listener_ports()["MTLS"]
    topic = topic_name("spark-tls")
    create_topic(process.bootstrap, topic, partitions=1)
    security = {
        "kafka.bootstrap.servers": f"127.0.0.1:{port}",
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(pki.ca),
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.location": str(pki.alice.keystore),
    }
    assert _write_then_read(spark, topic, security) == [f"v{i}" for i in range(10)]
    assert "as User:CN=alice,OU=clients,O=shoal" in process.log_text()


@pytest.fixture(scope="module")
def sasl_ssl_broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BrokerProcess, Pki]]:
    root = tmp_path_factory.mktemp("spark-sasl-ssl")
    pki = make_pki(root / "pki")
    overrides = (
        # PLAINTEXT for the test's own set-up as the super user ANONYMOUS
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        f"ssl.keystore.location={pki.server.keystore}",
        f"ssl.truststore.location={pki.ca}",
        "sasl.enabled.mechanisms=SCRAM-SHA-512",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:ANONYMOUS",
    )
    for process in running(root / "data", *overrides):
        yield process, pki


def test_sink_and_batch_source_over_sasl_ssl(
    spark: Any, sasl_ssl_broker: tuple[BrokerProcess, Pki]
) -> None:
    process, pki = sasl_ssl_broker
    topic = topic_name("spark-sasl")
    admin = AdminClient({"bootstrap.servers": process.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    upsert = UserScramCredentialUpsertion(
        "spark", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode()
    )
    admin.alter_user_scram_credentials([upsert])["spark"].result(timeout=30)
    for grant in (("--producer",), ("--consumer", "--group", "*")):
        done = shoal(
            "acls",
            "--bootstrap-server",
            process.bootstrap,
            "--add",
            "--allow-principal",
            "User:spark",
            *grant,
            "--topic",
            topic,
        )
        assert done.returncode == 0, done.stderr
    security = {
        "kafka.bootstrap.servers": f"127.0.0.1:{process.listener_ports()['SASL_SSL']}",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        f'required username="spark" password="{PASSWORD}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(pki.ca),
    }
    assert _write_then_read(spark, topic, security) == [f"v{i}" for i in range(10)]
    assert process.wait_for_log(r"SASL authenticated User:spark \(mechanism SCRAM-SHA-512")
    assert PASSWORD not in process.log_text()
