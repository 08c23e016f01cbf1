"""One client connection: read frames, dispatch them in order, write responses.

As in Kafka, a connection is served one request at a time: the next frame is read
only after the previous response is written, so responses leave in request order and
a client's pipelined requests queue in the socket (the client's own in-flight limit
bounds them). Connections are independent tasks, so a parked Fetch on one never
delays another.

Peer errors close the connection with a logged reason: a frame size below a header or
above `socket.request.max.bytes`, an unknown API key or version (except ApiVersions,
which is answered in v0 with UNSUPPORTED_VERSION), a request that fails to decode.
A handler that raises is our bug: it is logged with its context and the connection is
closed; the broker and other connections carry on.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from shoal.protocol import codec
from shoal.server.context import ConnectionInfo, RequestContext

if TYPE_CHECKING:
    from shoal.server.broker import Broker

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")
_MIN_FRAME_BYTES = 8


class ConnectionClosed(Exception):
    """The connection must close; the message says why."""


async def serve_connection(
    broker: Broker,
    info: ConnectionInfo,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    peer = f"{info.peer_host}:{info.peer_port}"
    max_frame_bytes = int(broker.config["socket.request.max.bytes"])
    try:
        while not broker.stopping:
            try:
                size_bytes = await reader.readexactly(4)
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    log.info(
                        "connection %d from %s: closed mid size prefix", info.connection_id, peer
                    )
                return
            (size,) = _SIZE.unpack(size_bytes)
            if size < _MIN_FRAME_BYTES or size > max_frame_bytes:
                raise ConnectionClosed(
                    f"frame size {size} outside [{_MIN_FRAME_BYTES}, {max_frame_bytes}] "
                    "(socket.request.max.bytes)"
                )
            info.busy = True
            try:
                frame = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                log.info(
                    "connection %d from %s: closed mid frame of %d bytes",
                    info.connection_id,
                    peer,
                    size,
                )
                return
            response = await _dispatch(broker, info, frame)
            if response is not None:
                writer.write(response)
                await writer.drain()
            info.busy = False
    except ConnectionClosed as exc:
        log.warning("closing connection %d from %s: %s", info.connection_id, peer, exc)
    except codec.ProtocolError as exc:
        log.warning("closing connection %d from %s: %s", info.connection_id, peer, exc)
    except (ConnectionError, TimeoutError) as exc:
        log.info("connection %d from %s lost: %s", info.connection_id, peer, exc)
    except asyncio.CancelledError:
        log.debug("connection %d from %s closed by shutdown", info.connection_id, peer)
    finally:
        info.closed = True
        broker.connection_closed(info)
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, TimeoutError):
            pass


async def _dispatch(
    broker: Broker, info: ConnectionInfo, frame: bytes
) -> bytes | memoryview | None:
    api_key, version = codec.peek_key_version(frame)
    handler = broker.handlers.get(api_key)
    if handler is None:
        raise ConnectionClosed(f"unsupported api key {api_key} (v{version})")
    header, body_offset = codec.decode_header(frame, api_key, version)
    correlation_id = int(header.correlation_id)
    if not handler.supports(version) or codec.request_class(api_key, version) is None:
        if api_key == codec.API_VERSIONS_KEY:
            return _unsupported_api_versions(broker, correlation_id, version)
        raise ConnectionClosed(
            f"unsupported version {version} of {codec.api_name(api_key)} "
            f"(serving {handler.min_version}-{handler.max_version})"
        )
    request = codec.decode_body(frame, body_offset, api_key, version)
    ctx = RequestContext(
        broker=broker,
        connection=info,
        api_key=api_key,
        api_version=version,
        correlation_id=correlation_id,
        client_id=header.client_id,
    )
    try:
        response = await handler.handle(ctx, request)
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
    if response is None:
        return None
    return codec.encode_response(api_key, version, correlation_id, response)


def _unsupported_api_versions(broker: Broker, correlation_id: int, version: int) -> memoryview:
    """Kafka's answer to ApiVersions at a version it does not know: a v0 body with
    UNSUPPORTED_VERSION and the full key list, so the client can pick a version."""
    from shoal.server.handlers.api_versions import api_versions_response

    log.info("ApiVersions v%d is not supported; answering in v0", version)
    response = api_versions_response(broker, 0, error=ErrorCode.unsupported_version)
    return codec.encode_response(codec.API_VERSIONS_KEY, 0, correlation_id, response)
