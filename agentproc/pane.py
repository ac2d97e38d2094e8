"""A teammate in a tmux pane (``--backend tmux``): what it shows a person there, and how it
leaves when its supervisor dies.

Its parent is the tmux server, not the supervisor, so the kernel's parent-death signal
would come only with tmux: it watches its supervisor's pid instead. When the supervisor is
gone it clears its pane id from the config, lets its pane close with it (the supervisor
keeps dead panes for their exit status; nobody would read this one), and stops as on
SIGTERM. Its turns are printed to the pane, readably; its log takes stderr. A ``claude``
teammate shows Claude Code's own screen there instead, through a :class:`Relay`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import signal
import sys
import termios
import threading
import time
import tty
from typing import Any

from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError
from ipc.launch import LaunchSpec
from ipc.osproc import pidfd_open
from ipc.tmux import Tmux

WIDTH = 100


def in_pane(spec: LaunchSpec) -> bool:
    return spec.backend == "tmux" and bool(os.environ.get("TMUX_PANE"))


def show(text: str, mark: str = " ") -> None:
    """A line (or a few) in the pane: ``HH:MM:SS mark text``, long text cut."""
    lines = text.strip().splitlines() or [""]
    more = f" … (+{len(lines) - 4} lines)" if len(lines) > 4 else ""
    stamp = time.strftime("%H:%M:%S")
    for i, line in enumerate(lines[:4]):
        cut = line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"
        print(f"{stamp if i == 0 else ' ' * 8} {mark if i == 0 else ' '} {cut}{more if i == 3 else ''}")
    sys.stdout.flush()


# Set when the supervisor has gone. A ``claude`` teammate leaves (clears its pane id) only
# once claude has exited: claude rewrites the config unlocked, from a copy it read earlier,
# so a write of ours made while it runs can be undone by its next one.
supervisor_gone = threading.Event()
_watched: list[LaunchSpec] = []  # the teammate whose supervisor is watched
_left = threading.Event()


def watch_supervisor(spec: LaunchSpec, *, leave_first: bool = True) -> bool:
    """Stop when the supervisor goes, having left first (``leave_first``), or leaving in
    the SIGTERM handler (:func:`leave_if_orphaned`); False if it is gone already."""
    fd = pidfd_open(spec.supervisor_pid)
    if fd is None:
        return False
    _watched.append(spec)

    def wait() -> None:
        select.select([fd], [], [])
        supervisor_gone.set()
        if leave_first:
            leave(spec)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="supervisor-watch", daemon=True).start()
    return True


def leave_if_orphaned(store: TeamConfigStore | None = None) -> None:
    """On the way out: leave if the supervisor is gone (and this has not left yet)."""
    if supervisor_gone.is_set() and _watched:
        leave(_watched[0], store)


def leave(spec: LaunchSpec, store: TeamConfigStore | None = None) -> None:
    """No stale pane id in the config, and no dead pane left on the screen. ``store``: one
    that has read the config before (a torn file is rebuilt from its copy)."""
    if _left.is_set():
        return
    _left.set()
    store = store or TeamConfigStore(spec.root, spec.team_name)
    try:
        store.update_member(spec.agent_name, tmux_pane_id="", is_active=False)
    except AgentTeamsError:
        pass  # the member or the team is gone already
    pane = os.environ.get("TMUX_PANE", "")
    if pane:
        try:
            Tmux().run("set-option", "-p", "-t", pane, "remain-on-exit", "off")
        except AgentTeamsError:
            pass  # tmux is gone, and the pane with it


class Relay:
    """The pane's terminal lent to ``claude``, which runs in a pseudo-terminal of its own (so
    that its screen also goes to the log, and its process group is its own): what it draws
    reaches the pane as it is, what a person types there reaches it (the pane is put in raw
    mode, so Ctrl-C is a key for it, not a signal for us), and the pane's size is its size."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.saved: list[Any] | None = None
        with contextlib.suppress(termios.error, OSError):
            self.saved = termios.tcgetattr(0)
            tty.setraw(0)
        self.resize()
        signal.signal(signal.SIGWINCH, lambda signum, frame: self.resize())

    def resize(self) -> None:
        """The pane's size onto claude's terminal (the kernel tells claude with SIGWINCH)."""
        with contextlib.suppress(OSError):
            size = fcntl.ioctl(1, termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, size)

    def show(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(1, view) :]
            except OSError as exc:  # the pane is gone (its server died): claude goes on unseen
                if exc.errno in (errno.EIO, errno.EBADF, errno.EPIPE):
                    return
                raise

    def typed(self) -> bool:
        """Pass on what was typed; False once the pane has closed."""
        try:
            data = os.read(0, 4096)
        except OSError:
            return False
        if data:
            with contextlib.suppress(OSError):
                os.write(self.master, data)
        return bool(data)

    def restore(self) -> None:
        if self.saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(0, termios.TCSADRAIN, self.saved)
