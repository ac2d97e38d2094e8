"""How an agent waits and is woken: its doorbell and its link to the supervisor, or Claude
Code's 500 ms poll.

Both modes sit behind one interface, so the loop, and the benchmarks, run the same code.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ipc import control, link
from ipc.engine import marker
from ipc.launch import POLL_INTERVAL, LaunchSpec
from ipc.poller import Poller, close_context, context
from ipc.wake import WakeListener, Waker, queued

if TYPE_CHECKING:
    from collections.abc import Callable

    from ipc.engine.ring import EngineWakeListener


# A fallback poll leaves the task list to the supervisor's hand-out while it changed this
# recently: a creator writes its tasks before it tells the supervisor, which then queues them.
TASKS_SETTLE = 2.0
# ...but not for longer than this in a row: a team creating tasks without pause would leave
# those nobody told the supervisor of (another writer's, a TasksReady that timed out) unseen.
TASKS_SETTLE_MOST = 10.0


def _changed_within(path: Path, seconds: float) -> bool:
    try:
        return time.time() - os.stat(path).st_mtime < seconds
    except OSError:
        return False


class SettleGate:
    """Whether a fallback poll leaves a just-changed task list to the hand-out. A run of
    such skips ends ``most`` seconds after its first with a look, and a new run starts."""

    def __init__(self, most: float = TASKS_SETTLE_MOST, clock: Callable[[], float] = time.monotonic) -> None:
        self.most = most
        self.clock = clock
        self.since: float | None = None  # the first skip of the current run

    def skip(self, changed: bool) -> bool:
        if not changed:
            self.since = None
            return False
        now = self.clock()
        if self.since is None:
            self.since = now
        elif now - self.since >= self.most:
            self.since = None  # look this time; a list still changing starts a new run
            return False
        return True


@dataclass
class Wakeup:
    """What a wait brought: the link's frames (none after a doorbell or the fallback poll),
    and when it ended."""

    frames: list[link.Frame] = field(default_factory=list)
    at_ns: int = 0
    # The fallback poll, while the supervisor holds ready tasks for its hand-out (or is about
    # to): no look at the task list (they wait for room to run, :mod:`supervisor.daemon.router`).
    queued: bool = False


class Channel(Protocol):
    # True: the supervisor hands out claims (a wake names a task already this agent's), so
    # the agent looks for work itself only when rung without one, not after every turn.
    handed: bool

    def hello(self, agent: str, pid: int) -> None: ...
    def state(self, state: str, task: str = "") -> None: ...
    def waiting(self, waiting: bool) -> None: ...
    def tasks_ready(self, ids: list[str], rung: str = "") -> None: ...
    def waker(self) -> Waker | None: ...
    def wait(self, timeout: float | None = None) -> Wakeup: ...
    def close(self) -> None: ...


class ZmqChannel:
    """Wait on the doorbell and the link; re-read the inbox anyway every ``fallback`` s."""

    def __init__(self, spec: LaunchSpec) -> None:
        runtime = spec.team_paths().runtime_dir()
        self.fallback = spec.fallback_poll
        self.ctx = context()
        self.runtime = runtime
        self.tasks = spec.team_paths().tasks_dir
        self.link = link.AgentLink(self.ctx, runtime, spec.agent_name)
        self.listener = WakeListener(self.ctx, runtime, spec.agent_name)
        self._waker = Waker(runtime, ctx=self.ctx, linger_ms=200)
        self.poller = Poller()
        self.poller.register(self.link)
        self.poller.register(self.listener)
        self.engine_ring = engine_listener(spec)  # a team on the engine: rung from any host
        if self.engine_ring is not None:
            self.poller.register(self.engine_ring.fileno())
        self.handed = self.engine_ring is None  # on the engine, teammates claim for themselves
        self.settle = SettleGate()

    def hello(self, agent: str, pid: int) -> None:
        self.link.send(link.Hello(agent=agent, pid=pid))

    def state(self, state: str, task: str = "") -> None:
        self.link.send(link.State(state=state, task=task))  # type: ignore[arg-type]

    def waiting(self, waiting: bool) -> None:
        self.link.send(link.Waiting(waiting=waiting))

    def tasks_ready(self, ids: list[str], rung: str = "") -> None:
        self.link.send(control.TasksReady(id="", ids=ids))

    def waker(self) -> Waker | None:
        return self._waker

    def wait(self, timeout: float | None = None) -> Wakeup:
        ready = self.poller.poll(self.fallback if timeout is None else timeout)
        woke = Wakeup(at_ns=time.time_ns())
        if self.listener in ready:
            self.listener.drain()
            # A task named by the ring of the process that made it: tried first (a hint; the
            # claim is still made under the lock, and it may be gone by then).
            woke.frames = [link.Wake(task=task) for task in self.listener.take_notes()]
        if self.engine_ring is not None and self.engine_ring.fileno() in ready:
            self.engine_ring.drain()
        if self.link in ready:
            woke.frames += self.link.receive()
        elif not ready and self.handed:
            woke.queued = queued(self.runtime) or self.settle.skip(_changed_within(self.tasks, TASKS_SETTLE))
        return woke

    def close(self) -> None:
        self._waker.close()
        self.listener.close()
        if self.engine_ring is not None:
            self.engine_ring.close()
        self.link.close()
        close_context(self.ctx)


class PollChannel:
    """Claude Code's behaviour exactly: no sockets; the caller re-reads the inbox every 500 ms."""

    handed = False

    def hello(self, agent: str, pid: int) -> None:
        pass

    def state(self, state: str, task: str = "") -> None:
        pass

    def waiting(self, waiting: bool) -> None:
        pass

    def tasks_ready(self, ids: list[str], rung: str = "") -> None:
        pass

    def waker(self) -> Waker | None:
        return None

    def wait(self, timeout: float | None = None) -> Wakeup:
        time.sleep(POLL_INTERVAL if timeout is None else min(timeout, POLL_INTERVAL))
        return Wakeup(at_ns=time.time_ns())

    def close(self) -> None:
        pass


def engine_listener(spec: LaunchSpec) -> EngineWakeListener | None:
    """The agent's doorbell on the engine, if its team is on one."""
    paths = spec.team_paths()
    link = marker.read(paths)
    if link is None:
        return None
    from ipc.engine.ring import EngineWakeListener
    from ipc.engine.team import engine_team

    return EngineWakeListener(engine_team(link.url, paths.team), spec.agent_name)


def open_channel(spec: LaunchSpec) -> Channel:
    return ZmqChannel(spec) if spec.wake == "zmq" else PollChannel()
