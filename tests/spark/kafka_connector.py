"""Spark's own Kafka connector (spark-sql-kafka-0-10) for the tests' SparkSession.

`connector_jars()` resolves tests/spark/kafka-connector/pom.xml into
`~/.cache/shoal/spark-kafka-connector-<version>` (kafka_reference.install_pom: once,
under a file lock) and returns the jars to give `spark.jars`: those the connector
needs that Spark does not ship itself (kafka-clients, commons-pool2, the connector
and its token provider). Jars Spark already has (Scala, Hadoop, lz4, snappy, slf4j,
spark-tags) are excluded in the pom and, should one slip through, left out here: the
JVM would load Spark's copies first anyway. Nothing
is downloaded at job time: `spark.jars` names local files, unlike `--packages`.

The pom is written for one PySpark release (`pyspark.version`); another installed
PySpark fails here with a message saying so.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import kafka_reference

POM = Path(__file__).resolve().parent / "kafka-connector" / "pom.xml"
_PROPERTY = r"<{0}>([^<]+)</{0}>"


def pom_property(name: str) -> str:
    found = re.search(_PROPERTY.format(re.escape(name)), POM.read_text(encoding="utf-8"))
    assert found is not None, f"{POM} has no <{name}>"
    return found.group(1)


CONNECTOR_VERSION = pom_property("spark.version")
"""The spark-sql-kafka-0-10 release the tests run."""


class ConnectorVersionMismatch(AssertionError):
    """The installed PySpark is not the one the pom was written for."""


def check_pyspark_version(installed: str) -> None:
    wanted = pom_property("pyspark.version")
    if installed != wanted:
        raise ConnectorVersionMismatch(
            f"pyspark {installed} is installed but {POM} is written for pyspark {wanted}: "
            f"set <pyspark.version> to {installed} and <spark.version> to the same release "
            f"if Maven Central has org.apache.spark:spark-sql-kafka-0-10_2.13:{installed} "
            f"(else to its newest release there)"
        )


def _artifact(jar: Path) -> str:
    """kafka-clients-3.9.2.jar -> kafka-clients (the name before the version)."""
    return re.sub(r"-\d+(\.\d+)*(-[\w.]+)?\.jar$", "", jar.name)


def connector_jars() -> list[Path]:
    """The jars for `spark.jars`; raises kafka_reference.ReferenceUnavailable without
    java, mvn or Maven Central, ConnectorVersionMismatch for another PySpark."""
    import pyspark

    check_pyspark_version(pyspark.__version__)
    home = kafka_reference.cache_root() / f"spark-kafka-connector-{CONNECTOR_VERSION}"
    libs = kafka_reference.install_pom(POM, home, what=f"spark-sql-kafka-0-10 {CONNECTOR_VERSION}")
    shipped = {_artifact(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(jar for jar in libs.glob("*.jar") if _artifact(jar) not in shipped)
    names = {_artifact(jar) for jar in jars}
    assert "spark-sql-kafka-0-10_2.13" in names and "kafka-clients" in names, jars
    return jars
