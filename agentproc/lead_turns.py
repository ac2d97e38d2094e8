"""What the lead's model is shown for what arrived: each inbox message wrapped as Claude Code
wraps a teammate's message, protocol messages rendered as events it can act on (with how to
answer them), and teammates that terminated. Pure functions, tested without processes."""

from __future__ import annotations

import json

from msgspec import UNSET

from agentproc.models import wrap_message
from ipc import trust
from ipc.schemas import (
    IdleNotification,
    InboxMessage,
    PermissionRequest,
    PlanApprovalRequest,
    ShutdownApproved,
    ShutdownRejected,
    TeammateTerminated,
    parse_body,
)


def _idle(body: IdleNotification) -> str:
    parts = [f"[idle] {body.from_} is idle ({body.idle_reason})."]
    if body.completed_task_id is not UNSET:
        parts.append(f"It finished task #{body.completed_task_id} ({body.completed_status}).")
    if body.failure_reason is not UNSET:
        parts.append(f"Its last turn failed: {body.failure_reason}")
    if body.summary is not UNSET:
        parts.append(f"Its last message: {body.summary}")
    if body.result is not UNSET and body.result:
        parts.append(f"Its last words: {body.result}")
    return " ".join(parts)


def _plan(body: PlanApprovalRequest) -> str:
    answer = {
        "type": "plan_approval_response",
        "recipient": body.from_,
        "request_id": body.request_id,
        "approve": True,
    }
    return (
        f"[plan approval request] {body.from_} asks you to approve its plan (request_id {body.request_id}):\n"
        f"<plan>\n{body.plan_content}\n</plan>\n"
        f"Approve with SendMessage {json.dumps(answer)}, or reject with approve false and your feedback in "
        "'content'."
    )


def permission_prompt(body: PermissionRequest) -> str:
    answer = {
        "type": "permission_response",
        "recipient": body.agent_id,
        "request_id": body.request_id,
        "approve": True,
    }
    return (
        f"[permission request] {body.agent_id} asks to run {body.tool_name}: {body.description}\n"
        f"Input: {json.dumps(body.input, ensure_ascii=False)[:2000]}\n"
        f"Allow with SendMessage {json.dumps(answer)}, or deny with approve false and the reason in 'content'."
    )


def render_message(message: InboxMessage, verified: bool = True) -> str:
    """One inbox message as the lead's model reads it (``verified``: False for a sender that
    cannot sign, said in the wrapper)."""
    return wrap_message(
        message.from_, _message_text(message), message.color_name, message.summary_text, verified=verified
    )


def _message_text(message: InboxMessage) -> str:
    body = parse_body(message.text)
    if isinstance(body, IdleNotification):
        return _idle(body)
    if isinstance(body, PlanApprovalRequest):
        return _plan(body)
    if isinstance(body, PermissionRequest):
        return permission_prompt(body)
    if isinstance(body, ShutdownApproved):
        return f"[shutdown approved] {body.from_} approved your shutdown request and is leaving the team."
    if isinstance(body, ShutdownRejected):
        return f"[shutdown rejected] {body.from_} will keep working: {body.reason}"
    return message.text


def render_refusal(refusal: trust.Refusal) -> str:
    """An entry refused as forged: the lead hears of it, never reads it as genuine."""
    return f"<system-event>\n{trust.refusal_notice(refusal)}\n</system-event>"


def render_event(event: TeammateTerminated) -> str:
    return f"<system-event>\n{_event_text(event)}\n</system-event>"


def _event_text(event: TeammateTerminated) -> str:
    if event.signal is not UNSET:
        how = f"signal {event.signal}"
    elif event.exit_code is not UNSET:
        how = f"exit {event.exit_code}"
    else:
        how = event.detail  # a process not ours (an MCP session's server): no exit status
    text = f"[teammate terminated] {event.name} has {event.status} ({how})"
    if event.detail and event.detail != how:
        text += f": {event.detail}"
    if event.released_tasks:
        text += f". Its tasks {', '.join('#' + t for t in event.released_tasks)} are open again"
    text += "; it is being restarted." if event.restarting else "; it is no longer in the team."
    return text


def render_batch_for_people(
    messages: list[InboxMessage], events: list[TeammateTerminated], refusals: tuple[trust.Refusal, ...] = ()
) -> str:
    """What arrived, as the person in ``chat`` reads it: a message after its sender's name (an
    event names its own), with none of the wrappers the model is shown."""
    lines = [_message_text(m) if parse_body(m.text) else f"{m.from_}: {m.text}" for m in messages]
    lines += [trust.refusal_notice(r) for r in refusals]
    lines += [_event_text(e) for e in events]
    return "\n".join(lines)


def render_batch(
    messages: list[InboxMessage],
    events: list[TeammateTerminated],
    unverified: frozenset[str] = frozenset(),
    refusals: tuple[trust.Refusal, ...] = (),
) -> str:
    """``unverified``: msg_ids of entries from senders that cannot sign."""
    return "\n\n".join(
        [
            *(render_message(m, verified=m.msg_id not in unverified) for m in messages),
            *(render_refusal(r) for r in refusals),
            *(render_event(e) for e in events),
        ]
    )
