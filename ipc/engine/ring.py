"""An agent's doorbell on the engine: a pipe that the engine's loop writes a byte into when
the agent is rung on its core subject (from any host) or a message reaches its inbox feed in
this process, so the agent's poller waits on engine wake-ups as on any socket."""

from __future__ import annotations

import os

from ipc.engine.team import EngineTeam


class EngineWakeListener:
    def __init__(self, engine: EngineTeam, agent: str) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        engine.listen(agent, self._poke)

    def _poke(self) -> None:
        try:
            os.write(self.write_fd, b"\0")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (a ring is already waiting) or closed

    def fileno(self) -> int:
        return self.read_fd

    def drain(self) -> int:
        count = 0
        while True:
            try:
                chunk = os.read(self.read_fd, 4096)
            except BlockingIOError:
                return count
            if not chunk:
                return count
            count += len(chunk)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
