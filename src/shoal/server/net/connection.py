"""One client connection: read frames, dispatch them in order, write responses.

As in Kafka, a connection is served one request at a time: the next frame is read
only after the previous response is written, so responses leave in request order and
a client's pipelined requests queue in the socket (the client's own in-flight limit
bounds them). Connections are independent tasks, so a parked Fetch on one never
delays another. Frames are read with the one size-prefix reader's
bounds (`shoal.protocol.framing.FrameDecoder.frame_size`): what the stream reader
holds is taken at once (a frame's size and body together, usually), and the rest of
a frame not yet whole is read exactly.

Peer errors close the connection with a logged reason: a frame size below a header
(`MIN_FRAME_BYTES`) or above `socket.request.max.bytes`, an unknown API key, a version
the API does not serve (unless its module declared a fallback in the registry, as
ApiVersions does), a request that fails to decode or that a handler finds Kafka could
not parse (it raises `codec.ProtocolError`). After a SaslHandshake v0 the frames are
bare SASL tokens until the exchange ends (server/net/sasl.py `raw_token`). A handler that
raises is our bug: it is logged with its context and the connection is closed; the
broker and other connections carry on.

Turns: a request whose bytes are already buffered is read without suspending, and a
handler with nothing to wait for and a write below the high-water mark do not
suspend either, so a client's pipelined requests would be served back to back while
every other connection and woken fetch waits (hundreds of ms for a linger-0 producer
that fell behind). A connection that has served for `limits.CONNECTION_TURN_MS`
without suspending yields one loop pass. A turn starts after that pass, and at a
frame the connection waited for (`_read_frame`): a connection whose requests come
one at a time, with the loop run between them, never needs the extra pass. (Yielding
after every request, Kafka's one request per connection per poll, was tried and made
polls small: docs/performance/latency.md.)

Pipelined requests are answered in one write: while the next request's frame is
already whole in hand (it came in the same read), a response is held and leaves with
the next ones, in order, in one `writelines` (one send for the lot instead of one
each: a linger-0 producer that got ahead pipelines its Produce requests). Held
responses are written before the connection can suspend (the next frame not whole,
the end of a turn, a mute), before a request whose handler may wait on purpose (the
registry's `parks`: Fetch and ShareFetch up to their max_wait, JoinGroup and SyncGroup
until the rebalance; Kafka's processor sends each response as soon as its handler is
done, so a Metadata answer never waits for the long poll pipelined after it), past
`limits.CONNECTION_HELD_RESPONSE_BYTES_MAX`, and when the connection ends unless it is
aborted. (The latency trace and the record path
count a held response as written when it is held.)

Deadlines (decided in server/net/idle.py, enforced by the broker's sweep):
the loop keeps `info.last_active_ms`, `frame_started_ms` (a frame's size has arrived,
the rest has not) and `write_started_ms` (a response waits for the client to read it;
the write buffer's high-water mark is `limits.CONNECTION_WRITE_BUFFER_HIGH_BYTES`, and
no further request is read meanwhile). A connection closed by the sweep is cancelled
with `info.close_reason` set and its transport aborted (unsent bytes dropped).

Shutdown cancels an idle connection at once (it closes after writing what it has
sent) and a busy one after `shoal.shutdown.timeout.ms`: that one is aborted, since a
client that stopped reading would never let its unsent bytes go.

With a share coordinator append linger (server/services/state_linger.py), a response waits
until the share state writes its request made are in the log; if they were lost
(the state partition went offline) the connection closes instead of answering.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from shoal import limits
from shoal.clock import Clock, measure_ns
from shoal.config import broker_keys
from shoal.coordinator.runtime import RecordSinkError
from shoal.protocol import codec
from shoal.protocol.framing import SIZE_BYTES, FrameDecoder
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.server.handler_services import Services
from shoal.server.net import sasl, throttle
from shoal.server.observability.latency_trace import (
    TRACE,
    trace_request_read,
    trace_response_written,
)
from shoal.server.observability.record_path import RECORD_PATH
from shoal.server.refused import CloseConnection
from shoal.server.registry import ApiHandler
from shoal.server.services.disk_io import ChangeLaneFull

log = logging.getLogger(__name__)
MIN_FRAME_BYTES = 8
"""The smallest request frame: api key, api version and correlation id (a header)."""
READ_BYTES = 1 << 16
"""The most bytes `_read_frame` takes from the stream reader at once (a frame's size
and body together, or several pipelined frames); the rest of a larger frame is read
exactly."""


class ConnectionClosed(Exception):
    """The connection must close; the message says why."""


async def serve_connection(
    *,
    services: Services,
    handlers: Mapping[int, ApiHandler],
    info: ConnectionInfo,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    on_closed: Callable[[ConnectionInfo], None],
) -> None:
    """Serve `info`'s requests until the peer leaves, breaks the protocol or the broker
    stops; `on_closed(info)` is called once the connection is done."""
    peer = f"{info.peer_host}:{info.peer_port}"
    decoder = FrameDecoder(
        max_bytes=services.config.current.get(broker_keys.SOCKET_REQUEST_MAX_BYTES),
        min_bytes=MIN_FRAME_BYTES,
    )
    metrics = services.metrics if services.metrics.enabled else None  # metrics.listener
    clock = services.clock
    transport = writer.transport
    turn_started_ms = clock.monotonic_ms()
    info.last_active_ms = turn_started_ms  # deadlines in server/net/idle.py
    transport.set_write_buffer_limits(high=limits.CONNECTION_WRITE_BUFFER_HIGH_BYTES)
    sasl_listener = info.security_protocol.startswith("SASL_")
    sasl_gate = services.sasl is not None and sasl_listener
    served: dict[int, ApiHandler] = {}  # _dispatch's versions checked as served
    received = _Received()
    held: list[bytes | memoryview] = []  # responses waiting to leave together
    abort = False
    try:
        while not services.stopping():
            raw_token = False
            if sasl_listener:  # small frames until authenticated
                decoder.max_bytes = sasl.frame_bytes_max(services.config.current, info)
                raw_token = sasl_gate and sasl.awaiting_raw_token(info)
                decoder.min_bytes = 0 if raw_token else MIN_FRAME_BYTES
            frame = await _read_frame(reader, decoder, received, info, peer, clock)
            if frame is None:
                return
            if raw_token:  # after SaslHandshake v0: a bare SASL token, not a request
                await _answer_raw_token(services, info, frame, writer, held)
                continue
            if received.waited:  # the loop ran the others meanwhile: a new turn
                turn_started_ms = clock.monotonic_ms()
            traced = TRACE.interval_s is not None  # TRACE.enabled, without its call
            recording = RECORD_PATH.path is not None  # RECORD_PATH.enabled, likewise
            started_ns = measure_ns() if traced or recording or metrics is not None else 0
            if recording:
                RECORD_PATH.request_read()
            if traced:
                api_key = codec.peek_key_version(frame)[0]
                api = codec.api_name(api_key) or f"api {api_key}"
                trace_request_read(api, started_ns)
            if held and _parks(handlers, frame):  # not behind a long poll: answers leave now
                await _write_held(writer, held, info, clock)
            response = await _dispatch(services, handlers, served, info, frame, traced, sasl_gate)
            if response is not None:
                held.append(response)
            if held and not _may_hold(held, received, decoder):
                await _write_held(writer, held, info, clock)
            if traced:
                trace_response_written(api, started_ns)
            if recording:
                RECORD_PATH.request_done(
                    codec.peek_key_version(frame)[0], info.connection_id, started_ns, measure_ns()
                )
            now_ms = info.last_active_ms = clock.monotonic_ms()
            if metrics is not None:
                metrics.request_done(frame, (measure_ns() - started_ns) / 1e9)
            info.busy = False
            turn_over = now_ms - turn_started_ms >= limits.CONNECTION_TURN_MS
            if held and (info.mute_ms > 0 or turn_over):
                await _write_held(writer, held, info, clock)  # before the loop runs others
            if info.sasl is not None and info.sasl.failed:  # close after the answer
                raise ConnectionClosed("SASL authentication failed")
            if info.mute_ms > 0:  # client quotas: KIP-219 channel muting
                mute_s, info.mute_ms = info.mute_ms / 1000, 0
                await asyncio.sleep(mute_s)
                turn_started_ms = now_ms = clock.monotonic_ms()
                turn_over = False
            if turn_over:
                await asyncio.sleep(0)  # let the loop run the others (module docstring)
                turn_started_ms = clock.monotonic_ms()
    except ConnectionClosed as exc:
        log.warning("closing connection %d from %s: %s", info.connection_id, peer, exc)
    except codec.ProtocolError as exc:
        log.warning("closing connection %d from %s: %s", info.connection_id, peer, exc)
    except (ConnectionError, TimeoutError) as exc:
        log.info("connection %d from %s lost: %s", info.connection_id, peer, exc)
    except asyncio.CancelledError:
        if info.close_reason is None:  # else the idle sweep logged why
            log.debug("connection %d from %s closed by shutdown", info.connection_id, peer)
            abort = info.busy  # shutdown gave up on its request: do not wait for the client
    finally:
        info.closed = True
        on_closed(info)
        if abort or info.close_reason is not None:
            transport.abort()  # unsent responses are dropped, not waited for
        elif held and not transport.is_closing():  # answers to the requests before the end
            writer.writelines(held)
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, TimeoutError):
            pass


async def _answer_raw_token(
    services: Services,
    info: ConnectionInfo,
    token: bytes,
    writer: asyncio.StreamWriter,
    held: list[bytes | memoryview],
) -> None:
    """Answer a bare SASL token (after SaslHandshake v0) with its bare challenge, after
    any held responses; a failed exchange closes the connection without an answer."""
    assert info.sasl is not None
    clock = services.clock
    config = services.config.current
    answer = await sasl.raw_token(config, info, info.sasl, token, clock.wall_ms())
    if info.sasl.failed:
        raise ConnectionClosed("SASL authentication failed")
    held.append(answer)
    await _write_held(writer, held, info, clock)
    info.busy = False
    info.last_active_ms = clock.monotonic_ms()


async def _write_held(
    writer: asyncio.StreamWriter,
    held: list[bytes | memoryview],
    info: ConnectionInfo,
    clock: Clock,
) -> None:
    """Hand the held responses to the socket in one write (emptying `held`); wait for
    a slow client to read them down below the high-water mark."""
    transport = writer.transport
    if transport.is_closing():  # uvloop raises RuntimeError on a write
        raise ConnectionResetError("the peer left before the answer was written")
    if len(held) == 1:
        writer.write(held[0])
    else:
        writer.writelines(held)
    held.clear()
    if transport.get_write_buffer_size() > 0:  # the client is slow
        info.write_started_ms = clock.monotonic_ms()
        await writer.drain()  # a client that never reads is closed by idle.py
        info.write_started_ms = None


def _parks(handlers: Mapping[int, ApiHandler], frame: bytes) -> bool:
    """The request in `frame` is of an API whose handler may wait on purpose (the
    registry's `parks`), so answers held for the pipeline must not wait for it."""
    handler = handlers.get(codec.KEY_AND_VERSION.unpack_from(frame, 0)[0])
    return handler is not None and handler.parks


def _may_hold(held: list[bytes | memoryview], received: _Received, decoder: FrameDecoder) -> bool:
    """The held responses may wait for the next request's: its frame is already whole
    in `received` (a client's pipelined requests came in one read, so it is served
    without suspending) and they are below `limits.CONNECTION_HELD_RESPONSE_BYTES_MAX`.
    A size out of bounds is not whole here: `_read_frame` closes the connection on it."""
    start = received.at
    data = received.held
    if not start or len(data) - start < SIZE_BYTES:
        return False
    try:
        size = decoder.frame_size(data, start)
    except codec.ProtocolError:
        return False
    if len(data) - start - SIZE_BYTES < size:
        return False
    return sum(map(len, held)) < limits.CONNECTION_HELD_RESPONSE_BYTES_MAX


class _Received:
    """One connection's bytes received but not yet served (`held[at:]`: the start of
    the next frames, from pipelined requests, kept as the chunk they came in and an
    offset so that many small frames are not copied again each), and what
    `_read_frame` knows of the stream reader's buffer."""

    __slots__ = ("at", "drained", "held", "waited")

    def __init__(self) -> None:
        self.held = b""
        self.at = 0
        self.drained = False
        """The last read took every byte the stream reader held (fewer than asked)."""
        self.waited = False
        """The frame last read was waited for: the connection suspended (its reader
        was empty), so the loop served the others meanwhile."""


async def _read_frame(
    reader: asyncio.StreamReader,
    decoder: FrameDecoder,
    received: _Received,
    info: ConnectionInfo,
    peer: str,
    clock: Clock,
) -> bytes | None:
    """The next request frame, None when the peer closed. `info.busy` is set once a
    frame's size is in hand (its request is then in hand until the response is
    written); `info.frame_started_ms` from then until the frame is whole
    (server/net/idle.py). What the stream reader holds is taken at once (up to
    `READ_BYTES`): a frame that arrived whole, the usual case, costs one read for its
    size and body; a frame's missing rest is read exactly.

    `received.waited` is set when a read began with the reader empty (the last read
    drained it and nothing was held): such a read suspends, since only the loop feeds
    the reader (the protocol's `data_received` is a loop callback), so the connection
    has given the loop to the others and its turn (module docstring) starts anew."""
    received.waited = False
    data, start = received.held, received.at
    while len(data) - start < SIZE_BYTES:  # the size prefix
        if received.drained:
            received.waited = True
        more = await reader.read(READ_BYTES)
        received.drained = len(more) < READ_BYTES
        if not more:
            if len(data) > start:
                log.info("connection %d from %s: closed mid size prefix", info.connection_id, peer)
            return None
        data, start = (data[start:] + more if len(data) > start else more), 0
    try:
        size = decoder.frame_size(data, start)
    except codec.ProtocolError as exc:
        raise ConnectionClosed(f"{exc} (socket.request.max.bytes)") from exc
    info.busy = True
    end = start + SIZE_BYTES + size
    length = len(data)
    if length >= end:  # received whole: no suspension
        if length == end:
            received.held, received.at = b"", 0
            return data[start + SIZE_BYTES :]
        received.held, received.at = data, end
        return data[start + SIZE_BYTES : end]
    received.held, received.at = b"", 0
    info.frame_started_ms = clock.monotonic_ms()
    if received.drained:
        received.waited = True
    try:
        rest = await reader.readexactly(end - length)
    except asyncio.IncompleteReadError:
        log.info(
            "connection %d from %s: closed mid frame of %d bytes", info.connection_id, peer, size
        )
        return None
    received.drained = False  # more may have come: unknown
    info.frame_started_ms = None
    return data[start + SIZE_BYTES :] + rest


async def _dispatch(
    services: Services,
    handlers: Mapping[int, ApiHandler],
    served: dict[int, ApiHandler],
    info: ConnectionInfo,
    frame: bytes,
    traced: bool,
    sasl_gate: bool,
) -> bytes | memoryview | None:
    """The response frame to `frame` (None for none). `served` keeps, per connection,
    the handler of each (key, version) already found served, so that a connection's
    next requests of it skip the table lookup and the version check. `sasl_gate`: the
    connection is on a SASL listener of a broker with SASL (the gate below)."""
    # the frame has at least MIN_FRAME_BYTES (_read_frame): no length check to repeat
    api_key, version = codec.KEY_AND_VERSION.unpack_from(frame, 0)
    served_key = api_key << 16 | version & 0xFFFF
    handler = served.get(served_key)
    supported = handler is not None
    if handler is None:
        handler = handlers.get(api_key)
        if handler is None:
            raise ConnectionClosed(f"unsupported api key {api_key} (v{version})")
        supported = (
            handler.min_version <= version <= handler.max_version
            and codec.request_class(api_key, version) is not None
        )
        if supported:
            served[served_key] = handler
    if sasl_gate:
        assert services.sasl is not None
        now_ms = services.clock.wall_ms()
        name = codec.api_name(api_key)
        refusal = services.sasl.refusal(services.config.current, info, api_key, name, now_ms)
        if refusal is not None:
            raise ConnectionClosed(refusal)
    header, body_offset = codec.decode_header(frame, api_key, version)
    correlation_id: int = header.correlation_id  # kio's int32
    ctx = RequestContext(
        services=services,
        connection=info,
        api_key=api_key,
        api_version=version,
        correlation_id=correlation_id,
        client_id=header.client_id,
    )
    if not supported:
        if handler.unsupported is None:
            advertised = handler.min_version <= version <= handler.max_version
            raise ConnectionClosed(
                f"unsupported version {version} of {codec.api_name(api_key)} "
                f"(serving {handler.min_version}-{handler.max_version}"
                f"{', this one advertised only, as Kafka does' if advertised else ''})"
            )
        response_version, fallback = handler.unsupported(ctx)
        return codec.encode_response(api_key, response_version, correlation_id, fallback)
    request = codec.decode_body(frame, body_offset, api_key, version)
    state_writes = services.state_writes
    staged = state_writes.mark()
    quotas = services.quotas
    timed = None
    try:
        if quotas is not None and quotas.request_quotas:  # request_percentage (throttle.py)
            timed = throttle.LoopTimed(handler.handle(ctx, request))
            response = await timed
        elif traced:
            with TRACE.stage(f"handle {codec.api_name(api_key)}"):
                response = await handler.handle(ctx, request)
        else:
            response = await handler.handle(ctx, request)
    except ChangeLaneFull as exc:  # a bound, not a bug: close with the reason
        raise ConnectionClosed(f"{codec.api_name(api_key)}: {exc}") from exc
    except CloseConnection as exc:  # the handler's answer is to close (refused.py)
        raise ConnectionClosed(f"{codec.api_name(api_key)}: {exc}") from exc
    except codec.ProtocolError:  # a request Kafka could not parse (e.g. acl_wire.py)
        raise
    except Exception as exc:  # our bug: log with context, close this connection only
        log.exception(
            "handler of %s v%d failed (connection %d, correlation %d, client %r)",
            codec.api_name(api_key),
            version,
            info.connection_id,
            correlation_id,
            header.client_id,
        )
        raise ConnectionClosed(f"internal error in {codec.api_name(api_key)}") from exc
    if state_writes.mark() != staged:
        try:
            with TRACE.stage("state write barrier"):
                await state_writes.written(staged)
        except RecordSinkError as exc:
            raise ConnectionClosed(
                f"share state written by {codec.api_name(api_key)} was lost: {exc}"
            ) from exc
    if response is None:
        return None
    if timed is not None:
        response = throttle.request_throttled(ctx, response, timed.ns)
    return codec.encode_response(api_key, version, correlation_id, response)
