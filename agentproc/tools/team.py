"""The coordination tools: SendMessage and the task tools, with Claude Code's input names.

SendMessage takes both spellings Claude Code has used: 2.1.38's ``{type, recipient,
content, summary, request_id, approve}`` and 2.1.330's ``{to, message, summary}`` where
``message`` is a string or ``{type: shutdown_request|shutdown_response|plan_approval_response,
…}``; its input Struct reads the second as the first.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentproc import hooks, subagents
from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, as_json, needed
from agentproc.tools.lead import answer_permission, answer_plan, set_permissions
from ipc.clock import now_iso
from ipc.replies import SubagentResult
from ipc.schemas import BACKEND_TYPE, LEAD_NAME, ShutdownApproved, ShutdownRejected, Task, struct_fields
from ipc.subagents import find as find_subagent
from ipc.tool_inputs import (
    MESSAGE_TYPES,
    LeadSendMessageInput,
    SendMessageInput,
    TaskCreateInput,
    TaskGetInput,
    TaskListInput,
    TaskUpdateInput,
)


def _own_subagent(ctx: AgentContext, recipient: str) -> SubagentResult | None:
    """One of this agent's subagents, named by its id or the name it was given; a member
    of the team of that name is the one a message goes to."""
    name = recipient.lstrip("@")
    if name == LEAD_NAME or ctx.messenger.store.config_member(name) is not None:
        return None
    return find_subagent(ctx.paths, ctx.name, name)


def _send_message(ctx: AgentContext, args: SendMessageInput) -> str:
    kind = args.kind
    me, messenger = ctx.name, ctx.messenger
    if kind == "message":
        subagent = _own_subagent(ctx, needed(args.recipient, "recipient"))
        if subagent is not None:
            return as_json(subagents.deliver(ctx, subagent, needed(args.content, "content")))
        summary = needed(args.summary, "summary")
        response = messenger.send_message(
            me,
            needed(args.recipient, "recipient"),
            needed(args.content, "content"),
            summary,
            color=ctx.color,
        )
        target = response["routing"]["target"][1:]
        if target != LEAD_NAME:
            ctx.last_dm = (target, summary)
        return as_json(response)
    if kind == "broadcast":
        return as_json(
            messenger.broadcast(
                me, needed(args.content, "content"), needed(args.summary, "summary"), color=ctx.color
            )
        )
    if kind == "shutdown_request":
        return as_json(
            messenger.send_shutdown_request(
                me, needed(args.recipient, "recipient"), args.content or "Shutdown requested"
            )
        )
    if kind == "shutdown_response":
        request_id = needed(args.request_id, "request_id")
        if args.approve:
            body: ShutdownApproved | ShutdownRejected = ShutdownApproved(
                request_id=request_id,
                from_=me,
                timestamp=now_iso(),
                pane_id=ctx.pane_id,
                backend_type=BACKEND_TYPE,
            )
            ctx.exit_requested = True
        else:
            reason = args.content or "No reason given"
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
    if isinstance(args, LeadSendMessageInput) and kind in ("mode_set_request", "team_permission_update"):
        return as_json(set_permissions(ctx, args))
    if kind in ("plan_approval_response", "permission_response"):
        if ctx.spec.role != "lead":
            raise ToolFailure("only the team lead answers plan approval and permission requests")
        return as_json(
            answer_plan(ctx, args) if kind == "plan_approval_response" else answer_permission(ctx, args)
        )
    raise ToolFailure(f"'type' must be one of {', '.join(MESSAGE_TYPES)}")


SEND_MESSAGE = Tool("SendMessage", SendMessageInput, _send_message, kind="coordination")
# The lead's SendMessage (its extra tools replace the common one): its own message types too.
LEAD_SEND_MESSAGE = Tool("SendMessage", LeadSendMessageInput, _send_message, kind="coordination")


def _task_view(task: Task) -> dict[str, Any]:
    view: dict[str, Any] = msgspec.to_builtins(task)
    return view


def _task_create(ctx: AgentContext, args: TaskCreateInput) -> str:
    outcome = hooks.run(
        ctx, "TaskCreated", {"task_subject": args.subject, "task_description": args.description}
    )
    if outcome.blocked:
        raise ToolFailure(f"{outcome.feedback} (the task was not created)")
    task = ctx.tasks.create(
        args.subject,
        args.description,
        active_form=args.active_form,
        metadata=args.metadata,
        blocked_by=args.add_blocked_by or [],
    )
    return as_json({"task": {"id": task.id, "subject": task.subject}})


def _task_get(ctx: AgentContext, args: TaskGetInput) -> str:
    return as_json({"task": _task_view(ctx.tasks.get(args.task_id))})


def _task_list(ctx: AgentContext, args: TaskListInput) -> str:
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


def _task_update(ctx: AgentContext, args: TaskUpdateInput) -> str:
    task_id = args.task_id
    if args.status == "completed":
        current = ctx.tasks.get(task_id)
        outcome = hooks.run(
            ctx,
            "TaskCompleted",
            {"task_id": task_id, "task_subject": current.subject, "task_description": current.description},
        )
        if outcome.blocked:
            raise ToolFailure(f"{outcome.feedback} (task #{task_id} was not completed: it stays open)")
    ctx.tasks.change(
        task_id,
        status=args.status,
        subject=args.subject,
        description=args.description,
        active_form=args.active_form,
        owner=args.owner,
        add_blocks=args.add_blocks,
        add_blocked_by=args.add_blocked_by,
        metadata=args.metadata,
        by=ctx.name,
    )
    # A new owner is told in its inbox and woken by the task list itself.
    if args.status in ("completed", "deleted"):
        ctx.completed = (task_id, args.status)
        if ctx.current_task == task_id:
            ctx.current_task = ""
    return as_json({"success": True, "taskId": task_id, "updatedFields": _given(args, "taskId")})


def _given(args: msgspec.Struct, *leave_out: str) -> list[str]:
    """The input's fields the model gave (by their names on the wire), sorted."""
    return sorted(
        f.encode_name
        for f in struct_fields(type(args))
        if getattr(args, f.name) is not None and f.encode_name not in leave_out
    )


TASK_CREATE = Tool("TaskCreate", TaskCreateInput, _task_create, kind="coordination")
TASK_GET = Tool("TaskGet", TaskGetInput, _task_get, kind="coordination")
TASK_LIST = Tool("TaskList", TaskListInput, _task_list, kind="coordination")
TASK_UPDATE = Tool("TaskUpdate", TaskUpdateInput, _task_update, kind="coordination")
