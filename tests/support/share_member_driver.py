"""A minimal asyncio driver of the sans-I/O `ShareMember`, for tests only (the client's
own drivers live in `shoal.client`; switch these tests to them once they exist).

One connection per target (the coordinator, each leader node), the version of every
call chosen from the broker's ApiVersions (a call the broker cannot serve is refused
before sending, as `FeatureUnsupported`), leaders answered from a map the test gives,
the coordinator's address fixed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.api_versions.v0.request import ApiVersionsRequest

from shoal.client import KafkaConnection
from shoal.client.calls import Call
from shoal.client.ranges import TopicIdPartition
from shoal.client.share_effects import FindCoordinator, FindLeaders, Send, Target
from shoal.client.share_member import ShareMember
from shoal.client.share_requests import FeatureUnsupported
from shoal.clock import SystemClock

POLL_S = 0.05


class MemberDriver:
    def __init__(
        self,
        member: ShareMember,
        *,
        address: Callable[[Target], tuple[str, int]],
        leaders: Mapping[TopicIdPartition, int],
    ) -> None:
        self.member = member
        self.address = address
        self.leaders = leaders
        self.conns: dict[Target, tuple[KafkaConnection, dict[int, tuple[int, int]]]] = {}
        self.tasks: dict[asyncio.Task[Any], int] = {}
        self.coordinator_lookups = 0
        self.sent: list[tuple[Target, Any]] = []
        """Every request sent: (target, kio request)."""

    async def _conn(self, target: Target) -> tuple[KafkaConnection, dict[int, tuple[int, int]]]:
        if target not in self.conns:
            host, port = self.address(target)
            conn = await KafkaConnection.open(host, port)
            reply = await conn.request(ApiVersionsRequest())  # v0: librdkafka's mock has no v3
            versions = {
                int(k.api_key): (int(k.min_version), int(k.max_version)) for k in reply.api_keys
            }
            self.conns[target] = (conn, versions)
        return self.conns[target]

    @staticmethod
    def _version(call: Call, versions: Mapping[int, tuple[int, int]]) -> int:
        low, high = versions.get(call.api_key, (0, -1))
        version = min(call.max_version, high)
        if version < max(call.min_version, low):
            raise FeatureUnsupported(
                f"api {call.api_key} v{call.min_version}-{call.max_version} needed, the broker "
                f"serves v{low}-{high}"
            )
        return version

    async def _send(self, send: Send) -> None:
        conn, versions = await self._conn(send.target)
        try:
            body = send.call.build(self._version(send.call, versions))
        except FeatureUnsupported as refused:
            self.member.on_failure(send.request_id, refused)
            return
        self.sent.append((send.target, body))
        self.tasks[asyncio.create_task(conn.request(body))] = send.request_id

    async def run_until(self, done: Callable[[], bool], *, timeout_s: float = 30.0) -> None:
        clock = SystemClock()
        async with asyncio.timeout(timeout_s):
            while True:
                for effect in self.member.poll():
                    if isinstance(effect, Send):
                        await self._send(effect)
                    elif isinstance(effect, FindLeaders):
                        known = {tp: self.leaders.get(tp, -1) for tp in effect.partitions}
                        self.member.set_leaders(known)
                    else:  # the address given stays the coordinator's; count the asks
                        assert isinstance(effect, FindCoordinator), effect
                        self.coordinator_lookups += 1
                if done():
                    return
                wait_s = POLL_S
                deadline = self.member.next_deadline_ms()
                if deadline is not None:
                    wait_s = max(0.0, min(wait_s, (deadline - clock.monotonic_ms()) / 1000))
                if not self.tasks:
                    await asyncio.sleep(wait_s)
                    continue
                finished, _ = await asyncio.wait(
                    self.tasks, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED
                )
                for task in finished:
                    request_id = self.tasks.pop(task)
                    error = task.exception()
                    if error is None:
                        self.member.on_response(request_id, task.result())
                    else:
                        self.member.on_failure(request_id, error)

    async def result(self, ticket: int, *, timeout_s: float = 30.0) -> Any:
        """Drive until the intent `ticket` has its outcome."""
        outcome: list[Any] = []

        def ready() -> bool:
            if not outcome:
                got = self.member.take_result(ticket)
                if got is not None:
                    outcome.append(got)
            return bool(outcome)

        await self.run_until(ready, timeout_s=timeout_s)
        return outcome[0]

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for conn, _versions in self.conns.values():
            await conn.close()
