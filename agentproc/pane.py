"""A teammate in a tmux pane (``--backend tmux``): what it shows a person there, and how it
leaves when its supervisor dies.

Its parent is the tmux server, not the supervisor, so the kernel's parent-death signal
would come only with tmux: it watches its supervisor's pid instead. When the supervisor is
gone it clears its pane id from the config, lets its pane close with it (the supervisor
keeps dead panes for their exit status; nobody would read this one), and stops as on
SIGTERM. Its turns are printed to the pane, readably; its log takes stderr.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time

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


def watch_supervisor(spec: LaunchSpec) -> bool:
    """Leave when the supervisor goes; False if it is gone already."""
    fd = pidfd_open(spec.supervisor_pid)
    if fd is None:
        return False

    def wait() -> None:
        select.select([fd], [], [])
        leave(spec)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="supervisor-watch", daemon=True).start()
    return True


def leave(spec: LaunchSpec) -> None:
    """No stale pane id in the config, and no dead pane left on the screen."""
    try:
        TeamConfigStore(spec.root, spec.team_name).update_member(
            spec.agent_name, tmux_pane_id="", is_active=False
        )
    except AgentTeamsError:
        pass  # the member or the team is gone already
    pane = os.environ.get("TMUX_PANE", "")
    if pane:
        try:
            Tmux().run("set-option", "-p", "-t", pane, "remain-on-exit", "off")
        except AgentTeamsError:
            pass  # tmux is gone, and the pane with it
