"""The durable client quota set (on the metadata log; an old client-quotas.json is
migrated) and the service Produce, Fetch and ShareFetch record into: alter and
describe semantics, durability, the limits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shoal.config import BrokerConfig
from shoal.security.quota import entity
from shoal.server.metadata.migration import MIGRATED_SUFFIX, QUOTAS_FILE
from shoal.server.metadata.quota_store import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MatchComponent,
    QuotaOp,
    QuotaService,
    filter_problem,
)
from tests.support.metadata import metadata_at, open_metadata

P, C = "producer_byte_rate", "consumer_byte_rate"


def service(tmp_path: Path, *extra: tuple[str, str], entities_max: int = 100) -> QuotaService:
    config = BrokerConfig.from_raw({"log.dirs": str(tmp_path), **dict(extra)})
    return QuotaService(
        metadata=metadata_at(tmp_path),
        config=lambda: config,
        entities_max=entities_max,
    )


def put(key: str, value: float) -> QuotaOp:
    return QuotaOp(key, value, False)


def test_alter_is_durable_and_reloaded(tmp_path: Path) -> None:
    quotas = service(tmp_path)
    app = entity(client_id="app")
    both = (("user", "alice"), ("client-id", None))  # any order on the wire
    assert asyncio.run(
        quotas.alter([(app, [put(P, 100)]), (both, [put(C, 5)])], validate_only=False)
    ) == [
        None,
        None,
    ]
    again = service(tmp_path)
    assert again.quotas == {app: {P: 100.0}, entity(user="alice", client_id=None): {C: 5.0}}
    assert asyncio.run(again.alter([(app, [QuotaOp(P, 0, True)])], validate_only=False)) == [None]
    assert app not in service(tmp_path).quotas


def test_describe_matches_exact_default_any_and_strict(tmp_path: Path) -> None:
    quotas = service(tmp_path)
    named, default = entity(client_id="a"), entity(client_id=None)
    user_client = entity(user="u", client_id="a")
    asyncio.run(
        quotas.alter([(e, [put(P, 1)]) for e in (named, default, user_client)], validate_only=False)
    )

    def found(*components: MatchComponent, strict: bool = False) -> set[object]:
        return {e for e, _values in quotas.describe(components, strict=strict)}

    assert found(MatchComponent("client-id", MATCH_EXACT, "a")) == {named, user_client}
    assert found(MatchComponent("client-id", MATCH_EXACT, "a"), strict=True) == {named}
    assert found(MatchComponent("client-id", MATCH_DEFAULT, None)) == {default}
    assert found(MatchComponent("client-id", MATCH_ANY, None), strict=True) == {named, default}
    assert found(MatchComponent("user", MATCH_ANY, None)) == {user_client}
    assert found() == {named, default, user_client}


def test_a_refused_entry_changes_nothing_and_the_others_apply(tmp_path: Path) -> None:
    quotas = service(tmp_path)
    problems = asyncio.run(
        quotas.alter(
            [
                (entity(client_id="x"), [put(P, 10), put("connection_creation_rate", 5)]),
                (entity(client_id="y"), [put(P, 10)]),
            ],
            validate_only=False,
        )
    )
    assert problems[0] is not None and "connection_creation_rate" in problems[0]
    assert problems[1] is None
    assert set(quotas.quotas) == {entity(client_id="y")}


def test_validate_only_writes_nothing(tmp_path: Path) -> None:
    quotas = service(tmp_path)
    assert asyncio.run(
        quotas.alter([(entity(client_id="x"), [put(P, 1)])], validate_only=True)
    ) == [None]
    assert quotas.quotas == {} and quotas.metadata.partition.log_end_offset == 0


def test_the_entity_limit(tmp_path: Path) -> None:
    quotas = service(tmp_path, entities_max=2)
    problems = asyncio.run(
        quotas.alter(
            [(entity(client_id=name), [put(P, 1)]) for name in ("a", "b", "c")], validate_only=False
        )
    )
    assert problems[:2] == [None, None]
    assert problems[2] is not None and "Too many quota entities" in problems[2]
    # changing an existing entity is not a new one
    assert asyncio.run(
        quotas.alter([(entity(client_id="a"), [put(C, 1)])], validate_only=False)
    ) == [None]


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    quotas = service(tmp_path)
    quotas.metadata.partition.close()  # the log refuses every append now
    with pytest.raises(OSError):
        asyncio.run(quotas.alter([(entity(client_id="x"), [put(P, 1)])], validate_only=False))
    assert quotas.quotas == {}


def test_unreadable_and_oversized_files_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / QUOTAS_FILE
    path.write_text('{"version": 1, "quotas": [{"entity": [["ip", "1.2.3"]], "values": {}}]}')
    with pytest.raises(OSError, match="unreadable"):
        open_metadata(tmp_path).close()
    path.write_text('{"version": 1, "quotas": []}')
    monkeypatch.setattr("shoal.limits.QUOTA_FILE_BYTES_MAX", path.stat().st_size - 1)
    with pytest.raises(OSError, match="larger than"):
        open_metadata(tmp_path).close()


def test_an_old_quotas_file_is_migrated_once(tmp_path: Path) -> None:
    (tmp_path / QUOTAS_FILE).write_text(
        '{"version": 1, "quotas": [{"entity": [["client-id", "app"]], "values": {"'
        + P
        + '": 100}}, {"entity": [["user", "alice"], ["client-id", null]], "values": {"'
        + C
        + '": 5}}]}'
    )
    quotas = service(tmp_path)
    assert quotas.quotas == {
        entity(client_id="app"): {P: 100.0},
        entity(user="alice", client_id=None): {C: 5.0},
    }
    assert (tmp_path / (QUOTAS_FILE + MIGRATED_SUFFIX)).exists()
    assert not (tmp_path / QUOTAS_FILE).exists()
    asyncio.run(
        quotas.alter([(entity(client_id="app"), [QuotaOp(P, 0, True)])], validate_only=False)
    )
    assert set(service(tmp_path).quotas) == {entity(user="alice", client_id=None)}


def test_recording_uses_the_configured_window(tmp_path: Path) -> None:
    quotas = service(tmp_path, ("quota.window.num", "2"), ("quota.window.size.seconds", "1"))
    asyncio.run(
        quotas.alter([(entity(client_id="app"), [put(P, 1000), put(C, 500)])], validate_only=False)
    )
    # 3000 bytes over the 1 s minimum window: 3000 B/s, (3000 - 1000) / 1000 * 1000 ms
    assert quotas.produce_throttle_ms(user="u", client_id="app", size=3000, now_ms=0) == 2000
    assert quotas.produce_throttle_ms(user="u", client_id="other", size=10**9, now_ms=0) == 0
    assert quotas.fetch_bytes_max(user="u", client_id="app") == 500
    assert quotas.fetch_bytes_max(user="u", client_id="other") is None
    assert quotas.fetch_throttle_ms(user="u", client_id="app", size=1000, now_ms=0) == 1000
    quotas.fetch_unrecord(user="u", client_id="app", size=1000, now_ms=0)
    assert quotas.fetch_throttle_ms(user="u", client_id="app", size=500, now_ms=0) == 0


R, CCR = "request_percentage", "connection_creation_rate"


def test_request_percentage_throttles_by_handler_time(tmp_path: Path) -> None:
    """KIP-124: handler time as percent-seconds. With a 2 x 1 s window, 20% allows
    200 ms of handler time per second; 300 ms at once is 30%: (30 - 20) / 20 * 1000 ms."""
    quotas = service(tmp_path, ("quota.window.num", "2"), ("quota.window.size.seconds", "1"))
    assert not quotas.request_quotas
    assert quotas.request_throttle_ms(user="u", client_id="app", handler_ns=10**12, now_ms=0) == 0
    asyncio.run(quotas.alter([(entity(client_id="app"), [put(R, 20.0)])], validate_only=False))
    assert quotas.request_quotas and not quotas.ip_quotas
    ms = 1_000_000
    app = {"user": "u", "client_id": "app"}
    assert quotas.request_throttle_ms(**app, handler_ns=150 * ms, now_ms=0) == 0
    assert quotas.request_throttle_ms(**app, handler_ns=150 * ms, now_ms=0) == 500
    assert quotas.request_throttle_ms(user="u", client_id="other", handler_ns=10**12, now_ms=0) == 0
    # two windows later the time has expired: within the quota again
    assert quotas.request_throttle_ms(user="u", client_id="app", handler_ns=ms, now_ms=2000) == 0
    # a fractional percentage is valid (Kafka's request_percentage is a DOUBLE)
    assert asyncio.run(quotas.alter([(entity(user=None), [put(R, 0.5)])], validate_only=False)) == [
        None
    ]


def test_connection_creation_rate_per_ip(tmp_path: Path) -> None:
    """KIP-612: the ip's own quota, else the ip default, each ip with its own rate; a
    refused connection is taken back, so refusals do not prolong the throttling."""
    quotas = service(tmp_path, ("quota.window.num", "2"), ("quota.window.size.seconds", "1"))
    assert quotas.connection_throttle_ms(ip="10.0.0.1", now_ms=0) == (0, 0.0)
    ips = [(entity_ip("10.0.0.1"), [put(CCR, 3)]), (entity_ip(None), [put(CCR, 1)])]
    assert asyncio.run(quotas.alter(ips, validate_only=False)) == [None, None]
    assert quotas.ip_quotas and not quotas.request_quotas
    # 10.0.0.1: 3 per second over the 1 s minimum window
    assert [quotas.connection_throttle_ms(ip="10.0.0.1", now_ms=0)[0] for _ in range(4)] == [
        0,
        0,
        0,
        333,
    ]
    assert quotas.connection_throttle_ms(ip="10.0.0.1", now_ms=0) == (333, 3.0)  # not recorded
    # another ip has the default, 1 per second, and a rate of its own
    assert quotas.connection_throttle_ms(ip="10.0.0.2", now_ms=0) == (0, 1.0)
    assert quotas.connection_throttle_ms(ip="10.0.0.2", now_ms=0) == (1000, 1.0)
    assert quotas.connection_throttle_ms(ip="10.0.0.3", now_ms=0) == (0, 1.0)
    # after the window, 10.0.0.1 connects again
    assert quotas.connection_throttle_ms(ip="10.0.0.1", now_ms=2000) == (0, 3.0)


def entity_ip(name: str | None) -> tuple[tuple[str, str | None], ...]:
    return (("ip", name),)


@pytest.mark.parametrize(
    ("raw_entity", "op", "message"),
    [
        (entity_ip("1.2.3.4"), put(P, 1), "only connection_creation_rate"),
        (entity_ip("1.2.3.4"), put(R, 1), "only connection_creation_rate"),
        ((("ip", "1.2.3.4"), ("user", "u")), put(CCR, 1), "cannot be combined"),
        ((("client-id", "c"), ("ip", None)), put(CCR, 1), "cannot be combined"),
        (entity_ip("example.com"), put(CCR, 1), "not a valid IP"),
        (entity(client_id="c"), put(CCR, 1), "only be set on an ip entity"),
        (entity_ip(None), put(CCR, 1.5), "whole number"),
        (entity_ip("::1"), QuotaOp(P, 0, True), "only connection_creation_rate"),
    ],
)
def test_ip_entity_validation(
    tmp_path: Path, raw_entity: tuple[tuple[str, str | None], ...], op: QuotaOp, message: str
) -> None:
    quotas = service(tmp_path)
    (problem,) = asyncio.run(quotas.alter([(raw_entity, [op])], validate_only=False))
    assert problem is not None and message in problem
    assert quotas.quotas == {}
    assert asyncio.run(quotas.alter([(entity_ip("::1"), [put(CCR, 2)])], validate_only=False)) == [
        None
    ]


def test_ip_filters(tmp_path: Path) -> None:
    quotas = service(tmp_path)
    asyncio.run(
        quotas.alter(
            [(entity_ip("1.2.3.4"), [put(CCR, 2)]), (entity(client_id="c"), [put(P, 1)])],
            validate_only=False,
        )
    )
    found = quotas.describe([MatchComponent("ip", MATCH_ANY, None)], strict=True)
    assert found == [(entity_ip("1.2.3.4"), {CCR: 2.0})]
    both = [MatchComponent("ip", MATCH_ANY, None), MatchComponent("user", MATCH_ANY, None)]
    assert filter_problem(both) is not None
    assert filter_problem([MatchComponent("ip", MATCH_DEFAULT, None)]) is None
