"""An MCP session that is a member of its team (``agentteams mcp TEAM --as NAME``).

Joining writes the member into the config as Claude Code's files describe a teammate
(``backendType: "mcp"``, a colour in join order, ``tmuxPaneId: "mcp:{pid}"`` naming this
process, ``isActive: true``), binds its doorbell as a teammate binds its own (so a send
wakes a waiting ``wait_for_messages`` at once), and asks a running supervisor to watch this
process. Leaving, when the client goes away, releases its in-progress tasks, as for a
teammate that crashed, and marks it inactive; it stays a member, and the same name can
join again. A process killed before it could leave is settled by the supervisor (or by the
next ``up``), which sees its pid end.
"""

from __future__ import annotations

import logging
import os

from ipc import control, trust
from ipc.bell import Bell
from ipc.errors import AgentTeamsError, Conflict, InvalidInput
from ipc.launch import DEFAULT_FALLBACK_POLL
from ipc.osproc import alive
from ipc.paths import normalise_agent_name
from ipc.schemas import LEAD_NAME, Member
from supervisor.client.handle import TeamHandle
from supervisor.client.outsiders import BACKEND, release_tasks

log = logging.getLogger("agentteams.mcp")


def pane() -> str:
    return f"{BACKEND}:{os.getpid()}"


def _serving_pid(member: Member) -> int | None:
    prefix = f"{BACKEND}:"
    rest = member.tmux_pane_id[len(prefix) :] if member.tmux_pane_id.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


class Membership:
    def __init__(self, team: TeamHandle, name: str, *, fallback_poll: float = DEFAULT_FALLBACK_POLL) -> None:
        self.team = team
        self.name = normalise_agent_name(name)
        self.fallback_poll = fallback_poll
        self.joined = False
        if self.name == LEAD_NAME:
            raise InvalidInput(
                f"{LEAD_NAME!r} is the lead's name; leave out --as to act for the lead, or join under another name"
            )

    def check(self) -> None:
        """Refuse, changing nothing, a name another member or another MCP server holds."""
        member = self.team.store.config_member(self.name)
        self.team.store.read()  # NotFound for a team that does not exist
        if member is None:
            return
        if member.backend_type != BACKEND:
            backend = member.backend_type if isinstance(member.backend_type, str) else "claude-code"
            raise Conflict(
                f"{self.name!r} is already a teammate of team {self.team.name!r} ({backend}); join under another name"
            )
        pid = _serving_pid(member)
        if pid is not None and pid != os.getpid() and alive(pid) and member.is_active is True:
            raise Conflict(f"{self.name!r} is already joined through the MCP server with pid {pid}")

    def join(self) -> Member:
        """Become the member (again): config, doorbell, the supervisor's watch."""
        self.check()
        store = self.team.store
        if store.config_member(self.name) is None:
            added = store.add_member(self.name, agent_type="mcp", model="", backend_type=BACKEND)
            self.name = added.name
        member = store.update_member(self.name, tmux_pane_id=pane(), is_active=True)
        # An identity of its own: what this session sends in the member's name is signed.
        key = trust.new_key()
        store.set_key(self.name, trust.public_text(key))
        trust.keyring.install(self.team.paths, self.name, key)
        if self.name not in self.team.bells:
            self.team.bells[self.name] = Bell(
                self.team.paths, self.name, doorbell=True, fallback_poll=self.fallback_poll
            )
        self.team.state.mailbox(self.name).create()
        self.joined = True
        self._tell_supervisor()
        return member

    def _tell_supervisor(self) -> None:
        if not self.team.is_up():
            return  # the next `up` finds this process by the pane the config names
        try:
            self.team.call(
                control.WatchMember(id=control.new_id(), name=self.name, pid=os.getpid()), timeout=5
            )
        except AgentTeamsError as exc:
            log.warning("the supervisor will not watch %s: %s", self.name, exc.message)

    def leave(self) -> list[str]:
        """The client went away: its tasks released, the member inactive (still a member).
        Nothing happens if it is no longer this process's member (removed, or joined again
        from another server). Returns the released task ids."""
        if not self.joined:
            return []
        self.joined = False
        member = self.team.store.config_member(self.name)
        if member is None or member.tmux_pane_id != pane():
            return []
        released = release_tasks(self.team, self.name)
        self.team.store.update_member(self.name, is_active=False, tmux_pane_id="")
        return released

    def close(self) -> None:
        """Leave (if still joined) and let go of the doorbell."""
        try:
            self.leave()
        except AgentTeamsError as exc:
            log.warning("leaving as %s: %s", self.name, exc.message)
        bell = self.team.bells.pop(self.name, None)
        if bell is not None:
            bell.close()
