"""EnterPlanMode (read-only from then on) and ExitPlanMode: write the plan file, send
plan_approval_request, wait for the answer."""

from __future__ import annotations

import os
from typing import Any

from agentproc.context import AgentContext
from agentproc.replies import wait_for_reply
from agentproc.tools.base import Tool, ToolFailure
from ipc.clock import now_iso, now_ms
from ipc.paths import plan_request_id
from ipc.schemas import LEAD_NAME, PlanApprovalRequest, PlanApprovalResponse, parse_body
from ipc.storage import atomic_write
from ipc.tool_inputs import EnterPlanModeInput, ExitPlanModeInput


def plan_timeout() -> float:
    return float(os.environ.get("AGENTTEAMS_PLAN_TIMEOUT", "300"))


def _exit_plan_mode(ctx: AgentContext, args: ExitPlanModeInput) -> str:
    plan = args.plan
    if not ctx.in_plan_mode:
        return "User has approved exiting plan mode"  # idempotent, as Claude Code
    ms = now_ms()
    request_id = plan_request_id(ctx.name, ctx.team, ms)
    plan_file = ctx.paths.plans / f"{ctx.name}-{ms}.md"
    atomic_write(plan_file, plan.encode())
    body = PlanApprovalRequest(
        from_=ctx.name,
        timestamp=now_iso(),
        plan_file_path=str(plan_file),
        plan_content=plan,
        request_id=request_id,
    )
    ctx.messenger.send_body(ctx.name, LEAD_NAME, body)  # no color, as Claude Code

    def is_answer(message: Any) -> bool:
        answer = parse_body(message.text)
        return isinstance(answer, PlanApprovalResponse) and answer.request_id == request_id

    reply = wait_for_reply(ctx, is_answer, plan_timeout())
    if reply is None:
        raise ToolFailure(
            f"no answer to plan approval request {request_id} within {plan_timeout():g}s; still in plan mode"
        )
    answer = parse_body(reply.text)
    assert isinstance(answer, PlanApprovalResponse)
    if answer.approved:
        ctx.plan_mode = False
        if isinstance(answer.permission_mode, str) and answer.permission_mode:
            ctx.permission_mode = answer.permission_mode
        return (
            f"Plan approved ({request_id}). Permission mode is now {ctx.permission_mode}. Carry out the plan."
        )
    feedback = answer.feedback if isinstance(answer.feedback, str) else "no feedback given"
    return (
        f"Plan rejected ({request_id}). Feedback: {feedback}\n"
        "You are still in plan mode: revise the plan and call ExitPlanMode again."
    )


EXIT_PLAN_MODE = Tool("ExitPlanMode", ExitPlanModeInput, _exit_plan_mode, kind="coordination")


def _enter_plan_mode(ctx: AgentContext, args: EnterPlanModeInput) -> str:
    if ctx.in_plan_mode:
        return "Already in plan mode."
    ctx.plan_mode = True  # ExitPlanMode's approved plan ends it
    return (
        "Entered plan mode: explore with the read-only tools and design the plan; nothing may be changed "
        "until you submit it with ExitPlanMode and it is approved."
    )


ENTER_PLAN_MODE = Tool("EnterPlanMode", EnterPlanModeInput, _enter_plan_mode, kind="coordination")
