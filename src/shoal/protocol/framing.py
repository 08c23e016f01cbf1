"""Kafka's size-prefixed framing, sans-I/O: the one frame reader of Shoal.

Every Kafka message travels as an int32 size followed by that many bytes. The broker
(requests) and the client (responses) both read frames through `FrameDecoder`: bytes
in, whole frames out, with bounds checked before a frame's bytes are buffered. The
writer side is `encode_size` / `SIZE` (codec.py prefixes whole messages).

A size outside `[min_bytes, max_bytes]` is the peer's fault: `ProtocolError`, and the
connection closes.
"""

from __future__ import annotations

from collections.abc import Iterator

from shoal.protocol.codec import SIZE, ProtocolError

SIZE_BYTES = SIZE.size


class FrameDecoder:
    """Buffers received bytes and yields complete frames (without their size prefix).

    `feed(data)` appends bytes; `frames()` yields every complete frame so far, in order;
    `next_frame()` returns one or None. `wanted` says how many more bytes would complete
    the frame in hand, so a reader can ask the transport for exactly that much.
    """

    def __init__(self, *, max_bytes: int, min_bytes: int = 0, what: str = "frame") -> None:
        assert 0 <= min_bytes <= max_bytes
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self._what = what
        self._buffer = bytearray()
        self._size: int | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    @property
    def mid_frame(self) -> bool:
        """Some bytes of an incomplete frame (or its size) are buffered."""
        return bool(self._buffer)

    @property
    def wanted(self) -> int:
        """Bytes still missing for the frame in hand (its size prefix first)."""
        if self._size is None:
            return SIZE_BYTES - len(self._buffer) if len(self._buffer) < SIZE_BYTES else 0
        return max(0, SIZE_BYTES + self._size - len(self._buffer))

    def next_frame(self) -> bytes | None:
        if self._size is None:
            if len(self._buffer) < SIZE_BYTES:
                return None
            self._size = self.frame_size(self._buffer)
        end = SIZE_BYTES + self._size
        if len(self._buffer) < end:
            return None
        frame = bytes(self._buffer[SIZE_BYTES:end])
        del self._buffer[:end]
        self._size = None
        return frame

    def frame_size(self, prefix: bytes | bytearray, offset: int = 0) -> int:
        """The size the int32 at `offset` of `prefix` announces, checked against the
        bounds (`ProtocolError` outside them). `next_frame` reads sizes with it, and so
        does a reader that takes a frame's prefix and body from the transport itself
        (server/net/connection.py), without buffering them here."""
        size: int = SIZE.unpack_from(prefix, offset)[0]
        if not self.min_bytes <= size <= self.max_bytes:
            raise ProtocolError(
                f"{self._what} size {size} outside [{self.min_bytes}, {self.max_bytes}]"
            )
        return size

    def frames(self) -> Iterator[bytes]:
        while (frame := self.next_frame()) is not None:
            yield frame

    @property
    def pending_size(self) -> int | None:
        """The size of the frame in hand once its prefix is read (for logging)."""
        return self._size


def encode_size(size: int) -> bytes:
    return SIZE.pack(size)
