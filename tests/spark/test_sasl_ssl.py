"""The Spark `shoal` sink and batch source over SASL_SSL with SCRAM-SHA-512, configured
with Spark Kafka's `kafka.`-prefixed options (`kafka.security.protocol`,
`kafka.sasl.mechanism`, `kafka.sasl.jaas.config`, `kafka.ssl.truststore.*`), against a
broker with the StandardAuthorizer on: the SCRAM user holds exactly the producer and
consumer ACLs `shoal acls` grants."""

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
from tests.support.topics import topic_name

PASSWORD = "spark-scram512-secret-e1"


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
    assert sorted(r.v for r in read) == [f"v{i}" for i in range(10)]
    assert process.wait_for_log(r"SASL authenticated User:spark \(mechanism SCRAM-SHA-512")
    assert PASSWORD not in process.log_text()
