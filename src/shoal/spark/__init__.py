"""The PySpark connector: Shoal's Python data sources (pure Python, no jars).

`register(spark)` makes them available to a session:

- `format("shoal")`: batch reads of topics by offset range (`batch_source`), the
  offset-based topic stream (`topic_stream`), batch and streaming writes (`sink`);
- `format("shoal-share")`: the share-group streaming source (`share_source`).

Install with `pip install -e '.[spark]'` (pyspark >= 4.2, pyarrow, Java 17 or 21).
Importing this package loads nothing of pyspark: executors import the submodules
they need.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register the Shoal data sources with a SparkSession."""
    from shoal.spark.batch_source import ShoalDataSource
    from shoal.spark.share_source import ShareSourceDataSource

    spark.dataSource.register(ShoalDataSource)
    spark.dataSource.register(ShareSourceDataSource)
