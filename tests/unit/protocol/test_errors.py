"""Codes by request version (protocol/errors.py): each entry of the table, at the last
version that gets the older code and the first that gets the newer one, as Kafka 4.2
answers (tests/differential/test_transactions.py checks the same against it)."""

from __future__ import annotations

import pytest

from shoal.protocol.errors import (
    ALL_VERSIONS,
    VERSIONED_CODES,
    ErrorCode,
    error_name,
    for_version,
)

PRODUCE, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = (
    0,
    22,
    24,
    25,
    26,
    28,
)
E = ErrorCode

CASES = [
    # (api key, code, the newest version answered `older`, `older`, the oldest answered `code`)
    (INIT_PRODUCER_ID, E.producer_fenced, 3, E.invalid_producer_epoch, 4),
    (END_TXN, E.producer_fenced, 1, E.invalid_producer_epoch, 2),
    (ADD_PARTITIONS, E.producer_fenced, 1, E.invalid_producer_epoch, 2),
    (ADD_OFFSETS, E.producer_fenced, 1, E.invalid_producer_epoch, 2),
    (PRODUCE, E.producer_fenced, 13, E.invalid_producer_epoch, None),
    (PRODUCE, E.transaction_abortable, 10, E.invalid_txn_state, 11),
    (PRODUCE, E.concurrent_transactions, 11, E.not_enough_replicas, 12),
    (PRODUCE, E.coordinator_load_in_progress, 13, E.not_enough_replicas, None),
    (PRODUCE, E.coordinator_not_available, 13, E.not_enough_replicas, None),
    (PRODUCE, E.not_coordinator, 13, E.not_enough_replicas, None),
    (TXN_OFFSET_COMMIT, E.producer_fenced, 5, E.invalid_producer_epoch, None),
    (TXN_OFFSET_COMMIT, E.transaction_abortable, 3, E.invalid_txn_state, 4),
    (TXN_OFFSET_COMMIT, E.coordinator_load_in_progress, 1, E.coordinator_not_available, 2),
]


@pytest.mark.parametrize(
    ("api_key", "code", "last_older", "older", "first_newer"),
    CASES,
    ids=[f"{api}-{code.name}" for api, code, *_ in CASES],
)
def test_each_entry_by_version(
    api_key: int, code: ErrorCode, last_older: int, older: ErrorCode, first_newer: int | None
) -> None:
    assert for_version(api_key, 0, code) == older
    assert for_version(api_key, last_older, code) == older
    if first_newer is not None:
        assert for_version(api_key, first_newer, code) == code
        assert for_version(api_key, first_newer + 3, code) == code


def test_the_cases_cover_the_table() -> None:
    table = {(v.api_key, v.code, v.instead) for v in VERSIONED_CODES}
    assert table == {(api, code, older) for api, code, _, older, _ in CASES}
    always = {(v.api_key, v.code) for v in VERSIONED_CODES if v.since == ALL_VERSIONS}
    assert always == {(api, code) for api, code, _, _, newer in CASES if newer is None}


def test_codes_without_an_entry_pass_at_every_version() -> None:
    assert for_version(END_TXN, 0, E.invalid_txn_state) == E.invalid_txn_state
    assert for_version(END_TXN, 0, E.none) == E.none
    # the same code is another API's to downgrade, not this one's
    assert for_version(INIT_PRODUCER_ID, 0, E.transaction_abortable) == E.transaction_abortable
    assert for_version(3, 0, E.producer_fenced) == E.producer_fenced  # Metadata


def test_error_name() -> None:
    assert error_name(90) == "PRODUCER_FENCED"
    assert error_name(-12345) == "UNKNOWN_ERROR_CODE_-12345"
