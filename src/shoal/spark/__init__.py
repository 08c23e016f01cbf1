"""The PySpark connector: Shoal's Python data sources (pure Python, no jars).

`register(spark)` makes them available to a session:

- `format("shoal")`: batch reads of topics by offset range (`batch_source`), batch and
  streaming writes (`sink`);
- `format("shoal-share")`: the share-group streaming source (`share_source`), when
  that module is present.

Install with `pip install -e '.[spark]'` (pyspark >= 4.2, pyarrow, Java 17 or 21).
Importing this package loads nothing of pyspark: executors import the submodules
they need.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import Any

log = logging.getLogger(__name__)

_SHARE_MODULE = "shoal.spark.share_source"
SHARE_SOURCE_NAME = "shoal-share"

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register the Shoal data sources with a SparkSession."""
    from shoal.spark.batch_source import ShoalDataSource

    spark.dataSource.register(ShoalDataSource)
    share = _share_data_source()
    if share is not None:
        spark.dataSource.register(share)


def _share_data_source() -> type | None:
    """The DataSource class named "shoal-share" in share_source, or None while that
    module does not exist."""
    from pyspark.sql.datasource import DataSource

    try:
        module = importlib.import_module(_SHARE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != _SHARE_MODULE:
            raise
        log.debug(
            "%s is not available; format(%r) not registered", _SHARE_MODULE, SHARE_SOURCE_NAME
        )
        return None
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if (
            issubclass(cls, DataSource)
            and cls.__module__ == _SHARE_MODULE
            and cls.name() == SHARE_SOURCE_NAME
        ):
            return cls
    raise ImportError(f"{_SHARE_MODULE} defines no DataSource named {SHARE_SOURCE_NAME!r}")
