"""LogError: the log's errors carry Kafka's `ErrorCode`, which handlers answer as is."""

from __future__ import annotations

from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode, error_name


def test_a_log_error_carries_its_code() -> None:
    error = LogError(ErrorCode.offset_out_of_range, "offset 9 is outside 0..3")
    assert error.code is ErrorCode.offset_out_of_range
    assert error.code == 1
    assert str(error) == "offset 9 is outside 0..3"


def test_a_code_is_spelled_as_kafka_spells_it() -> None:
    assert error_name(ErrorCode.kafka_storage_error) == "KAFKA_STORAGE_ERROR"
    assert error_name(32_000) == "UNKNOWN_ERROR_CODE_32000"
