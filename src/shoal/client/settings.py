"""The client's named limits and timings, and the two clocks-on-data it reasons with.

Every value is a Kafka client setting under Kafka's name (in the docstring), with
Kafka's default unless noted. `Deadline` (a whole API call, retries included) and
`Backoff` (the pause between retries) read time only from the injected `Clock`, so
the retry logic runs on a manual clock in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shoal import __version__
from shoal.client.security import ClientSecurity
from shoal.clock import Clock

API_TIMEOUT_MS_DEFAULT = 30_000
"""`default.api.timeout.ms`: how long one client call may take, retries included.
Past it the call fails with `BrokerUnreachable`, `RequestTimeout` or the last
retriable `KafkaError`."""
REQUEST_TIMEOUT_MS_DEFAULT = 30_000
"""`request.timeout.ms`: how long one request waits for its response (a long-poll
request such as Fetch adds its own max wait)."""
RETRY_BACKOFF_MS_DEFAULT = 100
"""`retry.backoff.ms`: the first pause before retrying a failed connection or a
retriable error."""
RETRY_BACKOFF_MAX_MS_DEFAULT = 1_000
"""`retry.backoff.max.ms`: the pause doubles per retry up to this."""
RESPONSE_BYTES_MAX_DEFAULT = 256 * 2**20
"""The largest response frame accepted (Shoal's own bound; Kafka's clients have none).
A bigger size prefix means a corrupt stream: protocol error, the connection closes."""
CLIENT_ID_DEFAULT = "shoal-client"
"""`client.id` sent in every request header."""
CLIENT_SOFTWARE_NAME = "shoal-client"
"""Sent in ApiVersions (v3+), the first request on every connection."""
CLIENT_SOFTWARE_VERSION = __version__


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    """What both drivers and the core share; see the constants above."""

    client_id: str = CLIENT_ID_DEFAULT
    api_timeout_ms: int = API_TIMEOUT_MS_DEFAULT
    request_timeout_ms: int = REQUEST_TIMEOUT_MS_DEFAULT
    retry_backoff_ms: int = RETRY_BACKOFF_MS_DEFAULT
    retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS_DEFAULT
    response_bytes_max: int = RESPONSE_BYTES_MAX_DEFAULT
    client_software_name: str = CLIENT_SOFTWARE_NAME
    client_software_version: str = CLIENT_SOFTWARE_VERSION
    security: ClientSecurity = field(default_factory=ClientSecurity)

    def __post_init__(self) -> None:
        assert self.api_timeout_ms > 0, self
        assert self.request_timeout_ms > 0, self
        assert 0 <= self.retry_backoff_ms <= self.retry_backoff_max_ms, self
        assert self.response_bytes_max > 0, self


class Deadline:
    """The end of one API call: `timeout_ms` after it was made, on `clock`."""

    def __init__(self, clock: Clock, timeout_ms: int) -> None:
        assert timeout_ms > 0
        self._clock = clock
        self.timeout_ms = timeout_ms
        self.end_ms = clock.monotonic_ms() + timeout_ms

    @property
    def remaining_ms(self) -> int:
        return max(0, self.end_ms - self._clock.monotonic_ms())

    @property
    def expired(self) -> bool:
        return self.remaining_ms == 0

    def cap(self, ms: int) -> int:
        """`ms`, but no later than the deadline."""
        return min(ms, self.remaining_ms)


class Backoff:
    """Exponential pauses: `initial_ms`, doubled per retry, at most `max_ms` (no jitter:
    the client stays deterministic)."""

    def __init__(self, *, initial_ms: int, max_ms: int) -> None:
        assert 0 <= initial_ms <= max_ms
        self._next_ms = initial_ms
        self._max_ms = max_ms

    def next_ms(self) -> int:
        pause_ms = self._next_ms
        self._next_ms = min(max(1, self._next_ms * 2), self._max_ms)
        return pause_ms


def settings_with(
    settings: ClientSettings | None,
    *,
    client_id: str | None = None,
    api_timeout_ms: int | None = None,
    request_timeout_ms: int | None = None,
) -> ClientSettings:
    """`settings` (default: all defaults) with the drivers' common keywords applied."""
    base = settings or ClientSettings()
    changes: dict[str, object] = {
        name: value
        for name, value in (
            ("client_id", client_id),
            ("api_timeout_ms", api_timeout_ms),
            ("request_timeout_ms", request_timeout_ms),
        )
        if value is not None
    }
    return replace(base, **changes)  # type: ignore[arg-type]
