"""The client's retry and routing logic, written once as sans-I/O operations.

An operation is a generator: it yields effects and receives their results.

- `Connect(node, timeout_ms)`: have an open connection to `node` that has done its
  ApiVersions handshake; the result is the broker's versions.
- `Send(node, call, timeout_ms)`: send `call` to `node` (connecting first if needed;
  the version chosen from the broker's versions); the result is the kio response,
  or None for a call that expects none.
- `Sleep(ms)`: pause.

A driver (sync.py, aio.py) executes effects and sends each result back, or throws
the `ClientError` the effect raised into the operation: `Disconnected` when the node
cannot be reached, the connection dropped, or no answer came within `timeout_ms`.
`resume` steps an operation once; `drive` is the loop of a blocking driver.

What the operations do on their own, within one API deadline (`api_timeout_ms`,
on the injected clock), pausing with exponential backoff between tries:

- connection loss or timeout: reconnect and resend (to the next bootstrap/known
  broker when any broker will do; after a metadata refresh or coordinator lookup
  when the node was a leader or coordinator);
- NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, ...
  (`LEADERSHIP_MOVED`, read by the caller's `error_of`): refresh metadata, resend;
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: find the coordinator again, resend;
- COORDINATOR_LOAD_IN_PROGRESS: resend to the same coordinator.

Past the deadline the last failure is raised as `BrokerUnreachable`, `RequestTimeout`
or `KafkaError`, with a message fit for a user.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from shoal.client import requests
from shoal.client.bootstrap import Node, parse_bootstrap
from shoal.client.calls import Call
from shoal.client.errors import (
    COORDINATOR_LOADING,
    COORDINATOR_MOVED,
    LEADERSHIP_MOVED,
    BrokerUnreachable,
    ClientError,
    ErrorCode,
    KafkaError,
    RequestTimeout,
    error_name,
)
from shoal.client.metadata import (
    GROUP_KEY_TYPE,
    ClusterView,
    MetadataCache,
    TopicPartition,
    cluster_view,
)
from shoal.client.settings import Backoff, ClientSettings, Deadline
from shoal.client.versions import BrokerVersions, api_label
from shoal.clock import Clock, SystemClock

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Connect:
    node: Node
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class Send:
    node: Node
    call: Call
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class Sleep:
    ms: int


Effect = Connect | Send | Sleep
Op = Generator[Effect, Any, T]
ErrorOf = Callable[[Any], int]
"""Reads the error code that decides a retry from a response (each API keeps it elsewhere)."""

Phase = Literal["connect", "request", "timeout"]


class Disconnected(ClientError):
    """A driver's report that `node` could not be reached (phase "connect"), dropped the
    connection mid-request ("request"), or did not answer in time ("timeout")."""

    def __init__(self, node: Node, reason: str, *, phase: Phase) -> None:
        super().__init__(f"{node.address}: {reason}")
        self.node = node
        self.reason = reason
        self.phase = phase


@dataclass(frozen=True, slots=True)
class Done(Generic[T]):
    """What an operation returned: it has no more effects."""

    value: T


def resume(op: Op[T], value: Any = None, error: ClientError | None = None) -> Effect | Done[T]:
    """Step `op` once: send it the last effect's result, or throw in the `ClientError`
    the effect raised. Its next effect, or `Done` with its result; any other error it
    raises propagates. Both drivers run operations through this."""
    try:
        return op.send(value) if error is None else op.throw(error)
    except StopIteration as stop:
        return Done(stop.value)


def drive(op: Op[T], execute: Callable[[Effect], Any]) -> T:
    """Run an operation with a blocking effect executor."""
    step = resume(op)
    while not isinstance(step, Done):
        try:
            value = execute(step)
        except ClientError as exc:
            step = resume(op, error=exc)
        else:
            step = resume(op, value)
    return step.value


class Router:
    """The operations of one client, over its metadata cache. Each public method
    starts a fresh API deadline and returns an `Op`."""

    def __init__(self, bootstrap: Sequence[Node], *, settings: ClientSettings, clock: Clock):
        assert bootstrap, "at least one bootstrap broker"
        self.bootstrap = list(bootstrap)
        self.settings = settings
        self.clock = clock
        self.cache = MetadataCache()

    def _budget(self) -> tuple[Deadline, Backoff]:
        s = self.settings
        return Deadline(self.clock, s.api_timeout_ms), Backoff(
            initial_ms=s.retry_backoff_ms, max_ms=s.retry_backoff_max_ms
        )

    # ---- public operations

    def call(self, call: Call, node: Node | None = None) -> Op[Any]:
        """`call` to `node`, or to any bootstrap/known broker."""
        deadline, backoff = self._budget()
        return (yield from self._send(node, call, deadline, backoff))

    def connect(self, node: Node | None = None) -> Op[BrokerVersions]:
        """A connection to `node` (or any broker); the broker's API versions."""
        deadline, backoff = self._budget()
        versions: BrokerVersions = yield from self._attempt(
            node, None, deadline, backoff, reroute=False
        )
        return versions

    def supports(
        self, api_key: int, version: int | None = None, node: Node | None = None
    ) -> Op[bool]:
        """Whether the broker serves `api_key` (at `version`, if given)."""
        versions = yield from self.connect(node)
        low, high = versions.get(api_key, (0, -1))
        return high >= 0 if version is None else low <= version <= high

    def metadata(self, topics: Sequence[str] | None = None) -> Op[ClusterView]:
        """Metadata of `topics` (None: every topic); the cache adopts it. Topic errors
        stay in the view for the caller."""
        deadline, backoff = self._budget()
        return (yield from self._metadata(topics, deadline, backoff))

    def brokers(self) -> Op[list[Node]]:
        """Every broker of the cluster, by node id."""
        view = yield from self.metadata([])
        return [view.brokers[node_id] for node_id in sorted(view.brokers)]

    def coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE) -> Op[Node]:
        """The coordinator of a group (or of a key of another type); cached."""
        deadline, backoff = self._budget()
        return (yield from self._coordinator(key, key_type, deadline, backoff))

    def to_leader(self, topic: str, partition: int, call: Call, error_of: ErrorOf) -> Op[Any]:
        """`call` to the partition's leader. A leadership error (by `error_of`) or a lost
        leader refreshes metadata and resends; past the deadline it is raised."""
        deadline, backoff = self._budget()
        while True:
            node = yield from self._leader(topic, partition, deadline, backoff)
            try:
                response = yield from self._send(node, call, deadline, backoff, reroute=True)
            except Disconnected:
                self.cache.invalidate_topic(topic)
                continue
            code = error_of(response)
            if code not in LEADERSHIP_MOVED:
                return response
            self.cache.invalidate_topic(topic)
            what = f"{api_label(call.api_key)} to {topic}-{partition} at {node.address}"
            yield from self._retry_or_raise(code, what, deadline, backoff)

    def to_leaders(
        self,
        partitions: Iterable[TopicPartition],
        build: Callable[[Sequence[TopicPartition]], Call],
        errors_of: Callable[[Any], Mapping[TopicPartition, int]],
    ) -> Op[dict[TopicPartition, Any]]:
        """One request per leader, `build(partitions it leads)`; the response that
        answered each partition. Partitions whose error (by `errors_of`) says the
        leader moved are resent after a metadata refresh; past the deadline their
        response (with that error) is returned."""
        deadline, backoff = self._budget()
        pending = sorted(set(partitions))
        answered: dict[TopicPartition, Any] = {}
        while pending:
            by_leader: dict[Node, list[TopicPartition]] = {}
            for tp in pending:
                node = yield from self._leader(tp[0], tp[1], deadline, backoff)
                by_leader.setdefault(node, []).append(tp)
            retry: list[TopicPartition] = []
            for node, group in by_leader.items():
                try:
                    response = yield from self._send(
                        node, build(group), deadline, backoff, reroute=True
                    )
                except Disconnected:
                    retry.extend(group)
                    continue
                errors = errors_of(response)
                for tp in group:
                    if errors.get(tp, ErrorCode.none) in LEADERSHIP_MOVED and not deadline.expired:
                        retry.append(tp)
                    else:
                        answered[tp] = response
            for topic in {tp[0] for tp in retry}:
                self.cache.invalidate_topic(topic)
            pending = sorted(retry)
            if pending:
                log.info("leaders of %s moved; refreshing metadata", pending)
                yield Sleep(deadline.cap(backoff.next_ms()))
        return answered

    def to_coordinator(
        self, key: str, call: Call, error_of: ErrorOf, *, key_type: int = GROUP_KEY_TYPE
    ) -> Op[Any]:
        """`call` to the coordinator of `key` (a group id by default). NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE or a lost coordinator: look it up again and resend;
        COORDINATOR_LOAD_IN_PROGRESS: resend to it. Past the deadline it is raised."""
        deadline, backoff = self._budget()
        while True:
            node = yield from self._coordinator(key, key_type, deadline, backoff)
            try:
                response = yield from self._send(node, call, deadline, backoff, reroute=True)
            except Disconnected:
                self.cache.forget_coordinator(key, key_type)
                continue
            code = error_of(response)
            if code not in COORDINATOR_MOVED and code not in COORDINATOR_LOADING:
                return response
            if code in COORDINATOR_MOVED:
                self.cache.forget_coordinator(key, key_type)
            what = f"{api_label(call.api_key)} for '{key}' at {node.address}"
            yield from self._retry_or_raise(code, what, deadline, backoff)

    # ---- building blocks (share the caller's deadline and backoff)

    def _send(
        self,
        node: Node | None,
        call: Call,
        deadline: Deadline,
        backoff: Backoff,
        *,
        reroute: bool = False,
    ) -> Op[Any]:
        return (yield from self._attempt(node, call, deadline, backoff, reroute=reroute))

    def _attempt(
        self,
        node: Node | None,
        call: Call | None,
        deadline: Deadline,
        backoff: Backoff,
        *,
        reroute: bool,
    ) -> Op[Any]:
        """Send `call` (or only connect, when None) to `node` or any broker, retrying on
        `Disconnected` until the deadline. With `reroute`, a `Disconnected` is re-raised
        (after the pause) so the caller can look for the node again."""
        candidates = [node] if node is not None else self._any_nodes()
        attempt = 0
        while True:
            target = candidates[attempt % len(candidates)]
            try:
                if call is None:
                    timeout_ms = deadline.cap(self.settings.request_timeout_ms)
                    return (yield Connect(target, max(1, timeout_ms)))
                timeout_ms = deadline.cap(self.settings.request_timeout_ms + call.wait_ms)
                return (yield Send(target, call, max(1, timeout_ms)))
            except Disconnected as exc:
                attempt += 1
                if deadline.expired:
                    raise _final(exc, call, deadline, candidates) from None
                what = api_label(call.api_key) if call is not None else "connect"
                log.info("%s to %s failed (%s); retrying", what, target.address, exc.reason)
                if node is not None or attempt % len(candidates) == 0:
                    yield Sleep(deadline.cap(backoff.next_ms()))
                if reroute:
                    raise

    def _any_nodes(self) -> list[Node]:
        """The bootstrap brokers, then the others metadata has named."""
        known = {n.key for n in self.bootstrap}
        return self.bootstrap + [n for n in self.cache.brokers() if n.key not in known]

    def _retry_or_raise(
        self, code: int, what: str, deadline: Deadline, backoff: Backoff
    ) -> Op[None]:
        if deadline.expired:
            raise KafkaError(
                code, None, context=f"{what}, still failing after {deadline.timeout_ms} ms"
            )
        log.info("%s: %s; retrying", what, error_name(code))
        yield Sleep(deadline.cap(backoff.next_ms()))

    def _metadata(
        self, topics: Sequence[str] | None, deadline: Deadline, backoff: Backoff
    ) -> Op[ClusterView]:
        response = yield from self._send(None, requests.metadata(topics), deadline, backoff)
        view = cluster_view(response)
        self.cache.update(view)
        return view

    def _leader(self, topic: str, partition: int, deadline: Deadline, backoff: Backoff) -> Op[Node]:
        node = self.cache.leader(topic, partition)
        while node is None:
            view = yield from self._metadata([topic], deadline, backoff)
            found = view.topics.get(topic)
            code = ErrorCode.unknown_topic_or_partition if found is None else found.error_code
            if code == ErrorCode.none and found is not None:
                if partition not in found.partitions:
                    raise KafkaError(
                        ErrorCode.unknown_topic_or_partition,
                        f"topic '{topic}' has no partition {partition}",
                    )
                node = self.cache.leader(topic, partition)
                if node is not None:
                    return node
                code = ErrorCode.leader_not_available
            if code not in LEADERSHIP_MOVED:
                raise KafkaError(code, None, context=f"topic '{topic}'")
            yield from self._retry_or_raise(
                code, f"leader of {topic}-{partition}", deadline, backoff
            )
        return node

    def _coordinator(
        self, key: str, key_type: int, deadline: Deadline, backoff: Backoff
    ) -> Op[Node]:
        while True:
            node = self.cache.coordinator(key, key_type)
            if node is not None:
                return node
            call = requests.find_coordinator(key, key_type=key_type)
            response = yield from self._send(None, call, deadline, backoff)
            found = requests.found_coordinator(response)
            if found.error_code == ErrorCode.none:
                self.cache.set_coordinator(key, found.node, key_type)
                return found.node
            code = found.error_code
            if code not in COORDINATOR_MOVED and code not in COORDINATOR_LOADING:
                raise KafkaError(code, found.error_message, context=f"coordinator of '{key}'")
            yield from self._retry_or_raise(code, f"coordinator of '{key}'", deadline, backoff)


def _final(
    exc: Disconnected, call: Call | None, deadline: Deadline, tried: list[Node]
) -> ClientError:
    """The user-facing error once the deadline has passed."""
    what = api_label(call.api_key) if call is not None else "a connection"
    if exc.phase == "timeout":
        return RequestTimeout(
            f"no answer to {what} from {exc.node.address} within the "
            f"{deadline.timeout_ms} ms timeout ({exc.reason})"
        )
    if exc.phase == "request":
        return BrokerUnreachable(
            f"lost the connection to {exc.node.address} during {what} and could not "
            f"resend it within {deadline.timeout_ms} ms: {exc.reason}"
        )
    where = ",".join(n.address for n in tried)
    return BrokerUnreachable(
        f"cannot reach the broker at {where} within {deadline.timeout_ms} ms "
        f"(last error: {exc.reason})"
    )


def router_for(
    bootstrap: str | Sequence[Node], *, settings: ClientSettings, clock: Clock | None
) -> Router:
    """The Router both drivers build from their constructor arguments."""
    nodes = parse_bootstrap(bootstrap) if isinstance(bootstrap, str) else list(bootstrap)
    return Router(nodes, settings=settings, clock=clock or SystemClock())
