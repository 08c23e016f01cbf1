"""Request and response encoding through kio, with Kafka's header rules. Sans-I/O.

A request frame (after the int32 size) is a request header followed by the body.
The header version follows the body's: v2 (tagged fields) for flexible versions, v1
otherwise. A response header is v1 for flexible versions and v0 otherwise, except
that ApiVersions responses always use v0, so a client that does not yet know the
broker's versions can read them.

Kafka skips tagged fields it does not know, in the header and at every struct level of
a flexible body; kio's reader raises on them. The walk that checks counts anyway finds
them (`protocol/walk.py`, generated per request class from `counts`' rules; for the
header, `counts.scan` after kio refused it), and when it does (rare: no client sends
any today) the header or body is decoded from a copy without them.

Kafka's APIs come from kio's index; Shoal's extension APIs (`protocol/extensions`,
declared as kio declares Kafka's) are merged into it (`API_NAMES`, `SCHEMA_NAMES`), so
both are read and written by kio's generic readers and writers.

Errors raised here are the peer's fault (`ProtocolError`): the server closes the
connection and logs the reason.
"""

from __future__ import annotations

import importlib
import io
import logging
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader
from kio.static.constants import EntityType
from kio.static.primitive import i32

from shoal.protocol import counts, extensions, fast_writer, nulls, walk

log = logging.getLogger(__name__)
assert not set(extensions.API_KEYS) & set(api_key_map), "an extension key is Kafka's"
API_NAMES: dict[int, str] = {**api_key_map, **extensions.API_KEYS}
"""api key -> name of every API Shoal can encode: kio's and Shoal's extensions."""
SCHEMA_NAMES: dict[str, Any] = {**schema_name_map, **extensions.SCHEMAS}
"""name -> version -> direction -> "module:class", kio's shape (kio.schema.index)."""
API_VERSIONS_KEY = 18
KEY_AND_VERSION = struct.Struct(">hh")
"""The int16 api key and int16 version at the start of a request frame."""
SIZE = struct.Struct(">i")
"""The int32 size prefix of every Kafka message (framing.py reads it)."""


class ProtocolError(Exception):
    """The peer sent something that is not valid Kafka protocol; close the connection."""


@cache
def api_name(api_key: int) -> str | None:
    return API_NAMES.get(api_key)


def _entity_class(api_key: int, version: int, entity_type: EntityType) -> Any:
    name = API_NAMES.get(api_key)
    if name is None or version not in SCHEMA_NAMES[name]:
        return None
    module_name, class_name = SCHEMA_NAMES[name][version][entity_type].split(":", 1)
    return getattr(importlib.import_module(module_name), class_name)


_REQUEST_CLASSES: dict[tuple[int, int], Any] = {}
_RESPONSE_CLASSES: dict[tuple[int, int], Any] = {}
_FLEXIBLE: dict[tuple[int, int], bool] = {}
"""Per (key, version) kio knows, filled on first use: plain dicts keyed by ints, since
these are looked up on every request (a cache keyed by the `EntityType` enum hashes it
in Python). A version kio does not know is not kept: a peer picks those."""


def request_class(api_key: int, version: int) -> Any:
    """The kio request dataclass for (key, version), or None if kio has none."""
    key = (api_key, version)
    cls = _REQUEST_CLASSES.get(key)
    if cls is None:
        cls = _entity_class(api_key, version, EntityType.request)
        if cls is not None:
            _REQUEST_CLASSES[key] = cls
    return cls


def response_class(api_key: int, version: int) -> Any:
    """The kio response dataclass for (key, version)."""
    key = (api_key, version)
    cls = _RESPONSE_CLASSES.get(key)
    if cls is None:
        cls = _entity_class(api_key, version, EntityType.response)
        assert cls is not None, f"no response schema for api {api_key} v{version}"
        _RESPONSE_CLASSES[key] = cls
    return cls


_READERS: dict[Any, Callable[[Any, int], tuple[Any, int]]] = {}


def request_reader(cls: Any) -> Callable[[Any, int], tuple[Any, int]]:
    """kio's decoder of `cls`, built once (schema.preload builds them at start)."""
    return _reader(cls)


def _reader(cls: Any) -> Callable[[Any, int], tuple[Any, int]]:
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    return reader


def _writer(cls: Any) -> Callable[[Any, Any], None]:
    """kio's encoding of `cls`, composed for speed (protocol/fast_writer.py)."""
    return fast_writer.entity_writer(cls)


def is_flexible(api_key: int, version: int) -> bool:
    key = (api_key, version)
    flexible = _FLEXIBLE.get(key)
    if flexible is not None:
        return flexible
    cls = request_class(api_key, version)
    if cls is None:
        # Unknown version: Kafka assumes the newest header for versions past the
        # newest it knows, so that it can answer ApiVersions with UNSUPPORTED_VERSION.
        return version >= 3 if api_key == API_VERSIONS_KEY else False
    flexible = _FLEXIBLE[key] = bool(cls.__flexible__)
    return flexible


def peek_key_version(frame: bytes) -> tuple[int, int]:
    """The api key and version at the start of a request frame."""
    if len(frame) < 8:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a header")
    key, version = KEY_AND_VERSION.unpack_from(frame, 0)
    return int(key), int(version)


def decode_header(frame: bytes, api_key: int, version: int) -> tuple[Any, int]:
    """Decode the request header; returns (header, offset of the body)."""
    flexible = _FLEXIBLE.get((api_key, version))
    if flexible is None:
        flexible = is_flexible(api_key, version)
    if not flexible:
        try:
            return _READ_HEADER_V1(frame, 0)
        except Exception as exc:  # kio raises several types for malformed input
            raise ProtocolError(f"malformed request header: {exc}") from exc
    try:  # no tagged fields, the usual case: kio reads it as it is
        return _READ_HEADER_V2(frame, 0)
    except Exception as exc:  # noqa: BLE001  # kio's refusal, kept for the end
        refusal = exc
    # kio refuses unknown tagged fields, which Kafka skips: walk the header for them
    try:
        end, edits = counts.scan(RequestHeaderV2, frame, 0)
    except counts.CountError as exc:
        raise ProtocolError(f"malformed request header: {exc}") from exc
    if not edits:
        raise ProtocolError(f"malformed request header: {refusal}") from refusal
    try:
        header, _ = _READ_HEADER_V2(counts.strip(frame, 0, end, edits), 0)
    except Exception as exc:  # kio raises several types for malformed input
        raise ProtocolError(f"malformed request header: {exc}") from exc
    _log_skipped("request header", edits)
    return header, end


_READ_HEADER_V1 = _reader(RequestHeaderV1)
_READ_HEADER_V2 = _reader(RequestHeaderV2)


def _log_skipped(what: str, edits: list[counts.Edit]) -> None:
    skipped = sum(1 for _, _, new in edits if not new)
    log.debug("%s: skipped %d unknown tagged field(s) as Kafka does", what, skipped)


Reader = Callable[[Any, int], tuple[Any, int]]
_BODY_PLANS: dict[tuple[int, int], tuple[walk.Walk, Reader]] = {}
"""Per (key, version) decoded: its request class's walk and kio's reader of it."""


def prepare_decode(api_key: int, version: int) -> None:
    """Build the decode plan of a known (key, version) now (its generated walk takes
    ~0.5-2 ms), so that its first request does not pay for it (server/net/warmup.py)."""
    if (api_key, version) not in _BODY_PLANS:
        _body_plan(api_key, version)


def _body_plan(api_key: int, version: int) -> tuple[walk.Walk, Reader]:
    cls = request_class(api_key, version)
    assert cls is not None
    plan = _BODY_PLANS[(api_key, version)] = (walk.walker(cls), _reader(cls))
    return plan


def decode_body(frame: bytes, offset: int, api_key: int, version: int) -> Any:
    """Decode a request body of a known (key, version)."""
    plan = _BODY_PLANS.get((api_key, version))
    walk_body, read_body = plan if plan is not None else _body_plan(api_key, version)
    try:  # before kio reserves memory by counts (protocol/walk.py)
        end, edits, suspect = walk_body(frame, offset)
    except counts.CountError as exc:
        raise ProtocolError(f"malformed {api_name(api_key)} v{version} body: {exc}") from exc
    data: bytes = frame
    if edits:  # unknown tagged fields: decode a copy without them, as Kafka skips them
        _log_skipped(f"{api_name(api_key)} v{version}", edits)
        data = frame = counts.strip(frame, offset, end, edits)
        offset = 0
    try:
        body, size = read_body(data, offset)
    except Exception as exc:  # kio raises several types for malformed input
        raise ProtocolError(f"malformed {api_name(api_key)} v{version} body: {exc}") from exc
    null = nulls.null_field(body) if suspect else None  # a null length was on the wire
    if null is not None:  # Kafka refuses these while parsing (protocol/nulls.py)
        raise ProtocolError(f"non-nullable field {null} of {api_name(api_key)} v{version} is null")
    if offset + size != len(frame):
        # Kafka ignores bytes after the last field, and librdkafka 2.16 relies on it: its
        # all-topics Metadata v13 carries the null topic array as a varint padded to four
        # bytes, leaving three bytes over. Every field has been read at this point.
        log.debug(
            "%s v%d body left %d bytes unread; ignored as Kafka does",
            api_name(api_key),
            version,
            len(frame) - offset - size,
        )
    return body


def encode_response(
    api_key: int, version: int, correlation_id: int, response: Any
) -> bytes | memoryview:
    """Size-prefixed response frame: response header + body (a view of the encoded
    buffer, so large fetch responses are not copied once more)."""
    cls = type(response)
    plan = _RESPONSE_PLANS.get(cls)
    if plan is None or plan[0] != api_key:
        plan = _response_plan(api_key, cls)
    _, pack_header, header_size, write_body = plan
    # The size and the header, packed from the correlation id (the request header's
    # int32, read by kio: no phantom check) without a header entity.
    body = _BODIES.get(cls)
    if body is not None and body[0] is response:  # a constant body: one concatenation
        return pack_header(header_size + len(body[1]), correlation_id) + body[1]
    buffer = io.BytesIO()
    buffer.write(pack_header(0, correlation_id))  # the size is filled in below
    write_body(buffer, response)
    frame = buffer.getbuffer()
    SIZE.pack_into(frame, 0, len(frame) - 4)
    return frame


_SIZE_AND_HEADER_V0 = struct.Struct(">i" + fast_writer.fixed_codes(ResponseHeaderV0))
_SIZE_AND_HEADER_V1 = struct.Struct(">i" + fast_writer.fixed_codes(ResponseHeaderV1))
ResponsePlan = tuple[int, Callable[[int, int], bytes], int, Callable[[Any, Any], None]]
_RESPONSE_PLANS: dict[type[Any], ResponsePlan] = {}
"""Per response class: (the api key it was planned for, the packer of the size prefix
and the header of its header version, that header's size, the composed body writer),
built on first use. A class belongs to one API; the key is checked all the same (the
header version depends on it), and a class met under another key is planned again."""


def _response_plan(api_key: int, cls: type[Any]) -> ResponsePlan:
    """The header version as Kafka's rules say (module docstring): v1 for a flexible
    response, except ApiVersions' (always v0)."""
    header = (
        _SIZE_AND_HEADER_V1
        if cls.__flexible__ and api_key != API_VERSIONS_KEY
        else _SIZE_AND_HEADER_V0
    )
    plan = (api_key, header.pack, header.size - SIZE.size, fast_writer.entity_writer(cls))
    _RESPONSE_PLANS[cls] = plan
    return plan


_BODIES: dict[type[Any], tuple[Any, bytes]] = {}
"""Per response class, the one constant response `constant_body` encoded, and its bytes."""


def constant_body(response: Any) -> Any:
    """Returns `response` (a frozen kio response a handler keeps and answers with
    again and again, such as ApiVersions') after encoding its body once: while it is
    the one kept for its class, `encode_response` copies those bytes instead of
    walking the entity. One per class: keeping another replaces it (and the identity
    check makes a stale one impossible to send)."""
    kept = _BODIES.get(type(response))
    if kept is None or kept[0] is not response:
        buffer = io.BytesIO()
        fast_writer.entity_writer(type(response))(buffer, response)
        _BODIES[type(response)] = (response, buffer.getvalue())
    return response


def encode_request(header: Any, request: Any) -> bytes:
    """Size-prefixed request frame; used by Shoal's own client and tests."""
    buffer = io.BytesIO()
    buffer.write(b"\x00\x00\x00\x00")
    _writer(type(header))(buffer, header)
    _writer(type(request))(buffer, request)
    frame = buffer.getbuffer()
    SIZE.pack_into(frame, 0, len(frame) - 4)
    return bytes(frame)


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """Decode a response frame (without its size prefix): (correlation id, body)."""
    cls = response_class(api_key, version)
    flexible_header = cls.__flexible__ and api_key != API_VERSIONS_KEY
    header_cls = ResponseHeaderV1 if flexible_header else ResponseHeaderV0
    header, offset = _reader(header_cls)(frame, 0)
    body, _ = _reader(cls)(memoryview(frame)[offset:], 0)
    return int(header.correlation_id), body


def request_header_for(api_key: int, version: int, correlation_id: int, client_id: str) -> Any:
    """A request header of the right version for (key, version)."""
    from kio.static.primitive import i16

    header_cls = RequestHeaderV2 if is_flexible(api_key, version) else RequestHeaderV1
    return header_cls(
        request_api_key=i16(api_key),
        request_api_version=i16(version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
