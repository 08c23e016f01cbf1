"""A synchronous admin client for the `shoal` tools, over the async `KafkaConnection`.

`AdminClient(bootstrap)` owns one private event loop and one connection per broker
address. Every call is bounded by the API timeout (`--timeout`, or
`default.api.timeout.ms` from `--command-config`): within it the client keeps trying
to connect (cycling through the bootstrap addresses, backing off from
`RETRY_BACKOFF_MS` to `RETRY_BACKOFF_MAX_MS`), reconnects and resends when a
connection drops, and for group requests follows the coordinator while it is loading
or has moved. Each single request waits at most `request.timeout.ms`.

A new connection asks ApiVersions first; a request the broker does not serve fails
with UNSUPPORTED_VERSION before anything is sent. Failures are `AdminError`s with a
message fit for the user: `KafkaError` (the broker answered an error code; carries
Kafka's error name), `BrokerUnreachable` and `AdminTimeout`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.static.primitive import i8

from shoal.client import KafkaConnection
from shoal.protocol import codec
from shoal.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

API_TIMEOUT_MS_DEFAULT = 30_000
"""How long one admin call may take, retries included (Kafka's share-groups tool
`--timeout` default). Past it the call fails with `AdminTimeout` or
`BrokerUnreachable`."""
REQUEST_TIMEOUT_MS_DEFAULT = 30_000
"""How long one request waits for its response (`request.timeout.ms`, Kafka's admin
client default)."""
RETRY_BACKOFF_MS = 100
"""First pause before retrying a failed connection or a retriable error."""
RETRY_BACKOFF_MAX_MS = 1_000
"""The pause doubles per retry up to this."""
CLIENT_ID_DEFAULT = "shoal-admin"
CLIENT_SOFTWARE_NAME = "shoal-admin"
CLIENT_SOFTWARE_VERSION = "0.1.0"

_GROUP_KEY_TYPE = 0
_RETRIABLE_GROUP_ERRORS = frozenset(
    {
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
    }
)
_COORDINATOR_MOVED = frozenset({ErrorCode.coordinator_not_available, ErrorCode.not_coordinator})

# Kafka's default messages for the errors these tools meet most, shown when the
# broker sends no message of its own.
_DEFAULT_MESSAGES = {
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "GROUP_ID_NOT_FOUND": "The group id does not exist.",
    "NON_EMPTY_GROUP": "The group is not empty.",
    "INVALID_GROUP_ID": "The configured groupId is invalid.",
    "TOPIC_ALREADY_EXISTS": "Topic with this name already exists.",
    "INVALID_PARTITIONS": "Number of partitions is below 1.",
    "INVALID_REPLICATION_FACTOR": "Replication factor is below 1 or larger than the number of "
    "available brokers.",
    "INVALID_TOPIC_EXCEPTION": "The request attempted to perform an operation on an invalid topic.",
    "INVALID_CONFIG": "Configuration is invalid.",
    "UNSUPPORTED_VERSION": "The version of API is not supported.",
    "COORDINATOR_LOAD_IN_PROGRESS": "The coordinator is loading and hence can't process requests.",
    "COORDINATOR_NOT_AVAILABLE": "The coordinator is not available.",
    "NOT_COORDINATOR": "This is not the correct coordinator.",
}


class AdminError(Exception):
    """An admin call failed; `str(error)` is the message for the user."""


class KafkaError(AdminError):
    """The broker answered a Kafka error code."""

    def __init__(self, code: int, message: str | None = None, *, context: str = "") -> None:
        self.code = int(code)
        self.name = error_name(code)
        self.text = message or _DEFAULT_MESSAGES.get(self.name) or self.name
        shown = f"{self.text} ({self.name})" if self.text != self.name else self.name
        super().__init__(f"{context}: {shown}" if context else shown)


class BrokerUnreachable(AdminError):
    """No connection to the broker could be made within the API timeout."""


class AdminTimeout(AdminError):
    """The broker did not answer within the timeout."""


def error_name(code: int) -> str:
    """Kafka's name of an error code, e.g. 69 -> "GROUP_ID_NOT_FOUND"."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def check(code: int, message: str | None = None, *, context: str = "") -> None:
    """Raise `KafkaError` unless `code` is NONE."""
    if code != ErrorCode.none:
        raise KafkaError(code, message, context=context)


@dataclass(frozen=True, slots=True)
class Node:
    """A broker address, with its node id when known (-1 for a bootstrap address)."""

    host: str
    port: int
    node_id: int = -1

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def parse_bootstrap(text: str) -> list[Node]:
    """`HOST:PORT[,HOST:PORT...]` as nodes; ValueError names what is wrong."""
    nodes = []
    for raw in text.split(","):
        item = raw.strip()
        host, sep, port = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"invalid bootstrap server {item!r}: expected HOST:PORT")
        nodes.append(Node(host, int(port)))
    return nodes


def api_label(request: Any) -> str:
    key = int(request.__api_key__)
    name = codec.api_name(key) or "Unknown"
    return f"{''.join(part.title() for part in name.split('_'))} (API {key}) v{request.__version__}"


class _Deadline:
    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_ms: int) -> None:
        self._loop = loop
        self.timeout_ms = timeout_ms
        self._end_s = loop.time() + timeout_ms / 1000

    def remaining_s(self) -> float:
        return max(0.0, self._end_s - self._loop.time())

    @property
    def passed(self) -> bool:
        return self.remaining_s() <= 0


class AdminClient:
    """See the module docstring. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        bootstrap: str,
        *,
        api_timeout_ms: int = API_TIMEOUT_MS_DEFAULT,
        request_timeout_ms: int = REQUEST_TIMEOUT_MS_DEFAULT,
        client_id: str = CLIENT_ID_DEFAULT,
    ) -> None:
        assert api_timeout_ms > 0 and request_timeout_ms > 0
        self.bootstrap = parse_bootstrap(bootstrap)
        self.api_timeout_ms = api_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.client_id = client_id
        self._runner = asyncio.Runner()
        self._connections: dict[tuple[str, int], KafkaConnection] = {}
        self._versions: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}
        self._coordinators: dict[str, Node] = {}

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        async def close_all() -> None:
            for connection in self._connections.values():
                await connection.close()

        try:
            self._runner.run(close_all())
        finally:
            self._connections.clear()
            self._runner.close()

    # ---- public calls (each bounded by the API timeout)

    def send(self, request: Any, *, node: Node | None = None) -> Any:
        """Send a kio request to `node` (default: any bootstrap broker); the response."""
        return self._runner.run(self._send(request, node))

    def coordinator(self, group_id: str) -> Node:
        """The node coordinating `group_id` (FindCoordinator, key type group)."""

        async def go() -> Node:
            return await self._coordinator(group_id, self._deadline())

        return self._runner.run(go())

    def send_to_coordinator(
        self, group_id: str, request: Any, *, error_of: Callable[[Any], int]
    ) -> Any:
        """Send a group request to the group's coordinator. While `error_of(response)`
        is COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR
        the coordinator is looked up again and the request resent, until the API
        timeout; then that error is raised."""
        return self._runner.run(self._send_to_coordinator(group_id, request, error_of))

    def supports(self, api_key: int, version: int, *, node: Node | None = None) -> bool:
        """Whether the broker serves `api_key` at `version` (connects if need be)."""

        async def go() -> bool:
            deadline = self._deadline()
            target = await self._connect(node, deadline)
            low, high = self._versions[(target.host, target.port)].get(api_key, (0, -1))
            return low <= version <= high

        return self._runner.run(go())

    def brokers(self) -> list[Node]:
        """Every broker of the cluster (Metadata with no topics)."""
        response = self.send(
            MetadataRequest(
                topics=(),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        return [Node(b.host, int(b.port), int(b.node_id)) for b in response.brokers]

    # ---- internals

    def _deadline(self) -> _Deadline:
        return _Deadline(asyncio.get_running_loop(), self.api_timeout_ms)

    async def _send(self, request: Any, node: Node | None) -> Any:
        return await self._send_within(request, node, self._deadline())

    async def _send_within(self, request: Any, node: Node | None, deadline: _Deadline) -> Any:
        backoff_ms = RETRY_BACKOFF_MS
        while True:
            target = await self._connect(node, deadline)
            key = (target.host, target.port)
            self._check_version(key, request)
            connection = self._connections[key]
            wait_s = min(self.request_timeout_ms / 1000, deadline.remaining_s())
            try:
                return await connection.request(request, timeout_s=max(wait_s, 0.001))
            except TimeoutError:
                await self._drop(key)
                raise AdminTimeout(
                    f"no answer to {api_label(request)} from {target.address} within "
                    f"{round(wait_s * 1000)} ms"
                ) from None
            except ConnectionError as exc:
                await self._drop(key)
                log.info(
                    "connection to %s lost during %s: %s", target.address, api_label(request), exc
                )
                if deadline.passed:
                    raise BrokerUnreachable(
                        f"lost the connection to {target.address} during {api_label(request)} "
                        f"and could not resend it within {deadline.timeout_ms} ms: {exc}"
                    ) from None
                await asyncio.sleep(min(backoff_ms / 1000, deadline.remaining_s()))
                backoff_ms = min(backoff_ms * 2, RETRY_BACKOFF_MAX_MS)

    def _check_version(self, key: tuple[str, int], request: Any) -> None:
        api_key, version = int(request.__api_key__), int(request.__version__)
        low, high = self._versions[key].get(api_key, (0, -1))
        if not low <= version <= high:
            served = f"serves v{low}-v{high}" if high >= 0 else "does not serve it"
            raise KafkaError(
                ErrorCode.unsupported_version,
                f"the broker at {key[0]}:{key[1]} cannot answer {api_label(request)} ({served})",
            )

    async def _connect(self, node: Node | None, deadline: _Deadline) -> Node:
        """An open connection (with known API versions) to `node` or to the first
        bootstrap address that answers, retrying until the deadline."""
        candidates = [node] if node is not None else self.bootstrap
        for candidate in candidates:
            if (candidate.host, candidate.port) in self._connections:
                connection = self._connections[(candidate.host, candidate.port)]
                if not connection.closed_by_peer:
                    return candidate
                await self._drop((candidate.host, candidate.port))
        backoff_ms = RETRY_BACKOFF_MS
        last_error = "no attempt made"
        while True:
            for candidate in candidates:
                try:
                    await self._open(candidate, deadline)
                    return candidate
                except (OSError, TimeoutError, ConnectionError) as exc:
                    last_error = str(exc) or type(exc).__name__
                    log.debug("cannot connect to %s: %s", candidate.address, last_error)
            if deadline.passed:
                where = ",".join(c.address for c in candidates)
                raise BrokerUnreachable(
                    f"cannot reach the broker at {where} within {deadline.timeout_ms} ms "
                    f"(last error: {last_error})"
                )
            await asyncio.sleep(min(backoff_ms / 1000, deadline.remaining_s()))
            backoff_ms = min(backoff_ms * 2, RETRY_BACKOFF_MAX_MS)

    async def _open(self, node: Node, deadline: _Deadline) -> None:
        timeout_s = max(min(self.request_timeout_ms / 1000, deadline.remaining_s()), 0.001)
        connection = await KafkaConnection.open(
            node.host, node.port, client_id=self.client_id, timeout_s=timeout_s
        )
        try:
            response = await connection.request(
                ApiVersionsRequest(
                    client_software_name=CLIENT_SOFTWARE_NAME,
                    client_software_version=CLIENT_SOFTWARE_VERSION,
                ),
                timeout_s=timeout_s,
            )
        except TimeoutError:
            await connection.close()
            raise ConnectionError(
                f"connected, but no answer to ApiVersions within {round(timeout_s * 1000)} ms"
            ) from None
        except BaseException:
            await connection.close()
            raise
        if response.error_code != ErrorCode.none:
            await connection.close()
            raise ConnectionError(f"ApiVersions failed: {error_name(response.error_code)}")
        key = (node.host, node.port)
        self._connections[key] = connection
        self._versions[key] = {
            int(v.api_key): (int(v.min_version), int(v.max_version)) for v in response.api_keys
        }

    async def _drop(self, key: tuple[str, int]) -> None:
        connection = self._connections.pop(key, None)
        if connection is not None:
            await connection.close()

    async def _coordinator(self, group_id: str, deadline: _Deadline) -> Node:
        cached = self._coordinators.get(group_id)
        if cached is not None:
            return cached
        backoff_ms = RETRY_BACKOFF_MS
        while True:
            response = await self._send_within(
                FindCoordinatorRequest(key_type=i8(_GROUP_KEY_TYPE), coordinator_keys=(group_id,)),
                None,
                deadline,
            )
            (found,) = response.coordinators
            if found.error_code == ErrorCode.none:
                node = Node(found.host, int(found.port), int(found.node_id))
                self._coordinators[group_id] = node
                return node
            if found.error_code not in _RETRIABLE_GROUP_ERRORS or deadline.passed:
                raise KafkaError(found.error_code, found.error_message)
            await asyncio.sleep(min(backoff_ms / 1000, deadline.remaining_s()))
            backoff_ms = min(backoff_ms * 2, RETRY_BACKOFF_MAX_MS)

    async def _send_to_coordinator(
        self, group_id: str, request: Any, error_of: Callable[[Any], int]
    ) -> Any:
        deadline = self._deadline()
        backoff_ms = RETRY_BACKOFF_MS
        while True:
            node = await self._coordinator(group_id, deadline)
            response = await self._send_within(request, node, deadline)
            code = error_of(response)
            if code not in _RETRIABLE_GROUP_ERRORS or deadline.passed:
                return response
            log.info(
                "%s for group %r: %s, retrying", api_label(request), group_id, error_name(code)
            )
            if code in _COORDINATOR_MOVED:
                self._coordinators.pop(group_id, None)
            await asyncio.sleep(min(backoff_ms / 1000, deadline.remaining_s()))
            backoff_ms = min(backoff_ms * 2, RETRY_BACKOFF_MAX_MS)
