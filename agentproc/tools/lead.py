"""The lead's own tools: TeamCreate and TeamDelete (2.1.38's names and inputs), and the lead's
answers to plans and permission requests, which SendMessage carries."""

from __future__ import annotations

import time
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, as_json, require
from ipc import control
from ipc.clock import now_iso
from ipc.errors import AgentTeamsError
from ipc.paths import normalise_team_name
from ipc.schemas import (
    PermissionGrant,
    PermissionRequest,
    PermissionResponse,
    PlanApprovalResponse,
    parse_body,
)


def _team_create(ctx: AgentContext, args: dict[str, Any]) -> str:
    name = normalise_team_name(require(args, "team_name"))
    if name != ctx.team:
        raise ToolFailure(f"this lead leads team {ctx.team!r} (it exists already); it cannot create {name!r}")
    return as_json(
        {
            "team_name": ctx.team,
            "team_file_path": str(ctx.paths.config),
            "lead_agent_id": f"team-lead@{ctx.team}",
        }
    )


def _team_delete(ctx: AgentContext, args: dict[str, Any]) -> str:
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


TEAM_CREATE = Tool(
    name="TeamCreate",
    description="Create the team (this lead's team already exists; calling it again returns it).",
    input_schema={
        "type": "object",
        "properties": {
            "team_name": {"type": "string"},
            "description": {"type": "string"},
            "agent_type": {"type": "string"},
        },
        "required": ["team_name"],
    },
    run=_team_create,
    kind="coordination",
)
TEAM_DELETE = Tool(
    name="TeamDelete",
    description="Delete the team and its task list, once every teammate has shut down.",
    input_schema={"type": "object", "properties": {}},
    run=_team_delete,
    kind="coordination",
)


def answer_plan(ctx: AgentContext, args: dict[str, Any]) -> dict[str, Any]:
    """SendMessage type plan_approval_response: approve (with a permission mode) or reject
    (with feedback) a teammate's plan."""
    recipient, request_id = require(args, "recipient"), require(args, "request_id")
    approved = args.get("approve") is True
    response = PlanApprovalResponse(request_id=request_id, approved=approved, timestamp=now_iso())
    if approved:
        response.permission_mode = str(args.get("permission_mode") or "acceptEdits")
    else:
        response.feedback = str(args.get("content") or "Rejected by the lead.")
    ctx.messenger.send_body(ctx.name, recipient, response)
    verdict = "approved" if approved else "rejected"
    return {"success": True, "message": f"Plan {verdict} for {recipient}", "request_id": request_id}


def answer_permission(ctx: AgentContext, args: dict[str, Any]) -> dict[str, Any]:
    """SendMessage type permission_response (an agentteams addition: in Claude Code a person
    answers in the terminal): let the teammate's tool call run, or not."""
    recipient, request_id = require(args, "recipient"), require(args, "request_id")
    request = next(
        (
            b
            for m in ctx.mailbox.history()
            if isinstance(b := parse_body(m.text), PermissionRequest) and b.request_id == request_id
        ),
        None,
    )
    if request is None:
        raise ToolFailure(f"there is no permission request {request_id!r} in the lead's inbox")
    if args.get("approve") is True:
        response = PermissionResponse(
            request_id=request_id,
            subtype="success",
            response=PermissionGrant(updated_input=request.input, permission_updates=[]),
        )
    else:
        response = PermissionResponse(
            request_id=request_id, subtype="error", error=str(args.get("content") or "Denied by the lead")
        )
    ctx.messenger.send_body(ctx.name, recipient, response)
    return {
        "success": True,
        "message": f"Permission {'granted' if args.get('approve') is True else 'denied'} to {recipient}",
        "request_id": request_id,
    }
