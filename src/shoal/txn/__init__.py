"""The transaction coordinator (sans-I/O): transactional ids, their producer ids and
epochs, and the two-phase end of a transaction, event-sourced on `__transaction_state`.

`records` is the record model (Kafka's TransactionLog key and value), `state` the
in-memory words (`TxnState`, `TxnMetadata`, `WriteMarkers`), `shard` the state machine
of one `__transaction_state` partition, `coordinator` the shards of every partition on
one coordinator runtime (coordinator/runtime.py), with the timed writes. The server
shell (`server/services/txn_service.py`) performs the `WriteMarkers` effects and reports back
with `markers_written`.
"""

from shoal.txn.coordinator import TransactionCoordinator
from shoal.txn.shard import TxnResult, TxnShard
from shoal.txn.state import ABORT, COMMIT, TxnMetadata, TxnState, WriteMarkers

__all__ = [
    "ABORT",
    "COMMIT",
    "TransactionCoordinator",
    "TxnMetadata",
    "TxnResult",
    "TxnShard",
    "TxnState",
    "WriteMarkers",
]
