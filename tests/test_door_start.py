"""A resident door whose program cannot start: a client waiting in the socket's queue hears
so at once and takes the full path (nothing was done, nothing is sent twice), and so does
every client for a while after, before the door is tried again; a door that did start and
then exits is simply started again on the next connection."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from ipc import resident as wire
from ipc.paths import TeamPaths
from supervisor.cli import quick
from supervisor.daemon import resident
from supervisor.daemon.reactor import Reactor
from tests.runtime_helpers import wait_for


class Clock:
    def __init__(self) -> None:
        self.at = 0.0

    def now(self) -> float:
        return self.at


class Harness:
    """The supervisor's side of the door on a loop of the test's, and a quick-path client."""

    def __init__(self, root: Path, team: str) -> None:
        self.root, self.team = root, team
        self.clock = Clock()
        self.reactor = Reactor(self.clock)
        self.door = resident.ResidentDoor(self.reactor, TeamPaths(root, team).runtime_dir(), root, team)
        self.started: list[int] = []
        self.exited = threading.Event()
        on_exit = self.door._exited

        def exited() -> None:
            self.started.append(self.door.pid or 0)
            on_exit()
            self.exited.set()

        self.door._exited = exited  # type: ignore[method-assign]

    def turns_until(self, done: Callable[[], bool], timeout: float = 10) -> bool:
        """Run the loop until ``done`` (within a deadline far above a door's start)."""

        def turn() -> bool:
            self.reactor.run_once(0.05)
            return done()

        return bool(wait_for(turn, timeout))

    def send(self, text: str) -> int | None:
        """``agentteams send`` through the quick path, the loop turning meanwhile: its exit
        code, or None (it took the full path)."""
        argv = ["--root", str(self.root), "send", self.team, "alice", text, "--summary", "s"]
        got: list[int | None] = []
        client = threading.Thread(target=lambda: got.append(quick.attempt(argv)), daemon=True)
        client.start()
        assert self.turns_until(lambda: not client.is_alive())  # not after 20 s
        return got[0]

    def close(self) -> None:
        self.door.close()
        self.reactor.close()
        for pid in self.started:  # reaped here (the supervisor's reaper does it there)
            os.waitpid(pid, 0)


def test_a_door_that_cannot_start_sends_its_waiting_client_to_the_full_path_at_once(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resident, "MODULE", "agentteams_no_such_door")  # python -m exits at once
    h = Harness(root, team)
    try:
        assert h.send("one") is None  # the full path: it does the work
        assert len(h.started) == 1  # tried once
        assert not TeamPaths(root, team).inbox("alice").exists()  # nothing was done at the door
        assert h.send("two") is None and len(h.started) == 1  # a second after: told, not tried
        h.clock.at += resident.RETRY
        h.exited.clear()
        assert h.send("three") is None
        assert h.turns_until(h.exited.is_set)
        assert len(h.started) == 2  # tried again once the wait was over, and told again
        assert h.door.refuse_until == h.clock.at + 2 * resident.RETRY  # the next wait is longer
    finally:
        h.close()
    assert msgspec.json.decode(resident.COULD_NOT_START, type=wire.Reply).fallback  # the door's shape


def test_a_door_that_served_and_exited_is_started_again_without_a_wait(root: Path, team: str) -> None:
    h = Harness(root, team)
    try:
        assert h.send("one") == 0  # through the door
        assert h.door.pid is not None
        os.kill(h.door.pid, signal.SIGTERM)
        assert h.turns_until(h.exited.is_set, 20)
        assert h.door.refuse_until == 0.0 and h.door.retry == resident.RETRY  # it had said it serves
        assert h.send("two") == 0 and len(h.started) == 1  # a new door answered at once
        texts = [m["text"] for m in msgspec.json.decode(TeamPaths(root, team).inbox("alice").read_bytes())]
        assert texts == ["one", "two"]
    finally:
        h.close()
