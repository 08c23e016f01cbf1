"""The Spark sources over mutual TLS with Spark Kafka's `kafka.`-prefixed options:
a batch write (the sink) and a batch read through the MTLS listener of a TLS broker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")

from tests.support.broker import BrokerProcess, running
from tests.support.certs import Pki, make_pki
from tests.support.clients import create_topic
from tests.support.topics import topic_name


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
    assert "as User:CN=alice,OU=clients,O=shoal" in process.log_text()
