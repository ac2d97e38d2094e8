"""What the client side tells of the team's agents beside the table's operations: members
with what the running supervisor knows of each, and the subagents a person may move."""

from __future__ import annotations

from ipc import operations as io
from ipc import subagents
from ipc.errors import AgentTeamsError, InvalidInput, NotRunning
from ipc.replies import SubagentResult, TeammateStatus
from ipc.schemas import LEAD_NAME, Member
from ipc.wake import LEAD_AGENT
from supervisor.client.handle import TeamHandle

SUBAGENT_PREFIX = "sub-"  # every subagent's id (the supervisor names them sub-HEX)


def member_infos(team: TeamHandle) -> list[io.MemberInfo]:
    """The team's members (the lead first), with what the running supervisor knows of each."""
    config = team.config()
    running = {}
    if team.is_up():
        try:
            running = {t.name: t for t in team.status().teammates}
        except AgentTeamsError:
            pass  # it went down as we asked: the config still shows the members
    infos = []
    for m in config.members:
        live = running.get(m.name)
        infos.append(
            io.MemberInfo(
                name=m.name,
                agent_id=m.agent_id,
                agent_type=m.agent_type_name,
                model=m.model_name,
                color=m.color_name,
                backend=m.backend_type if isinstance(m.backend_type, str) else "",
                active=_alive(m, live),
                state=live.state if live else "",
                pid=live.pid if live else None,
                task=live.task if live else "",
            )
        )
    return infos


def _alive(member: Member, live: TeammateStatus | None) -> bool | None:
    """Whether its process (or MCP session) runs: the supervisor's word when it has one.
    ``isActive`` says whether it works on a turn; it stands in only where no supervisor of
    ours knows the member (a team of Claude Code's own, a member on another host, a team
    that is down)."""
    if live is not None:
        return live.pid is not None
    return member.is_active if isinstance(member.is_active, bool) else None


def to_background(team: TeamHandle, subagent: str) -> SubagentResult:
    """Mark a running subagent as moved to the background and ring its parent, which stops
    waiting for it (Conflict if it is not running)."""
    team.store.read()  # NotFound for a team that does not exist
    if not subagent.startswith(SUBAGENT_PREFIX):
        raise InvalidInput(f"subagent {subagent!r} is not a subagent id like 'sub-1a2b3c4d' (ps shows them)")
    record = subagents.read(team.paths, subagent)  # NotFound naming it
    if record.status == "running" and team.state.engine is None and not team.is_up():
        # A record left "running" by a supervisor that went down: nothing runs it to move.
        raise NotRunning(f"team {team.name!r} is not up, so subagent {subagent!r} is not running")
    moved = subagents.to_background(team.paths, subagent)
    team.wake(LEAD_AGENT if moved.parent == LEAD_NAME else moved.parent)
    return moved
