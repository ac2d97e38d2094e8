"""Bubbling permissions (Claude Code's ``bubble`` mode, a fork's; an option for any
subagent): what a subagent may not do without asking goes up to its parent agent.

The subagent decides as its own mode and rules say; a call that would ask is written into
its result record (``asking``) and its parent is woken. The parent judges it by its own mode
and rules, as if it made the call itself: allowed or denied there and then; if the parent
would have to ask too, a teammate asks the lead (the permission_request path its own calls
take) and passes the answer down, and the lead puts it to its model as a turn (its answer, a
SendMessage permission_response to the subagent, is written back into the record). So a
subagent is never granted more than its parent could be, and never denied while someone
could answer: only when nobody answers within the permission timeout.
"""

from __future__ import annotations

import time
from typing import Any

from agentproc.context import AgentContext
from agentproc.permissions import ModePolicy, timeout
from agentproc.tools.base import Decision, Tool
from ipc import subagents
from ipc.errors import AgentTeamsError
from ipc.paths import permission_request_id
from ipc.replies import BubbledAnswer
from ipc.schemas import LEAD_NAME, PermissionRequest
from ipc.wake import LEAD_AGENT

# The lead cannot take a turn while it waits for a synchronous subagent: said, not hidden.
LEAD_BUSY = (
    "team-lead is waiting for this subagent's result and cannot be asked meanwhile; "
    "run it in the background (run_in_background) for its requests to reach the lead"
)


def ring(ctx: AgentContext, agent: str) -> None:
    """Wake ``agent`` (a parent, or a subagent) through its doorbell."""
    waker = ctx.channel.waker()
    if waker is not None:
        waker.wake(LEAD_AGENT if agent == LEAD_NAME else agent)


def reply(ctx: AgentContext, subagent: str, answer: BubbledAnswer) -> bool:
    """Answer ``subagent``'s request and wake it; False if it no longer waits for it."""
    if not subagents.answer(ctx.paths, subagent, answer):
        return False
    ring(ctx, subagent)
    return True


class BubblePolicy(ModePolicy):
    """A subagent's: what would ask goes to its parent, and it waits for the answer."""

    def ask(
        self, ctx: AgentContext, tool: Tool[Any], tool_use_id: str, args: dict[str, Any], decision: Decision
    ) -> tuple[bool, dict[str, Any], str]:
        parent = ctx.spec.parent
        request = PermissionRequest(
            request_id=permission_request_id(),
            agent_id=ctx.name,
            tool_name=tool.name,
            tool_use_id=tool_use_id,
            description=decision.reason,
            input=args,
        )
        subagents.ask(ctx.paths, ctx.name, request)
        ring(ctx, parent)
        limit = timeout()
        deadline = time.monotonic() + limit
        with ctx.off_cpu():
            while True:
                got = subagents.take_answer(ctx.paths, ctx.name, request.request_id)
                if got is not None:
                    return got.approved, got.updated_input or args, got.reason
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    subagents.take_answer(ctx.paths, ctx.name, request.request_id, withdraw=True)
                    return (
                        False,
                        args,
                        f"{parent} gave no answer to permission request {request.request_id} within {limit:g}s",
                    )
                woke = ctx.channel.wait(min(remaining, ctx.spec.fallback_poll))
                ctx.frames.extend(woke.frames)


def answer_pending(ctx: AgentContext, ids: list[str], *, can_take_turn: bool) -> PermissionRequest | None:
    """Answer what the subagents ``ids`` of this agent are asking. A request this agent's
    mode would have to ask about too: a teammate asks the lead (and waits); the lead returns
    it, for its model to answer in a turn (``can_take_turn``), else denies it, saying why."""
    for subagent in ids:
        try:
            record = subagents.read(ctx.paths, subagent)
        except AgentTeamsError:
            continue
        request = record.asking
        if request is None or record.answer is not None or request.request_id in ctx.bubbled:
            continue
        answer = _judge(ctx, subagent, request, can_take_turn)
        if answer is None:
            ctx.bubbled.add(request.request_id)
            return request
        reply(ctx, subagent, answer)
    return None


def _judge(
    ctx: AgentContext, subagent: str, request: PermissionRequest, can_take_turn: bool
) -> BubbledAnswer | None:
    def answer(approved: bool, reason: str = "", updated: dict[str, Any] | None = None) -> BubbledAnswer:
        return BubbledAnswer(
            request_id=request.request_id, approved=approved, updated_input=updated or {}, reason=reason
        )

    # Judged as the parent's own call of its own tool: a tool it lacks, it could not run either.
    tool = ctx.tool_named(request.tool_name) if ctx.tool_named is not None else None
    if tool is None:
        return answer(False, f"{ctx.name} has no tool {request.tool_name!r} to allow it")
    policy = ModePolicy()
    decision = policy.decide(ctx, tool, request.input)
    if decision.action == "allow":
        return answer(True)
    if decision.action == "deny":
        return answer(False, f"{ctx.name} may not either: {decision.reason}")
    if ctx.spec.role == "lead":
        return None if can_take_turn else answer(False, LEAD_BUSY)
    passed = Decision("ask", f"for its subagent {subagent}: {decision.reason}", decision.outside)
    approved, updated, reason = policy.ask(ctx, tool, request.tool_use_id, request.input, passed)
    return answer(approved, reason, updated)


def answer_from_lead(ctx: AgentContext, subagent: str, request_id: str, approved: bool, reason: str) -> bool:
    """The lead's model's answer (SendMessage permission_response) to a request of one of
    its own subagents that it was shown; False if ``subagent`` asks no such thing."""
    record = subagents.find(ctx.paths, ctx.name, subagent)
    if record is None or record.asking is None or record.asking.request_id != request_id:
        return False
    verdict = BubbledAnswer(
        request_id=request_id, approved=approved, reason="" if approved else reason or "denied by team-lead"
    )
    return reply(ctx, record.id, verdict)
