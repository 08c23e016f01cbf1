"""The simulator's event loop: asyncio on virtual time, in a seeded order, with
processes that can die.

`SimLoop` is an asyncio event loop (a `BaseEventLoop`, so tasks, futures, timers,
`asyncio.sleep`, `asyncio.timeout` and `run_in_executor` are asyncio's own) with no
file descriptors and no real waiting:

- time is `SimClock`'s (integer nanoseconds; `monotonic_ms` and `wall_ms` are the
  clock the broker is given, so the loop's timers and the broker's deadlines read one
  time). When nothing is ready, the loop jumps the clock to the next timer instead
  of sleeping; with nothing ready and no timer at all the world is stuck, and the
  loop raises `SimStalled` rather than wait for ever;
- at each iteration the task steps that are ready run in an order drawn from the
  run's generator: asyncio promises FIFO order for callbacks, so only the positions
  of task steps are permuted among themselves (which of two independent coroutines
  runs first is what varies between machines and runs), never a plain callback's;
- a **process** is an incarnation number in a context variable (`PROCESS`): the
  broker is started in a context of its own, and every task and callback created
  from it carries that context. `kill(process)` cancels every handle of that process
  already scheduled and refuses every one made later: the process's coroutines never
  run again, without a `finally` or a shutdown step, as if the process had died.
  Its tasks are kept (`graveyard`) so the garbage collector does not close their
  coroutines (which would run their `finally` blocks) until the run is over.

`seeded_entropy` makes `os.urandom` (under `uuid.uuid4`: the topic, cluster and
member ids the broker makes) draw from the run's generator while a run lasts.

Exceptions the loop's handler receives from a living broker process's tasks and
futures are kept in `errors` (one that failed with nobody to hear it is a bug the
world reports); the clients' go to `client_errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
import os
import random
import weakref
from collections import deque
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

log = logging.getLogger(__name__)

PROCESS: contextvars.ContextVar[int] = contextvars.ContextVar("shoal_sim_process", default=0)
"""The simulated process a task or callback belongs to; 0 is the world (clients)."""

WALL_OFFSET_MS = 1_700_000_000_000
"""The wall clock at virtual time 0."""


class SimStalled(Exception):
    """Nothing is ready and no timer is set: every task waits on something that
    never comes."""


class SimClock:
    """Virtual time in nanoseconds (shoal.clock.Clock for the broker)."""

    def __init__(self, *, wall_offset_ms: int = WALL_OFFSET_MS) -> None:
        self.ns = 0
        self._wall_offset_ms = wall_offset_ms

    def monotonic_ms(self) -> int:
        return self.ns // 1_000_000

    def wall_ms(self) -> int:
        return self._wall_offset_ms + self.ns // 1_000_000

    def advance_to_ns(self, ns: int) -> None:
        self.ns = max(self.ns, ns)


class _VirtualSelector:
    """Stands where a selector would: the loop's `select(timeout)` jumps the clock."""

    def __init__(self, loop: SimLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        if timeout is None:
            raise SimStalled("no callback ready and no timer set")
        if timeout > 0:
            self._loop.clock.advance_to_ns(self._loop.clock.ns + math.ceil(timeout * 1e9))
        return []

    def close(self) -> None:
        pass


class SimLoop(asyncio.BaseEventLoop):
    """See the module docstring."""

    def __init__(self, clock: SimClock, rng: random.Random, *, shuffle: bool = True) -> None:
        super().__init__()
        self.clock = clock
        self._rng = rng
        self._shuffle = shuffle
        self._selector = _VirtualSelector(self)
        self._clock_resolution = 1e-9
        self._dead: set[int] = set()
        self._process_of: weakref.WeakKeyDictionary[asyncio.Future[Any], int] = (
            weakref.WeakKeyDictionary()
        )
        self.graveyard: list[asyncio.Task[Any]] = []
        """The tasks of killed processes, kept from the garbage collector."""
        self.errors: list[str] = []
        """What the exception handler heard from a living broker process."""
        self.client_errors: list[str] = []
        self.iterations = 0
        self.set_exception_handler(self._exception)

    # ---- time

    def time(self) -> float:
        return self.clock.ns / 1e9

    # ---- what a selector loop would do with file descriptors: nothing here

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    # ---- processes

    def _alive(self, context: contextvars.Context | None) -> bool:
        process = (context or contextvars.copy_context()).get(PROCESS, 0)
        return process not in self._dead

    def call_soon(  # type: ignore[override]
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        if not self._alive(context):
            return _dropped(callback, args, self, context)
        return super().call_soon(callback, *args, context=context)

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        if not self._alive(context):
            handle = asyncio.TimerHandle(when, callback, args, self, context)
            handle.cancel()
            return handle
        return super().call_at(when, callback, *args, context=context)

    def call_soon_threadsafe(  # type: ignore[override]
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        return self.call_soon(callback, *args, context=context)

    def create_task(  # type: ignore[override]
        self,
        coro: Coroutine[Any, Any, Any],
        *,
        name: str | None = None,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[Any]:
        process = (context or contextvars.copy_context()).get(PROCESS, 0)
        task = super().create_task(coro, name=name, context=context)
        self._process_of[task] = process
        return task

    def create_future(self) -> asyncio.Future[Any]:
        future = super().create_future()
        self._process_of[future] = contextvars.copy_context().get(PROCESS, 0)
        return future

    def process_of(self, future: asyncio.Future[Any]) -> int:
        """The process that made `future` (a task or a future of the loop's)."""
        return self._process_of.get(future, 0)

    def run_in_context(self, process: int, factory: Callable[[], Any]) -> Any:
        """Call `factory()` in a new context of `process` (its tasks and callbacks
        belong to it)."""
        context = contextvars.copy_context()
        context.run(PROCESS.set, process)
        return context.run(factory)

    def kill(self, process: int) -> None:
        """`process` dies: none of its handles runs again (module docstring)."""
        self._dead.add(process)
        ready: deque[asyncio.Handle] = self._ready  # type: ignore[attr-defined]
        scheduled: list[asyncio.TimerHandle] = self._scheduled  # type: ignore[attr-defined]
        for handle in [*ready, *scheduled]:
            if not self._alive(handle._context):  # type: ignore[attr-defined]
                handle.cancel()
        for task in asyncio.all_tasks(self):
            if self.process_of(task) == process:
                self.graveyard.append(task)

    def bury(self) -> None:
        """At the end of a run: let the dead tasks' coroutines go (their `finally`
        blocks run against closed files and dead pipes; what they raise is dropped)."""
        dead, self.graveyard = self.graveyard, []
        for task in dead:
            coro = task.get_coro()
            try:
                coro.close()
            except BaseException as exc:  # noqa: BLE001 - a dead process's last words
                log.debug("a dead task's coroutine raised on close: %r", exc)

    # ---- the order of each iteration

    def _run_once(self) -> None:
        self.iterations += 1
        ready: deque[asyncio.Handle] = self._ready  # type: ignore[attr-defined]
        if self._shuffle and len(ready) > 1:
            _permute_task_steps(ready, self._rng)
        super()._run_once()  # type: ignore[misc]

    def _exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        future = context.get("task") or context.get("future")
        process = self.process_of(future) if isinstance(future, asyncio.Future) else 0
        if process in self._dead:
            return  # a dead process's task, destroyed or failing: not its business any more
        message = context.get("message", "")
        exc = context.get("exception")
        text = f"{message}: {exc!r}" if exc is not None else str(message)
        if process == 0:  # the clients' (the world's own concern, not the broker's)
            self.client_errors.append(text)
            return
        self.errors.append(text)
        log.error("simulated loop: %s", text, exc_info=exc)


def _task_step(handle: asyncio.Handle) -> bool:
    callback = getattr(handle, "_callback", None)
    return isinstance(getattr(callback, "__self__", None), asyncio.Task)


def _permute_task_steps(ready: deque[asyncio.Handle], rng: random.Random) -> None:
    """Permute the task steps of `ready` among their own positions."""
    positions = [index for index, handle in enumerate(ready) if _task_step(handle)]
    if len(positions) < 2:
        return
    steps = [ready[index] for index in positions]
    rng.shuffle(steps)
    for index, handle in zip(positions, steps, strict=True):
        ready[index] = handle


def _dropped(
    callback: Callable[..., object],
    args: tuple[Any, ...],
    loop: asyncio.AbstractEventLoop,
    context: contextvars.Context | None,
) -> asyncio.Handle:
    handle = asyncio.Handle(callback, args, loop, context)
    handle.cancel()
    return handle


@contextlib.contextmanager
def seeded_entropy(rng: random.Random) -> Iterator[None]:
    """`os.urandom` draws from `rng` while the block runs (module docstring)."""
    real = os.urandom

    def urandom(size: int) -> bytes:
        return rng.randbytes(size)

    os.urandom = urandom
    try:
        yield
    finally:
        os.urandom = real
