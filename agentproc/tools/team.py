"""The coordination tools: SendMessage and the task tools, with Claude Code's input names.

SendMessage takes both spellings Claude Code has used: 2.1.38's ``{type, recipient,
content, summary, request_id, approve}`` and 2.1.330's ``{to, message, summary}`` where
``message`` is a string or ``{type: shutdown_request|shutdown_response|plan_approval_response,
…}``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentproc import hooks
from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, as_json, require
from agentproc.tools.lead import answer_permission, answer_plan
from ipc.clock import now_iso
from ipc.schemas import BACKEND_TYPE, LEAD_NAME, ShutdownApproved, ShutdownRejected, Task

MESSAGE_TYPES = (
    "message",
    "broadcast",
    "shutdown_request",
    "shutdown_response",
    "plan_approval_response",
    "permission_response",
)


def normalise_send(args: dict[str, Any]) -> dict[str, Any]:
    """2.1.330's ``{to, message}`` as 2.1.38's ``{type, recipient, content}`` (which passes
    through unchanged)."""
    if "type" in args or "to" not in args:
        return args
    to, message = str(args.get("to", "")), args.get("message")
    out: dict[str, Any] = {"summary": args.get("summary")}
    if isinstance(message, dict):
        kind = message.get("type")
        out["type"] = kind
        out["recipient"] = to
        if kind == "shutdown_request":
            out["content"] = message.get("reason")
        elif kind in ("shutdown_response", "plan_approval_response", "permission_response"):
            out.update(
                request_id=message.get("request_id"),
                approve=message.get("approve"),
                content=message.get("reason") or message.get("feedback"),
            )
        return out
    out.update(type="broadcast" if to in ("*", "@team") else "message", recipient=to, content=message)
    if not out.get("summary") and isinstance(message, str):
        out["summary"] = message.strip().splitlines()[0][:60] if message.strip() else "message"
    return out


def _send_message(ctx: AgentContext, args: dict[str, Any]) -> str:
    args = normalise_send(args)
    kind = args.get("type")
    me, messenger = ctx.name, ctx.messenger
    if kind == "message":
        response = messenger.send_message(
            me,
            require(args, "recipient"),
            require(args, "content"),
            require(args, "summary"),
            color=ctx.color,
        )
        target = response["routing"]["target"][1:]
        if target != LEAD_NAME:
            ctx.last_dm = (target, args["summary"])
        return as_json(response)
    if kind == "broadcast":
        return as_json(
            messenger.broadcast(me, require(args, "content"), require(args, "summary"), color=ctx.color)
        )
    if kind == "shutdown_request":
        return as_json(
            messenger.send_shutdown_request(
                me, require(args, "recipient"), args.get("content") or "Shutdown requested"
            )
        )
    if kind == "shutdown_response":
        request_id = require(args, "request_id")
        if args.get("approve") is True:
            body: ShutdownApproved | ShutdownRejected = ShutdownApproved(
                request_id=request_id,
                from_=me,
                timestamp=now_iso(),
                pane_id=ctx.pane_id,
                backend_type=BACKEND_TYPE,
            )
            ctx.exit_requested = True
        else:
            reason = args.get("content") or "No reason given"
            body = ShutdownRejected(request_id=request_id, from_=me, reason=reason, timestamp=now_iso())
        messenger.send_body(me, LEAD_NAME, body)
        approved = isinstance(body, ShutdownApproved)
        return as_json(
            {
                "success": True,
                "message": "Shutdown approved. Exiting."
                if approved
                else "Shutdown rejected; continuing work.",
                "request_id": request_id,
            }
        )
    if kind in ("plan_approval_response", "permission_response"):
        if ctx.spec.role != "lead":
            raise ToolFailure("only the team lead answers plan approval and permission requests")
        return as_json(
            answer_plan(ctx, args) if kind == "plan_approval_response" else answer_permission(ctx, args)
        )
    raise ToolFailure(f"'type' must be one of {', '.join(MESSAGE_TYPES)}")


SEND_MESSAGE = Tool(
    name="SendMessage",
    description=(
        "Send a message to a teammate or the lead (type=message, needs recipient, content, summary), to everyone "
        "(broadcast), ask a teammate to shut down (shutdown_request), or answer a shutdown request "
        "(shutdown_response with request_id and approve). Claude Code 2.1.330's {to, message} form is accepted too."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": list(MESSAGE_TYPES)},
            "recipient": {"type": "string", "description": "Member name, e.g. 'team-lead' or '@worker-1'"},
            "content": {"type": "string"},
            "summary": {"type": "string", "description": "5-10 word preview"},
            "request_id": {"type": "string"},
            "approve": {"type": "boolean"},
            "to": {"type": "string"},
            "message": {},
        },
    },
    run=_send_message,
    kind="coordination",
)


def _task_view(task: Task) -> dict[str, Any]:
    view: dict[str, Any] = msgspec.to_builtins(task)
    return view


def _task_create(ctx: AgentContext, args: dict[str, Any]) -> str:
    metadata = args.get("metadata")
    outcome = hooks.run(
        ctx,
        "TaskCreated",
        {"task_subject": require(args, "subject"), "task_description": args.get("description") or ""},
    )
    if outcome.blocked:
        raise ToolFailure(f"a TaskCreated hook refused the task: {outcome.feedback}")
    blocked_by = args.get("addBlockedBy") or []
    if not isinstance(blocked_by, list):
        raise ToolFailure("'addBlockedBy' is a list of task ids")
    task = ctx.tasks.create(
        require(args, "subject"),
        args.get("description") or "",
        active_form=args.get("activeForm"),
        metadata=metadata if isinstance(metadata, dict) else None,
        blocked_by=[str(b) for b in blocked_by],
    )
    return as_json({"task": {"id": task.id, "subject": task.subject}})


def _task_get(ctx: AgentContext, args: dict[str, Any]) -> str:
    return as_json({"task": _task_view(ctx.tasks.get(str(require(args, "taskId"))))})


def _task_list(ctx: AgentContext, args: dict[str, Any]) -> str:
    tasks = ctx.tasks.list(include_internal=False)
    return as_json(
        {
            "tasks": [
                {
                    "id": t.id,
                    "subject": t.subject,
                    "status": "failed" if t.failed else t.status,
                    "owner": t.owner_name or "",
                    "blockedBy": t.blocked_by,
                }
                for t in tasks
            ]
        }
    )


def _task_update(ctx: AgentContext, args: dict[str, Any]) -> str:
    task_id = str(require(args, "taskId"))
    status = args.get("status")
    owner = args.get("owner")
    if status == "completed":
        current = ctx.tasks.get(task_id)
        outcome = hooks.run(
            ctx,
            "TaskCompleted",
            {"task_id": task_id, "task_subject": current.subject, "task_description": current.description},
        )
        if outcome.blocked:
            raise ToolFailure(f"a TaskCompleted hook kept task #{task_id} open: {outcome.feedback}")
    change = ctx.tasks.change(
        task_id,
        status=status,
        subject=args.get("subject"),
        description=args.get("description"),
        active_form=args.get("activeForm"),
        owner=owner,
        add_blocks=args.get("addBlocks"),
        add_blocked_by=args.get("addBlockedBy"),
        metadata=args.get("metadata"),
        by=ctx.name,
    )
    task = change.task
    if owner and task is not None and task.owner_name and task.owner_name != ctx.name:
        waker = ctx.channel.waker()
        if waker is not None:
            waker.wake(task.owner_name)
    if status in ("completed", "deleted"):
        ctx.completed = (task_id, status)
        if ctx.current_task == task_id:
            ctx.current_task = ""
    fields = sorted(k for k in args if k != "taskId")
    return as_json({"success": True, "taskId": task_id, "updatedFields": fields})


TASK_CREATE = Tool(
    name="TaskCreate",
    description=(
        "Create a task in the team's shared task list. addBlockedBy (an agentteams addition) sets its blockers "
        "as it is created, so no teammate can claim it before them."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "subject": {"type": "string"},
            "description": {"type": "string"},
            "activeForm": {"type": "string"},
            "metadata": {"type": "object"},
            "addBlockedBy": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["subject", "description"],
    },
    run=_task_create,
    kind="coordination",
)
TASK_GET = Tool(
    name="TaskGet",
    description="Read one task by id.",
    input_schema={"type": "object", "properties": {"taskId": {"type": "string"}}, "required": ["taskId"]},
    run=_task_get,
    kind="coordination",
)
TASK_LIST = Tool(
    name="TaskList",
    description="List every task with its status, owner and blockers.",
    input_schema={"type": "object", "properties": {}},
    run=_task_list,
    kind="coordination",
)
TASK_UPDATE = Tool(
    name="TaskUpdate",
    description="Update a task: status (pending, in_progress, completed, deleted), owner, dependencies, fields.",
    input_schema={
        "type": "object",
        "properties": {
            "taskId": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "deleted"]},
            "subject": {"type": "string"},
            "description": {"type": "string"},
            "activeForm": {"type": "string"},
            "owner": {"type": "string"},
            "addBlocks": {"type": "array", "items": {"type": "string"}},
            "addBlockedBy": {"type": "array", "items": {"type": "string"}},
            "metadata": {"type": "object"},
        },
        "required": ["taskId"],
    },
    run=_task_update,
    kind="coordination",
)
