"""How a teammate waits and rings: the ZeroMQ doorbell, or Claude Code's 500 ms poll.

Both modes sit behind one interface so the loop, and the benchmarks, run the same code path.
"""

from __future__ import annotations

import time
from typing import Protocol

from ipc.wake import POLL_INTERVAL, Frame, Hello, Ring, State, TeammateEnd


class Channel(Protocol):
    def hello(self, agent: str, pid: int) -> None: ...
    def ring(self, recipient: str) -> None: ...
    def state(self, state: str, task: str = "") -> None: ...
    def wait(self, timeout: float | None = None) -> list[Frame]: ...
    def close(self) -> None: ...


class ZmqChannel:
    """Wait on the PAIR for a wake; re-read the inbox anyway every ``fallback`` seconds."""

    def __init__(self, endpoint: str, fallback: float) -> None:
        self.end = TeammateEnd(endpoint)
        self.fallback = fallback

    def hello(self, agent: str, pid: int) -> None:
        self.end.send(Hello(agent=agent, pid=pid))

    def ring(self, recipient: str) -> None:
        self.end.send(Ring(recipient=recipient))

    def state(self, state: str, task: str = "") -> None:
        self.end.send(State(state=state, task=task))  # type: ignore[arg-type]

    def wait(self, timeout: float | None = None) -> list[Frame]:
        return self.end.wait(self.fallback if timeout is None else timeout)

    def close(self) -> None:
        self.end.close()


class PollChannel:
    """Claude Code's behaviour exactly: no sockets; the caller re-reads the inbox every 500 ms."""

    def hello(self, agent: str, pid: int) -> None:
        pass

    def ring(self, recipient: str) -> None:
        pass

    def state(self, state: str, task: str = "") -> None:
        pass

    def wait(self, timeout: float | None = None) -> list[Frame]:
        time.sleep(POLL_INTERVAL if timeout is None else min(timeout, POLL_INTERVAL))
        return []

    def close(self) -> None:
        pass
