"""How an agent waits and is woken: its doorbell and its link to the supervisor, or Claude
Code's 500 ms poll.

Both modes sit behind one interface, so the loop, and the benchmarks, run the same code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from ipc import link
from ipc.launch import POLL_INTERVAL, LaunchSpec
from ipc.paths import TeamPaths
from ipc.poller import Poller, close_context, context
from ipc.wake import WakeListener, Waker


@dataclass
class Wakeup:
    """What ended a wait: link frames, a doorbell, or neither (the fallback poll)."""

    frames: list[link.Frame] = field(default_factory=list)
    doorbell: bool = False
    at_ns: int = 0


class Channel(Protocol):
    def hello(self, agent: str, pid: int) -> None: ...
    def state(self, state: str, task: str = "") -> None: ...
    def tasks_ready(self, ids: list[str]) -> None: ...
    def waker(self) -> Waker | None: ...
    def wait(self, timeout: float | None = None) -> Wakeup: ...
    def close(self) -> None: ...


class ZmqChannel:
    """Wait on the doorbell and the link; re-read the inbox anyway every ``fallback`` s."""

    def __init__(self, spec: LaunchSpec) -> None:
        runtime = TeamPaths(spec.root, spec.team_name).runtime_dir()
        self.fallback = spec.fallback_poll
        self.ctx = context()
        self.link = link.AgentLink(self.ctx, runtime, spec.agent_name)
        self.listener = WakeListener(self.ctx, runtime, spec.agent_name)
        self._waker = Waker(runtime, ctx=self.ctx, linger_ms=200)
        self.poller = Poller()
        self.poller.register(self.link)
        self.poller.register(self.listener)

    def hello(self, agent: str, pid: int) -> None:
        self.link.send(link.Hello(agent=agent, pid=pid))

    def state(self, state: str, task: str = "") -> None:
        self.link.send(link.State(state=state, task=task))  # type: ignore[arg-type]

    def tasks_ready(self, ids: list[str]) -> None:
        self.link.send(link.TasksReady(ids=ids))

    def waker(self) -> Waker | None:
        return self._waker

    def wait(self, timeout: float | None = None) -> Wakeup:
        ready = self.poller.poll(self.fallback if timeout is None else timeout)
        woke = Wakeup(at_ns=time.time_ns())
        if self.listener in ready:
            woke.doorbell = self.listener.drain() > 0
        if self.link in ready:
            woke.frames = self.link.receive()
        return woke

    def close(self) -> None:
        self._waker.close()
        self.listener.close()
        self.link.close()
        close_context(self.ctx)


class PollChannel:
    """Claude Code's behaviour exactly: no sockets; the caller re-reads the inbox every 500 ms."""

    def hello(self, agent: str, pid: int) -> None:
        pass

    def state(self, state: str, task: str = "") -> None:
        pass

    def tasks_ready(self, ids: list[str]) -> None:
        pass

    def waker(self) -> Waker | None:
        return None

    def wait(self, timeout: float | None = None) -> Wakeup:
        time.sleep(POLL_INTERVAL if timeout is None else min(timeout, POLL_INTERVAL))
        return Wakeup(at_ns=time.time_ns())

    def close(self) -> None:
        pass


def open_channel(spec: LaunchSpec) -> Channel:
    return ZmqChannel(spec) if spec.wake == "zmq" else PollChannel()
