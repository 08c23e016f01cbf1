"""The BROKER_LOGGER resource on Python's logging (server/metadata/logger_configs.py): log4j's
level names, SET and DELETE applied all or nothing, Kafka's refusals."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.server.metadata.logger_configs import TRACE, change_levels, level_name, logger_levels
from shoal.server.refused import Refused

NAME = "shoal.test.logger_configs"
SET, DELETE, APPEND = 0, 1, 2


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    created = logging.getLogger(NAME)
    root_level = logging.getLogger().level
    yield created
    created.setLevel(logging.NOTSET)
    logging.getLogger().setLevel(root_level)


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (TRACE, "TRACE"),
        (logging.DEBUG, "DEBUG"),
        (logging.INFO, "INFO"),
        (logging.WARNING, "WARN"),
        (logging.ERROR, "ERROR"),
        (logging.CRITICAL, "FATAL"),
    ],
)
def test_levels_have_log4j_names(level: int, name: str) -> None:
    assert level_name(level) == name


def test_set_and_delete(logger: logging.Logger) -> None:
    change_levels([(NAME, SET, "TRACE")], validate_only=False)
    assert logger.level == TRACE
    assert (NAME, "TRACE") in logger_levels()
    change_levels([(NAME, DELETE, None)], validate_only=False)
    assert logger.level == logging.NOTSET  # inherits again
    assert logger_levels()[0][0] == "root"


def test_refusals_and_validate_only_change_nothing(logger: logging.Logger) -> None:
    logger.setLevel(logging.INFO)
    cases = [
        ([(NAME, SET, "DEBUG"), ("no.such.logger", SET, "DEBUG")], ErrorCode.invalid_config),
        ([(NAME, SET, "DEBUG"), ("root", SET, "LOUD")], ErrorCode.invalid_config),
        ([(NAME, SET, "DEBUG"), ("root", DELETE, None)], ErrorCode.invalid_request),
        ([(NAME, APPEND, "DEBUG")], ErrorCode.invalid_request),
    ]
    for ops, code in cases:
        with pytest.raises(Refused) as refused:
            change_levels(ops, validate_only=False)
        assert refused.value.code is code, ops
    change_levels([(NAME, SET, "DEBUG")], validate_only=True)
    assert logger.level == logging.INFO
