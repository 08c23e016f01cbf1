"""The BROKER_LOGGER config resource (type 8): this process's log levels, as Kafka
shows and changes its log4j loggers (KIP-412), on Python's `logging`.

- `logger_levels()`: "root" and every logger the process has created, each with its
  effective level in log4j's names (WARNING is WARN, CRITICAL is FATAL, below DEBUG is
  TRACE). DescribeConfigs shows each as Kafka does: source
  DYNAMIC_BROKER_LOGGER_CONFIG, type UNKNOWN, not sensitive, not read-only.
- `change_levels(ops)`: IncrementalAlterConfigs' SET (a level) and DELETE (back to
  inheriting the parent's level) on named loggers, checked first as a whole with
  Kafka's refusals: an unknown logger or level INVALID_CONFIG, DELETE of root or
  APPEND/SUBTRACT INVALID_REQUEST. As in Kafka the change lives in memory only (a
  restart takes `log.level` again). AlterConfigs knows no BROKER_LOGGER resource.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from shoal.protocol.errors import ErrorCode
from shoal.server.refused import Refused

ROOT = "root"
TRACE = 5
"""Python has no TRACE: log4j's TRACE is this level, below DEBUG."""
_LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
DOC = "A logger's level (log4j names: TRACE, DEBUG, INFO, WARN, ERROR, FATAL)."
_SET, _DELETE = 0, 1


def level_name(level: int) -> str:
    """A Python level in log4j's words."""
    for name, value in sorted(_LEVELS.items(), key=lambda item: -item[1]):
        if level >= value:
            return name
    return "TRACE"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    existing = logging.Logger.manager.loggerDict.get(name)
    return existing if isinstance(existing, logging.Logger) else None


def logger_levels() -> list[tuple[str, str]]:
    """(logger name, effective level) for root and every logger created, sorted."""
    names = [
        n for n, v in logging.Logger.manager.loggerDict.items() if isinstance(v, logging.Logger)
    ]
    levels = []
    for name in [ROOT, *sorted(names)]:
        logger = _logger(name)
        assert logger is not None
        levels.append((name, level_name(logger.getEffectiveLevel())))
    return levels


def change_levels(ops: Sequence[tuple[str, int, str | None]], *, validate_only: bool) -> None:
    """Apply SET / DELETE ops to loggers, or none of them (raises Refused)."""
    planned: list[tuple[logging.Logger, int]] = []
    for name, op, value in ops:
        if op not in (_SET, _DELETE):
            operation = {2: "APPEND", 3: "SUBTRACT"}.get(op, str(op))
            raise Refused(
                ErrorCode.invalid_request,
                f"{operation} operation is not allowed for the BROKER_LOGGER resource",
            )
        logger = _logger(name)
        if logger is None:
            raise Refused(ErrorCode.invalid_config, f"Logger {name} does not exist!")
        if op == _DELETE:
            if name == ROOT:
                raise Refused(
                    ErrorCode.invalid_request,
                    "Removing the log level of the root logger is not allowed",
                )
            planned.append((logger, logging.NOTSET))
            continue
        if value not in _LEVELS:
            raise Refused(
                ErrorCode.invalid_config,
                f"Cannot set the log level of {name} to {value} as it is not a supported "
                f"log level. Valid log levels are {', '.join(sorted(_LEVELS))}",
            )
        planned.append((logger, _LEVELS[value]))
    if validate_only:
        return
    for logger, level in planned:
        logger.setLevel(level)
