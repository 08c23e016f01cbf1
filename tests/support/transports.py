"""Stand-ins for an asyncio transport under `serve_connection`, for tests and benches
that drive the connection loop in process."""

from __future__ import annotations


class DrainedTransport:
    """A transport whose client reads at once: nothing is ever left unsent, never closing."""

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return None

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        return None
