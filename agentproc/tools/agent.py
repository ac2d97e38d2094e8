"""The Agent tool (2.1.330's name; 2.1.38 calls it Task), TaskOutput and TaskStop for
background subagents, and agentteams' TaskBackground (a check-in's answer, agentproc.checkins).

With ``name`` (and a team), the lead spawns a teammate; otherwise any agent but a subagent
starts a subagent (a teammate's ``name`` names it): synchronously (its final text is the
tool result) or with ``run_in_background`` (the result arrives later as a
``<task-notification>``). ``resume`` continues an ended subagent from its sidechain.
"""

from __future__ import annotations

from typing import Any

from agentproc import fork, subagents
from agentproc.context import AgentContext
from agentproc.tools import shells
from agentproc.tools.base import Tool, ToolFailure, as_json
from ipc import control
from ipc.agents import resolve as resolve_agent_type
from ipc.errors import NotFound
from ipc.options import SubagentOptions, TeammateOptions
from ipc.replies import SpawnReply, SubagentReply, SubagentResult
from ipc.subagents import MAX_RESULT_CHARS, ForkBase, to_background, usage_text, write_fork_base
from ipc.subagents import find as find_subagent
from ipc.subagents import read as read_result
from ipc.tool_inputs import AgentInput, AgentMode, TaskBackgroundInput, TaskOutputInput, TaskStopInput


def _permission(mode: AgentMode | None) -> tuple[str, bool]:
    """(permission mode, plan mode required) for the tool's ``mode``, as Claude Code maps
    it: ``plan`` requires a plan, ``delegate`` works as ``acceptEdits``."""
    if mode is None:
        return "", False
    if mode == "plan":
        return "", True
    return ("acceptEdits" if mode == "delegate" else mode), False


def _agent(ctx: AgentContext, args: AgentInput) -> str:
    if ctx.spec.fork:
        raise ToolFailure(fork.NO_FORK)
    if ctx.spec.role == "subagent":
        raise ToolFailure("a subagent cannot start teammates or subagents (the roster is flat)")
    if args.name and not args.resume and ctx.spec.role == "lead":
        return _teammate(ctx, args)  # a teammate's name names its subagent instead
    if ctx.spec.backend == "in-process" and _in_background(ctx, args):
        # As Claude Code: a thread of the team's host process outlives none of its work.
        raise ToolFailure(
            "an in-process teammate cannot start background agents (or forks): run the subagent "
            "synchronously (without run_in_background), or spawn this teammate as a process"
        )
    if args.isolation:
        raise ToolFailure(
            "isolation 'worktree' is for teammates here (give a 'name'); a subagent works in its parent's cwd"
        )
    if args.resume:
        record = find_subagent(ctx.paths, ctx.name, args.resume)
        if record is None:
            raise ToolFailure(f"{ctx.name} has no subagent {args.resume!r} to resume")
        if record.status == "running":
            raise ToolFailure(f"{args.resume} is still running: send it a message with SendMessage instead")
        background = (
            args.run_in_background
            or resolve_agent_type(record.agent_type, ctx.cwd, ctx.spec.agents).background
        )
        started = subagents.start_resumed(ctx, record, args.prompt, background=background)
    elif not args.subagent_type and _fork_gate(ctx):
        return _fork(ctx, args)
    else:
        agent_type = args.subagent_type or "general-purpose"
        # Either the call or the agent's definition (background: true) makes it asynchronous.
        background = (
            args.run_in_background or resolve_agent_type(agent_type, ctx.cwd, ctx.spec.agents).background
        )
        permission_mode, _ = _permission(args.mode)
        if ctx.in_plan_mode:
            permission_mode = "plan"  # a helper of a planning agent plans too: read-only
        elif ctx.permission_mode == "bypassPermissions":
            permission_mode = "bypassPermissions"  # as Claude Code: a definition cannot narrow it
        started = subagents.start(
            ctx,
            _options(
                ctx,
                args,
                agent_type=agent_type,
                model=args.model or "inherit",
                parent_model=ctx.spec.model,
                permission_mode=permission_mode,
                background=background,
            ),
        )
    if background:
        return _launched(args, started)
    result = subagents.wait_foreground(ctx, started.id)
    if result is None:
        return _launched(args, started, moved=True)
    subagents.mark_notified(ctx, result)
    return _sync_result(result)


def _in_background(ctx: AgentContext, args: AgentInput) -> bool:
    """Whether the call would start (or resume) a subagent in the background."""
    if args.run_in_background or (not args.subagent_type and not args.resume and _fork_gate(ctx)):
        return True
    record = find_subagent(ctx.paths, ctx.name, args.resume) if args.resume else None
    agent_type = record.agent_type if record is not None else args.subagent_type or "general-purpose"
    return resolve_agent_type(agent_type, ctx.cwd, ctx.spec.agents).background


def _fork_gate(ctx: AgentContext) -> bool:
    """Whether an Agent call without a type forks this agent: its definition's
    ``forkSubagent`` if it says, else the team's gate."""
    own = resolve_agent_type(ctx.spec.agent_type, ctx.cwd, ctx.spec.agents).fork_subagent
    return ctx.spec.fork_subagents if own is None else own


def _fork(ctx: AgentContext, args: AgentInput) -> str:
    """A fork of this agent, always in the background: its requests begin as this agent's
    do now (system prompt, tool definitions, conversation through this call), in its model."""
    if ctx.request_base is None or not ctx.model_spec:
        raise ToolFailure("this agent cannot be forked (it has no model conversation); give a subagent_type")
    system, tools = ctx.request_base()
    write_fork_base(ctx.paths, ctx.name, ctx.tool_use_id, ForkBase(system=system, tools=tools))
    started = subagents.start(
        ctx,
        _options(
            ctx,
            args,
            agent_type=ctx.spec.agent_type,
            model=ctx.model_spec,
            parent_model=ctx.model_spec,
            # A delegating lead's fork does the work, in a subagent's usual mode.
            permission_mode=ctx.permission_mode if ctx.permission_mode != "delegate" else "acceptEdits",
            background=True,
            fork=True,
        ),
    )
    return _launched(args, started)


def _options(ctx: AgentContext, args: AgentInput, **kind: Any) -> SubagentOptions:
    """A new subagent of this call: what every kind is told of its parent and the call, and
    what its kind adds (type, model, mode, background, fork)."""
    return SubagentOptions(
        parent=ctx.name,
        prompt=args.prompt,
        description=args.description,
        parent_permission_mode=ctx.permission_mode,
        name=args.name or "",
        tool_use_id=ctx.tool_use_id,
        **kind,
    )


def _launched(args: AgentInput, started: SubagentReply, *, moved: bool = False) -> str:
    said = "Moved to the background while it ran" if moved else "Running in the background"
    return as_json(
        {
            "status": "async_launched",
            "agentId": started.id,
            "description": args.description,
            "prompt": args.prompt,
            "outputFile": started.output_file,
            "canReadOutputFile": True,
            "message": f"{said}; its result arrives as a <task-notification>.",
        }
    )


def _sync_result(result: SubagentResult) -> str:
    """As Claude Code returns a synchronous subagent: its answer (100,000 characters at most),
    its agentId to continue it, and its usage; a failed one's partial answer, as an error."""
    tail = (
        f"agentId: {result.id} (to continue this agent with its context: Agent with resume, or SendMessage)\n"
        f"{usage_text(result)}"
    )
    if result.status != "completed":
        partial = f"\n\nIts partial result:\n{result.result[:MAX_RESULT_CHARS]}" if result.result else ""
        raise ToolFailure(f"the subagent {result.status}: {result.error}{partial}\n\n{tail}")
    answer = result.result[:MAX_RESULT_CHARS] or "(the subagent finished without a final answer)"
    return f"{answer}\n\n{tail}"


def _teammate(ctx: AgentContext, args: AgentInput) -> str:
    name = args.name or ""
    permission_mode, plan_required = _permission(args.mode)
    team_name = args.team_name
    if team_name and team_name != ctx.team:
        raise ToolFailure(f"this lead leads team {ctx.team!r}; it cannot spawn into {team_name!r}")
    if ctx.messenger.store.config_member(name) is not None:
        raise ToolFailure(
            f"the team already has a teammate named {name!r}: message it with SendMessage, or give another name"
        )
    if not permission_mode and not plan_required and ctx.permission_mode not in ("plan", "delegate"):
        permission_mode = ctx.permission_mode  # Claude Code's teammates inherit the lead's mode
    options = TeammateOptions(
        name=name,
        prompt=args.prompt,
        model=args.model or ctx.spec.model,  # the lead's model, unless told
        agent_type=args.subagent_type or "general-purpose",
        plan_mode_required=plan_required,
        permission_mode=permission_mode,
        isolation=args.isolation or "none",
    )
    reply: SpawnReply = ctx.control().call(control.Spawn(id=control.new_id(), options=options), timeout=60)
    return as_json(
        {
            "status": "teammate_spawned",
            "name": reply.name,
            "agent_id": f"{reply.name}@{ctx.team}",
            "team_name": ctx.team,
            "color": reply.color,
            "renamed_from": reply.renamed_from or None,
            "message": f"{reply.name} has joined the team and is working on its prompt.",
        }
    )


def _agent_type(args: AgentInput) -> str:
    return args.subagent_type or "general-purpose"


AGENT = Tool("Agent", AgentInput, _agent, kind="coordination", subject=_agent_type)


def _task_output(ctx: AgentContext, args: TaskOutputInput) -> str:
    task_id, block, timeout_ms = args.task_id, args.block, args.timeout
    if task_id.startswith(shells.PREFIX):
        return as_json(shells.output(ctx, task_id, block, timeout_ms / 1000))
    if read_result(ctx.paths, task_id).parent != ctx.name:
        raise ToolFailure(f"{task_id} is not a subagent of {ctx.name}")
    result = subagents.wait(ctx, task_id, timeout_ms / 1000) if block else read_result(ctx.paths, task_id)
    if result.status != "running":
        subagents.mark_notified(ctx, result)
    return as_json(
        {"task_id": task_id, "status": result.status, "result": result.result, "error": result.error}
    )


def _task_stop(ctx: AgentContext, args: TaskStopInput) -> str:
    task_id = args.task_id
    if task_id.startswith(shells.PREFIX):
        return as_json(shells.stop(ctx, task_id))
    result = read_result(ctx.paths, task_id)
    if result.parent != ctx.name:
        raise ToolFailure(f"{task_id} is not a subagent of {ctx.name}")
    if result.status != "running":
        raise ToolFailure(f"{task_id} is not running (it {result.status})")
    subagents.stop(ctx, task_id)
    stopped = subagents.wait(ctx, task_id, timeout=10)
    subagents.mark_notified(ctx, stopped)  # the caller knows: no notification turn follows
    return as_json({"task_id": task_id, "status": stopped.status, "message": f"Stopped {task_id}"})


TASK_OUTPUT = Tool("TaskOutput", TaskOutputInput, _task_output, kind="coordination")
TASK_STOP = Tool("TaskStop", TaskStopInput, _task_stop, kind="coordination")


def _task_background(ctx: AgentContext, args: TaskBackgroundInput) -> str:
    """Its call at a check-in is read by the check-in itself (agentproc.checkins); a call in
    a turn finds no synchronous subagent waiting (the turn waits on none), so it can only
    confirm one already in the background."""
    task_id = args.task_id
    try:
        result = read_result(ctx.paths, task_id)
    except NotFound:
        raise ToolFailure(f"{ctx.name} has no subagent {task_id!r}") from None
    if result.parent != ctx.name:
        raise ToolFailure(f"{task_id} is not a subagent of {ctx.name}")
    if result.status != "running":
        raise ToolFailure(f"{task_id} is not running (it {result.status}): nothing to move")
    to_background(ctx.paths, task_id, by="its parent's model (TaskBackground)")
    ctx.background.add(task_id)
    message = f"{task_id} runs in the background; its result arrives as a <task-notification>."
    return as_json({"task_id": task_id, "status": "running", "message": message})


TASK_BACKGROUND = Tool("TaskBackground", TaskBackgroundInput, _task_background, kind="coordination")
