"""Subagents from the parent's side, as Claude Code's Agent tool runs them: start one
through the supervisor, wait for its result, and turn finished background ones into
``<task-notification>`` turns."""

from __future__ import annotations

import os
import time
from types import ModuleType

from agentproc import checkins
from agentproc.context import AgentContext
from ipc import control, subagents
from ipc.clock import now_ms
from ipc.errors import AgentTeamsError, Conflict, NotFound, SupervisorError
from ipc.options import SubagentOptions
from ipc.replies import SubagentReply, SubagentResult


def _bubble() -> ModuleType:
    # Imported when used: it needs the permission policies, whose package imports this module.
    from agentproc import bubble

    return bubble


def start(ctx: AgentContext, options: SubagentOptions) -> SubagentReply:
    reply: SubagentReply = ctx.control().call(
        control.SpawnSubagent(id=control.new_id(), options=options), timeout=60
    )
    if options.background:
        ctx.background.add(reply.id)
    return reply


def wait(ctx: AgentContext, subagent: str, timeout: float | None = None) -> SubagentResult:
    """The subagent's result once it has ended (or as it stands after ``timeout`` s). Its end
    wakes us; link frames that arrive meanwhile are kept for the loop."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with ctx.off_cpu():
        while True:
            result = subagents.read(ctx.paths, subagent)
            if result.status != "running":
                return result
            remaining = 5.0 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                return result
            _bubble().answer_pending(ctx, [subagent], can_take_turn=False)  # what it asks, meanwhile
            woke = ctx.channel.wait(min(remaining, 5.0))
            ctx.frames.extend(woke.frames)


def auto_background() -> float | None:
    """Seconds after which a synchronous subagent goes on in the background (None: never)."""
    value = float(os.environ.get("AGENTTEAMS_AUTO_BACKGROUND", "0") or 0)
    return value if value > 0 else None


def wait_foreground(ctx: AgentContext, subagent: str) -> SubagentResult | None:
    """A synchronous subagent's result once it has ended, or None once it is moved to the
    background while it works: by this agent's model at a check-in (agentproc.checkins), by
    a person (``agentteams background``), by the auto-background timeout, or because the
    lead must answer what it asks and can do so only between turns. It then stays this
    agent's background subagent: its result comes as a notification."""
    after = auto_background()
    deadline = None if after is None else time.monotonic() + after
    every = ctx.check_in_every if ctx.check_in is not None else 0.0
    next_check = time.monotonic() + every if every > 0 else None
    checks = 0
    with ctx.off_cpu():
        while True:
            result = subagents.read(ctx.paths, subagent)
            if result.status != "running":
                return result
            moved = "a person" if result.background else ""  # (its record says who)
            if not moved and deadline is not None and time.monotonic() >= deadline:
                moved = "the auto-background timeout"
            asked = _bubble().answer_pending(ctx, [subagent], can_take_turn=ctx.spec.role == "lead")
            if asked is not None:  # the lead's model answers it in its next turn
                ctx.bubbled.discard(asked.request_id)
                moved = moved or "a request only the lead can answer"
            if (
                not moved
                and next_check is not None
                and ctx.check_in is not None
                and time.monotonic() >= next_check
            ):
                if not subagents.checked_in(ctx.paths, subagent):
                    continue  # it has just ended: its result, as usual
                checks += 1
                if ctx.check_in(_check(ctx, result, checks)):
                    moved = f"its parent's model at check-in {checks}"
                next_check = time.monotonic() + every
            if moved:
                try:
                    subagents.to_background(ctx.paths, subagent, by=moved)
                except AgentTeamsError:
                    continue  # it has just ended: its result, as usual
                ctx.background.add(subagent)
                return None
            woke = ctx.channel.wait(_until(deadline, next_check))
            ctx.frames.extend(woke.frames)


def _until(*moments: float | None) -> float:
    """Seconds to wait for a wake-up: 5 at most, and not past the next timed step."""
    now = time.monotonic()
    return max(0.0, min([5.0, *(m - now for m in moments if m is not None)]))


def _check(ctx: AgentContext, result: SubagentResult, number: int) -> checkins.CheckIn:
    return checkins.CheckIn(
        subagent=result.id,
        description=result.description,
        prompt=result.prompt[: checkins.MAX_PROGRESS],
        seconds=max(0, (now_ms() - result.started_ms) // 1000),
        progress=checkins.progress(ctx.paths, ctx.name, result.id),
        number=number,
    )


def stop(ctx: AgentContext, subagent: str) -> None:
    ctx.control().call(control.StopSubagent(id=control.new_id(), subagent=subagent), timeout=10)


def mark_notified(ctx: AgentContext, result: SubagentResult) -> None:
    """Its parent has its result (a notification turn, TaskOutput, or the sync tool result)."""
    ctx.background.discard(result.id)
    if not result.notified:
        try:
            subagents.mark_notified(ctx.paths, result)
        except NotFound:
            pass  # its record is gone (the team was deleted)


def take_up(ctx: AgentContext, joined_ms: int) -> None:
    """At this agent's start: the subagents of its own (since it joined the team at
    ``joined_ms``) it has not heard the end of, which a restart forgot, are waited for
    again, each told once as a notification."""
    try:
        pending = subagents.unreported_of(ctx.paths, ctx.name, joined_ms)
    except AgentTeamsError:
        return  # no subagents folder to read: none to take up
    ctx.background.update(pending)


def next_notification(ctx: AgentContext) -> SubagentResult | None:
    """One of this agent's background subagents that has ended and not been reported yet
    (only the ones this process started are looked at: no directory scan per turn)."""
    for subagent in sorted(ctx.background):
        try:
            result = subagents.read(ctx.paths, subagent)
        except AgentTeamsError:
            ctx.background.discard(subagent)  # its record is gone (the team was deleted)
            continue
        if result.status != "running" and not result.notified:
            return result
    return None


def running(ctx: AgentContext) -> list[str]:
    """This agent's subagents that are still running."""
    try:
        return subagents.running_of(ctx.paths, ctx.name, ctx.subagents_settled)
    except AgentTeamsError:
        return []


def notification(result: SubagentResult, output_file: str) -> str:
    """Claude Code's ``<task-notification>`` for a background subagent that has ended."""
    summary = f'Agent "{result.description or result.id}" {result.status}'
    body = (
        result.result
        if result.status == "completed"
        else "\n\n".join(p for p in (result.error, result.result) if p)
    )
    tool_use = f"<tool-use-id>{result.tool_use_id}</tool-use-id>\n" if result.tool_use_id else ""
    return (
        "<task-notification>\n"
        f"<task-id>{result.id}</task-id>\n"
        f"{tool_use}"
        f"<output-file>{output_file}</output-file>\n"
        f"<status>{result.status}</status>\n"
        f"<summary>{summary}</summary>\n"
        f"<result>{body[: subagents.MAX_RESULT_CHARS]}</result>\n"
        f"{subagents.usage_text(result)}\n"
        "</task-notification>"
    )


def deliver(ctx: AgentContext, result: SubagentResult, text: str) -> dict[str, object]:
    """SendMessage to one of this agent's subagents: queued for its next turn while it runs,
    else it is resumed from its sidechain in the background (its answer comes as a
    ``<task-notification>``)."""
    if subagents.queue(ctx.paths, result.id, text):
        return {
            "success": True,
            "message": f"Queued for {result.name or result.id}'s next turn",
            "agentId": result.id,
        }
    started = start_resumed(ctx, result, text, background=True)
    return {
        "success": True,
        "message": f"{result.name or result.id} resumed in the background",
        "agentId": started.id,
    }


def start_resumed(
    ctx: AgentContext, result: SubagentResult, prompt: str, *, background: bool
) -> SubagentReply:
    """An ended subagent again, from its sidechain; a subagent still exiting is waited for."""
    options = SubagentOptions(
        parent=ctx.name,
        prompt=prompt,
        description=result.description,
        agent_type=result.agent_type,
        # A fork goes on in its parent's model, as it began.
        parent_model=ctx.model_spec if result.fork and ctx.model_spec else ctx.spec.model,
        parent_permission_mode=ctx.permission_mode,
        background=background,
        resume=result.id,
        tool_use_id=ctx.tool_use_id,
        fork=result.fork,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            return start(ctx, options)
        except (SupervisorError, Conflict) as exc:
            if subagents.STILL_ENDING not in exc.message or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
