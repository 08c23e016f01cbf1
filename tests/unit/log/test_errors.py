"""LogErrorCode: the log's errors are an enum that maps to Kafka's wire codes."""

from __future__ import annotations

import pytest

from shoal.log.api import LogError, LogErrorCode
from shoal.protocol.errors import ErrorCode, code_for


@pytest.mark.parametrize("code", list(LogErrorCode))
def test_every_log_error_is_a_kafka_error(code: LogErrorCode) -> None:
    assert code.error_code is ErrorCode[code.name.lower()]
    assert code_for(code) is code.error_code
    assert code == code.name and f"{code}" == code.name


def test_a_log_error_carries_its_code() -> None:
    error = LogError(LogErrorCode.OFFSET_OUT_OF_RANGE, "offset 9 is outside 0..3")
    assert error.code is LogErrorCode.OFFSET_OUT_OF_RANGE
    assert error.code.error_code == ErrorCode.offset_out_of_range
    assert str(error) == "offset 9 is outside 0..3"


def test_unknown_names_are_not_codes() -> None:
    with pytest.raises(ValueError):
        LogErrorCode("OFFSET_OUT_OF_RANGES")
