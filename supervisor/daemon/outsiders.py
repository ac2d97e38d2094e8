"""Members that are outside clients: an MCP session that joined the team (``backendType:
"mcp"``, ``tmuxPaneId: "mcp:{pid}"`` naming the server process that serves it).

No process of ours runs them, and a process killed with SIGKILL cannot clean up after
itself, so the supervisor watches each one's pid (a pidfd in the loop, as it watches a lead
agent's). One that ends while the config still names it as the member's process is settled
as a teammate that crashed: its in-progress tasks are released (and offered to idle
teammates), it is marked inactive (not removed: its client may join again) and the lead
hears of it. A server that leaves cleanly has done this itself and cleared its pane first.
"""

from __future__ import annotations

import logging
import os

from ipc.clock import now_iso
from ipc.errors import AgentTeamsError
from ipc.osproc import alive, pidfd_open
from ipc.replies import TeammateStatus
from ipc.schemas import Member, TeammateTerminated
from supervisor.daemon.reactor import Reactor
from supervisor.daemon.team_files import TeamFiles

log = logging.getLogger("agentteams.supervisor")
BACKEND = "mcp"


def pane_of(pid: int) -> str:
    return f"{BACKEND}:{pid}"


def pid_of(member: Member) -> int | None:
    """The pid its pane names, if it names one."""
    prefix = f"{BACKEND}:"
    pane = member.tmux_pane_id
    return int(pane[len(prefix) :]) if pane.startswith(prefix) and pane[len(prefix) :].isdigit() else None


def _serves_mcp(pid: int) -> bool:
    """The process is alive and an MCP door (not a stranger that reused the number)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return False
    return alive(pid) and b"mcp" in args


class Outsiders:
    def __init__(self, reactor: Reactor, files: TeamFiles) -> None:
        self.reactor = reactor
        self.files = files
        self.watched: dict[str, tuple[int, int]] = {}  # name → (pid, pidfd)

    def resume(self, member: Member) -> None:
        """At start-up: a member whose server still runs is watched again; one whose server
        is gone (killed while no supervisor ran) is settled now."""
        pid = pid_of(member)
        if pid is not None and _serves_mcp(pid):
            self.watch(member.name, pid)
            return
        released = self.files.release(member.name)
        if released:
            log.info("resume: released %s's tasks %s (its MCP server is gone)", member.name, released)
            self.files.tasks_ready(released)
        if member.is_active is not False or pid is not None:
            self._mark_gone(member.name)

    def watch(self, name: str, pid: int) -> None:
        """Watch ``pid``, the process serving member ``name`` (a control request from it)."""
        self.forget(name)
        fd = pidfd_open(pid)
        if fd is None:
            self._gone(name, pid)
            return
        self.watched[name] = (pid, fd)
        self.reactor.add_reader(fd, lambda: self._on_exit(name, pid))
        log.info("MCP member %s (pid %d) watched", name, pid)

    def forget(self, name: str) -> None:
        entry = self.watched.pop(name, None)
        if entry is not None:
            self.reactor.remove_reader(entry[1])
            os.close(entry[1])

    def _on_exit(self, name: str, pid: int) -> None:
        if self.watched.get(name, (0, 0))[0] == pid:
            self.forget(name)
        self._gone(name, pid)

    def _gone(self, name: str, pid: int) -> None:
        member = self.files.config.config_member(name)
        if member is None or member.tmux_pane_id != pane_of(pid):
            return  # it left cleanly (or joined again from another process)
        released = self.files.release(name)
        self._mark_gone(name)
        log.info("MCP member %s: its server (pid %d) ended without leaving; released %s", name, pid, released)
        self.files.terminated(
            TeammateTerminated(
                name=name,
                agent_id=member.agent_id,
                timestamp=now_iso(),
                status="killed",
                detail=f"its MCP server (pid {pid}) ended without leaving the team",
                released_tasks=released,
            )
        )
        if released:
            self.files.tasks_ready(released)

    def _mark_gone(self, name: str) -> None:
        try:
            self.files.config.update_member(name, is_active=False, tmux_pane_id="")
        except AgentTeamsError as exc:
            log.error("could not record that %s is inactive: %s", name, exc.message)

    def statuses(self) -> list[TeammateStatus]:
        return [
            TeammateStatus(name=name, pid=pid, state="connected", backend=BACKEND)
            for name, (pid, _) in self.watched.items()
        ]

    def close(self) -> None:
        for name in list(self.watched):
            self.forget(name)
