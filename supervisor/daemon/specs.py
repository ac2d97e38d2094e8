"""Who is started, and how: a teammate from its member entry (after checking everything a
spawn asks for, before anything is written), a subagent from its parent."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ipc import claude_code, locks, worktrees
from ipc.agents import AgentDefinition
from ipc.agents import resolve as resolve_agent_type
from ipc.errors import InvalidInput
from ipc.launch import LaunchSpec, SupervisorOptions
from ipc.model_specs import check_api_key, check_model, claude_code_model
from ipc.options import SubagentOptions, TeammateOptions, check_permission_mode, runs_claude_code
from ipc.paths import agent_id
from ipc.schemas import Member, TeamConfig


@dataclass(frozen=True)
class TeamContext:
    """What every spec of one supervisor shares."""

    team: str
    root: Path
    session: str
    options: SupervisorOptions
    supervisor_pid: int
    nofile: int = 0  # the open-file soft limit its agents run with (0: what they inherit)

    def definition(self, agent_type: str, cwd: str) -> AgentDefinition:
        """``agent_type`` as this team resolves it (its --agents first)."""
        return resolve_agent_type(agent_type, Path(cwd), self.options.agents)

    def base(self, **fields: object) -> LaunchSpec:
        return LaunchSpec(
            team_name=self.team,
            parent_session_id=self.session,
            root=str(self.root),
            wake=self.options.wake,
            fallback_poll=self.options.fallback_poll,
            supervisor_pid=self.supervisor_pid,
            claude_peers=self.options.claude_peers,
            nofile=self.nofile,
            fork_subagents=self.options.fork_subagents,
            agents=self.options.agents,
            **fields,  # type: ignore[arg-type]
        )


def teammate_spec(ctx: TeamContext, member: Member, *, permission_mode: str) -> LaunchSpec:
    return ctx.base(
        agent_id=member.agent_id,
        agent_name=member.name,
        agent_color=member.color_name or "blue",
        agent_type=member.agent_type_name or "general-purpose",
        model=member.model_name or "offline",
        plan_mode_required=member.plan_mode_required is True,
        permission_mode=permission_mode,
        allowed_tools=member.allowed_tools if isinstance(member.allowed_tools, str) else "",
        disallowed_tools=member.disallowed_tools if isinstance(member.disallowed_tools, str) else "",
        effort=member.effort if isinstance(member.effort, str) else "",
        cwd=member.cwd or str(Path.cwd()),
        backend=member.backend_type
        if member.backend_type in ("claude-code", "tmux", "in-process")
        else "process",
    )


def check_spawn(
    ctx: TeamContext, config: TeamConfig, options: TeammateOptions
) -> tuple[TeammateOptions, str]:
    """The options, checked, and the working directory the teammate gets; InvalidInput
    naming what is wrong (nothing has been written yet)."""
    if not options.backend:  # the team's mode (a claude-code model in tmux mode: `claude` in a pane)
        mode = ctx.options.teammate_mode
        options = msgspec.structs.replace(options, backend="process" if mode == "auto" else mode)
    options = options.checked()
    lead = config.member("team-lead")
    cwd = options.cwd or (lead.cwd if lead is not None and lead.cwd else str(Path.cwd()))
    if not os.path.isdir(cwd):
        raise InvalidInput(f"working directory {cwd!r} does not exist; give --cwd an existing directory")
    ctx.definition(options.agent_type, cwd)
    if options.isolation == "worktree":
        worktrees.check_repository(cwd)
    if runs_claude_code(options.backend, options.model):
        claude_code.command()  # installed, or a clear error before anything is written
        locks.note_claude_root(ctx.root)
        if not claude_code_model(options.model):  # Claude Code's own choice: the lead's model if Claude's
            lead_model = claude_code_model(lead.model_name) if lead is not None and lead.model_name else None
            model = lead_model or "sonnet"
            # In a pane the model says what it is (backendType is tmux, as Claude Code writes).
            options = msgspec.structs.replace(
                options, model=f"claude-code:{model}" if options.backend == "tmux" else model
            )
        return options, cwd
    check_api_key(
        options.model, f"(set it, then 'agentteams down {ctx.team}' and 'agentteams up {ctx.team}')"
    )
    return options, cwd


def subagent_spec(
    ctx: TeamContext, config: TeamConfig, options: SubagentOptions, parent: LaunchSpec | None
) -> LaunchSpec:
    """A subagent of ``parent`` (None: the lead agent), with its parent's cwd and color; its
    definition's permission mode, else its parent's (a planning or bypassing parent's wins); for model ``inherit``, its definition's model or
    else its parent's."""
    check_permission_mode(options.permission_mode)
    lead = config.member("team-lead")
    cwd = (
        parent.cwd if parent is not None else (lead.cwd if lead is not None and lead.cwd else str(Path.cwd()))
    )
    definition = ctx.definition(options.agent_type, cwd)
    model = options.model
    if options.fork:  # the parent's own model and mode, so that its requests share the parent's prefix
        model = options.parent_model or model
    elif model == "inherit":  # the agent definition's model, else the parent's, as Claude Code resolves it
        if definition.model and definition.model != "inherit":
            model = definition.model
        else:
            model = options.parent_model or (parent.model if parent is not None else "") or "offline"
    check_model(model)
    # permissionMode: bubble is no mode of its own: it decides as its parent would, and asks its parent.
    own_mode = definition.permission_mode if definition.permission_mode != "bubble" else None
    sub_id = options.resume or f"sub-{secrets.token_hex(4)}"
    return ctx.base(
        agent_id=agent_id(sub_id, ctx.team),
        agent_name=sub_id,
        agent_color=definition.color or (parent.agent_color if parent is not None else "blue"),
        agent_type=options.agent_type,
        model=model,
        cwd=cwd,
        # Claude Code: a forced mode, else the definition's permissionMode, else the parent's.
        permission_mode=options.permission_mode
        or own_mode
        or options.parent_permission_mode
        or (parent.permission_mode if parent is not None else ""),
        # Its definition's effort, else its parent's (the session's, as Claude Code has it).
        effort="" if definition.effort or parent is None else parent.effort,
        role="subagent",
        parent=options.parent,
        subagent_id=sub_id,
        fork=options.fork,
        bubble=options.fork or options.bubble or definition.permission_mode == "bubble",
    )
