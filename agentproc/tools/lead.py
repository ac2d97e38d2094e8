"""The lead's own tools: TeamCreate and TeamDelete (2.1.38's names and inputs), and the lead's
answers to plans and permission requests, which SendMessage carries."""

from __future__ import annotations

import time
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, as_json, needed
from ipc import answers, control, permission_updates, team_permissions
from ipc.errors import AgentTeamsError
from ipc.paths import normalise_team_name
from ipc.schemas import PermissionRequest
from ipc.tool_inputs import LeadSendMessageInput, SendMessageInput, TeamCreateInput, TeamDeleteInput


def _team_create(ctx: AgentContext, args: TeamCreateInput) -> str:
    name = normalise_team_name(args.team_name)
    if name != ctx.team:
        raise ToolFailure(f"this lead leads team {ctx.team!r} (it exists already); it cannot create {name!r}")
    return as_json(
        {
            "team_name": ctx.team,
            "team_file_path": str(ctx.paths.config),
            "lead_agent_id": f"team-lead@{ctx.team}",
        }
    )


def _team_delete(ctx: AgentContext, args: TeamDeleteInput) -> str:
    if not ctx.team_ours:
        why = ctx.keep_reason or "it existed before the lead started, or the lead was told to keep it"
        raise ToolFailure(
            f"team {ctx.team!r} is not this lead's to delete ({why}); it stays as it is, with its members "
            "and tasks"
        )
    unfinished = [t for t in ctx.tasks.list(include_internal=False) if t.status != "completed"]
    if unfinished:
        named = ", ".join(f"#{t.id} ({'failed' if t.failed else t.status})" for t in unfinished)
        raise ToolFailure(
            f"the team has tasks that did not complete: {named}; it is kept so that they can be looked at "
            "and retried"
        )
    config = ctx.messenger.store.read()
    remaining = [m.name for m in config.teammates()]
    if remaining:
        raise ToolFailure(
            f"the team still has {len(remaining)} teammate(s): {', '.join(remaining)}; send each a shutdown_request "
            "and wait until they have approved it"
        )
    runtime = ctx.paths.runtime_dir()
    if control.running_pid(runtime) is not None:
        try:
            ctx.control().call(control.Down(id=control.new_id(), grace=2.0), timeout=30)
        except AgentTeamsError:
            pass  # it was going anyway
        ctx.close()
        deadline = time.monotonic() + 30
        while control.running_pid(runtime) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    ctx.messenger.store.delete()
    ctx.team_deleted = True
    return as_json(
        {"success": True, "message": f'Cleaned up directories for team "{ctx.team}"', "team_name": ctx.team}
    )


TEAM_CREATE = Tool("TeamCreate", TeamCreateInput, _team_create, kind="coordination")
TEAM_DELETE = Tool("TeamDelete", TeamDeleteInput, _team_delete, kind="coordination")


def set_permissions(ctx: AgentContext, args: LeadSendMessageInput) -> dict[str, Any]:
    """SendMessage type mode_set_request (a teammate's permission mode, now and for its
    restarts) or team_permission_update (rules or directories for the rest of its session)."""
    recipient = needed(args.recipient, "recipient")
    if args.kind == "mode_set_request":
        name = team_permissions.set_mode(ctx.messenger, recipient, needed(args.mode, "mode"))
        return {"success": True, "message": f"{name} will run in {args.mode} mode from its next turn"}
    changes = team_permissions.updates(args.rules or [], args.behavior, args.directories or [])
    names = team_permissions.update_permissions(ctx.messenger, recipient, changes)
    sent = [permission_updates.as_object(c) for c in changes]
    return {"success": True, "message": f"Sent to {', '.join(names)}", "updates": sent}


def answer_plan(ctx: AgentContext, args: SendMessageInput) -> dict[str, Any]:
    """SendMessage type plan_approval_response: approve (with a permission mode) or reject
    (with feedback) a teammate's plan."""
    recipient, request_id = needed(args.recipient, "recipient"), needed(args.request_id, "request_id")
    approved = args.approve
    response = answers.plan_answer(
        request_id, approved, permission_mode=args.permission_mode or "", feedback=args.content or ""
    )
    ctx.messenger.send_body(ctx.name, recipient, response)
    verdict = "approved" if approved else "rejected"
    return {"success": True, "message": f"Plan {verdict} for {recipient}", "request_id": request_id}


def answer_permission(ctx: AgentContext, args: SendMessageInput) -> dict[str, Any]:
    """SendMessage type permission_response (an agentteams addition: in Claude Code a person
    answers in the terminal): let the teammate's tool call run, or not."""
    recipient, request_id = needed(args.recipient, "recipient"), needed(args.request_id, "request_id")
    request = answers.find(ctx.mailbox, request_id, ctx.messenger.store)
    approved = args.approve
    if not isinstance(request, PermissionRequest):
        # One of the lead's own subagents asking (bubble): its answer goes into its record.
        from agentproc import (
            bubble,  # when used: it needs the permission policies, whose package imports this
        )

        if bubble.answer_from_lead(ctx, recipient, request_id, approved, args.content or ""):
            verdict = "granted" if approved else "denied"
            return {
                "success": True,
                "message": f"Permission {verdict} to {recipient}",
                "request_id": request_id,
            }
        raise ToolFailure(f"there is no permission request {request_id!r} in the lead's inbox")
    updates = request.permission_suggestions if approved and args.always else None
    response = answers.permission_answer(
        request, approved, permission_updates=updates, feedback=args.content or ""
    )
    ctx.messenger.send_body(ctx.name, recipient, response)
    return {
        "success": True,
        "message": f"Permission {'granted' if approved else 'denied'} to {recipient}",
        "request_id": request_id,
    }
