"""The bell a door waits on: each of its two sources wakes a waiting thread by itself (the
doorbell with no file written, the inbox file with no ring), and a cancelled wait ends.
Deadlines are far below the waits' own timeouts, so only a wake can pass."""

from __future__ import annotations

import threading
from pathlib import Path

from ipc.bell import Bell
from ipc.config import TeamConfigStore
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.wake import Waker

LONG = 600.0


def waiting(bell: Bell, cancel: threading.Event | None = None) -> tuple[threading.Thread, list[bool]]:
    seen = bell.rings()
    woke: list[bool] = []

    def wait() -> None:
        if cancel is None:
            woke.append(bell.wait(seen, LONG))
            return
        with bell.cancellable(cancel):
            woke.append(bell.wait(seen, LONG))

    thread = threading.Thread(target=wait)
    thread.start()
    return thread, woke


def test_the_doorbell_alone_wakes_a_waiting_thread(tmp_path: Path) -> None:
    TeamConfigStore(tmp_path, "t").create()
    paths = TeamPaths(tmp_path, "t")
    bell = Bell(paths, "alice", doorbell=True)
    waker = Waker(paths.runtime_dir())
    try:
        thread, woke = waiting(bell)
        assert waker.wake("alice")
        thread.join(10)
        assert woke == [True]
    finally:
        waker.close()
        bell.close()


def test_the_inbox_file_alone_wakes_a_waiting_thread(tmp_path: Path) -> None:
    TeamConfigStore(tmp_path, "t").create()
    bell = Bell(TeamPaths(tmp_path, "t"), "team-lead", doorbell=False)
    try:
        thread, woke = waiting(bell)
        Mailbox(tmp_path, "t", "team-lead").append(sender="x", text="written, never rung", summary="s")
        thread.join(10)
        assert woke == [True]
    finally:
        bell.close()


def test_a_cancelled_wait_ends_and_says_it_was_not_rung(tmp_path: Path) -> None:
    TeamConfigStore(tmp_path, "t").create()
    bell = Bell(TeamPaths(tmp_path, "t"), "alice", doorbell=False)
    try:
        cancel = threading.Event()
        thread, woke = waiting(bell, cancel)
        bell.cancel(cancel)
        thread.join(10)
        assert woke == [False]
    finally:
        bell.close()
