"""Kafka error codes, as kio defines them, their names, and the codes each request
version may carry.

Cores, the log and the coordinators carry `ErrorCode` values end to end. `error_name`
spells a code the way Kafka's messages and logs do ("GROUP_ID_NOT_FOUND"). One table,
Kafka's own numbering.

Codes by request version (`VERSIONED_CODES`, `for_version`). A code added to Kafka
after a request version was defined is unknown to the clients that send that version
(KafkaJS reports "Unknown error code 90", aiokafka `UnknownError`), so Kafka answers
them with the older code that their clients handle the same way. The cores decide
with the newest codes; each handler passes the code it answers through `for_version`
with its API key and request version, which applies the table below. The table is
Kafka 4.2's (checked against the reference broker in
tests/differential/test_transactions.py):

- PRODUCER_FENCED (KIP-588) is INVALID_PRODUCER_EPOCH for InitProducerId below v4 and
  for EndTxn, AddPartitionsToTxn and AddOffsetsToTxn below v2 (KafkaApis'
  handleInitProducerIdRequest, handleEndTxnRequest, handleAddPartitionsToTxnRequest,
  handleAddOffsetsToTxnRequest).
- A transactional Produce or TxnOffsetCommit is verified with the transaction
  coordinator before it is written (KIP-890 part 1); the coordinator's PRODUCER_FENCED
  reaches the producer as INVALID_PRODUCER_EPOCH at every version, an abortable error
  (AddPartitionsToTxnManager), and TRANSACTION_ABORTABLE (KIP-890) as INVALID_TXN_STATE
  to Produce below v11 and TxnOffsetCommit below v4, the versions before the clients
  knew it (AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation
  and txnOffsetCommitRequestVersionToTransactionSupportedOperation).
- A Produce whose verification could not be completed (the coordinator loading, not
  available, or busy with the transaction's end) is answered NOT_ENOUGH_REPLICAS, which
  every producer retries without a metadata refresh (ReplicaManager.handleProduceAppend);
  CONCURRENT_TRANSACTIONS only from v12 on (transaction version 2 clients retry it).
- TxnOffsetCommit below v2 answers COORDINATOR_NOT_AVAILABLE for
  COORDINATOR_LOAD_IN_PROGRESS (clients before Kafka 2.0 crashed on it; KafkaApis'
  handleTxnOffsetCommitRequest).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kio.schema.errors import ErrorCode

__all__ = ["VERSIONED_CODES", "ErrorCode", "VersionedCode", "error_name", "for_version"]

PRODUCE = 0
INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
ALL_VERSIONS = 2**15
"""`since` of a code an API never carries: every version is below it."""


def error_name(code: int) -> str:
    """Kafka's name of an error code, e.g. 69 -> "GROUP_ID_NOT_FOUND"."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


@dataclass(frozen=True, slots=True)
class VersionedCode:
    """Requests of `api_key` below version `since` are answered `instead` of `code`."""

    api_key: int
    code: ErrorCode
    since: int
    instead: ErrorCode


VERSIONED_CODES: tuple[VersionedCode, ...] = (
    VersionedCode(INIT_PRODUCER_ID, ErrorCode.producer_fenced, 4, ErrorCode.invalid_producer_epoch),
    VersionedCode(END_TXN, ErrorCode.producer_fenced, 2, ErrorCode.invalid_producer_epoch),
    VersionedCode(
        ADD_PARTITIONS_TO_TXN, ErrorCode.producer_fenced, 2, ErrorCode.invalid_producer_epoch
    ),
    VersionedCode(
        ADD_OFFSETS_TO_TXN, ErrorCode.producer_fenced, 2, ErrorCode.invalid_producer_epoch
    ),
    VersionedCode(
        PRODUCE, ErrorCode.producer_fenced, ALL_VERSIONS, ErrorCode.invalid_producer_epoch
    ),
    VersionedCode(PRODUCE, ErrorCode.transaction_abortable, 11, ErrorCode.invalid_txn_state),
    VersionedCode(PRODUCE, ErrorCode.concurrent_transactions, 12, ErrorCode.not_enough_replicas),
    VersionedCode(
        PRODUCE, ErrorCode.coordinator_load_in_progress, ALL_VERSIONS, ErrorCode.not_enough_replicas
    ),
    VersionedCode(
        PRODUCE, ErrorCode.coordinator_not_available, ALL_VERSIONS, ErrorCode.not_enough_replicas
    ),
    VersionedCode(PRODUCE, ErrorCode.not_coordinator, ALL_VERSIONS, ErrorCode.not_enough_replicas),
    VersionedCode(
        TXN_OFFSET_COMMIT, ErrorCode.producer_fenced, ALL_VERSIONS, ErrorCode.invalid_producer_epoch
    ),
    VersionedCode(
        TXN_OFFSET_COMMIT, ErrorCode.transaction_abortable, 4, ErrorCode.invalid_txn_state
    ),
    VersionedCode(
        TXN_OFFSET_COMMIT,
        ErrorCode.coordinator_load_in_progress,
        2,
        ErrorCode.coordinator_not_available,
    ),
)
"""Kafka 4.2's answers to request versions that predate a code (module docstring)."""

_BY_API_AND_CODE: Mapping[tuple[int, ErrorCode], VersionedCode] = MappingProxyType(
    {(entry.api_key, entry.code): entry for entry in VERSIONED_CODES}
)
assert len(_BY_API_AND_CODE) == len(VERSIONED_CODES), "one entry per (api key, code)"


def for_version(api_key: int, version: int, code: ErrorCode) -> ErrorCode:
    """The code a request of `api_key` at `version` is answered for `code`."""
    entry = _BY_API_AND_CODE.get((api_key, code))
    if entry is None or version >= entry.since:
        return code
    return entry.instead
