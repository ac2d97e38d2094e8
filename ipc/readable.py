"""Inbox messages as a door's agent reads them: plain text as it is, protocol messages (JSON
bodies in ``text``) spelled out as events with what answering them takes, in the names of
the table of operations (``answer_request``, ``task_update``). Pure functions."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from msgspec import UNSET

from ipc import trust
from ipc.operations import Event
from ipc.schemas import (
    IdleNotification,
    InboxMessage,
    ModeSetRequest,
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ProtocolBody,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
    TaskAssignment,
    TeamPermissionUpdate,
    parse_body,
)


def _answer(request_id: str, what: str) -> str:
    call = json.dumps({"request_id": request_id, "approve": True})
    return f"Answer with answer_request {call}, or approve false with {what} in 'feedback'."


def _idle(body: IdleNotification) -> str:
    parts = [f"[idle] {body.from_} is idle ({body.idle_reason})."]
    if body.completed_task_id is not UNSET:
        parts.append(f"It finished task #{body.completed_task_id} ({body.completed_status}).")
    if body.failure_reason is not UNSET:
        parts.append(f"Its last turn failed: {body.failure_reason}")
    if body.summary is not UNSET:
        parts.append(f"Its last message: {body.summary}")
    return " ".join(parts)


def _text(body: ProtocolBody) -> str:
    if isinstance(body, IdleNotification):
        return _idle(body)
    if isinstance(body, TaskAssignment):
        update = json.dumps({"id": body.task_id, "status": "in_progress"})
        return (
            f"[task assigned] {body.assigned_by} assigned you task #{body.task_id}: {body.subject}\n"
            f"{body.description}\nIt is yours: start it with task_update {update}, and set status "
            "'completed' when it is done."
        ).replace("\n\n", "\n")
    if isinstance(body, ShutdownRequest):
        return f"[shutdown request] {body.from_} asks you to shut down: {body.reason}\n" + _answer(
            body.request_id, "the reason you keep working"
        )
    if isinstance(body, ShutdownApproved):
        return f"[shutdown approved] {body.from_} approved the shutdown request and is leaving the team."
    if isinstance(body, ShutdownRejected):
        return f"[shutdown rejected] {body.from_} will keep working: {body.reason}"
    if isinstance(body, PlanApprovalRequest):
        return (
            f"[plan approval request] {body.from_} asks you to approve its plan:\n"
            f"<plan>\n{body.plan_content}\n</plan>\n" + _answer(body.request_id, "what to change")
        )
    if isinstance(body, PlanApprovalResponse):
        if body.approved:
            mode = f" (permission mode {body.permission_mode})" if body.permission_mode is not UNSET else ""
            return f"[plan approved] your plan was approved{mode}."
        feedback = body.feedback if body.feedback is not UNSET else ""
        return f"[plan rejected] revise your plan: {feedback}"
    if isinstance(body, PermissionRequest):
        return (
            f"[permission request] {body.agent_id} asks to run {body.tool_name}: {body.description}\n"
            f"Input: {json.dumps(body.input, ensure_ascii=False)[:2000]}\n"
            + _answer(body.request_id, "the reason")
        )
    if isinstance(body, PermissionResponse):
        if body.subtype == "success":
            return "[permission granted] you may run the tool."
        error = body.error if body.error is not UNSET else ""
        return f"[permission denied] {error}"
    if isinstance(body, ModeSetRequest):
        return f"[permission mode] {body.from_} set your permission mode to {body.mode}."
    if isinstance(body, TeamPermissionUpdate):
        return f"[permissions] the lead changed your permissions: {json.dumps(body.permission_update)}"
    return ""  # pragma: no cover - every body type is named above


def _request_id(body: ProtocolBody) -> str:
    value = getattr(body, "request_id", "")
    return value if isinstance(value, str) else ""


def looked_at(message: InboxMessage, verifier: trust.Verifier) -> Event:
    """An inbox message as a look at the team shows it: with its verdict ("forged" for
    what its reader would refuse), nothing recorded, nothing taken."""
    event = event_of(message)
    event.trust = verifier.verdict(message).status
    return event


def event_of(message: InboxMessage, verifier: trust.Verifier | None = None) -> Event:
    """One inbox message as a readable event; checked by ``verifier`` if given: a refused
    entry becomes a notice of the refusal, never its text."""
    body = parse_body(message.text)
    if verifier is not None:
        check = verifier.check(message)
        reason = trust.refusal(message, body, check, verifier.reader)
        if reason is not None:
            refusal = trust.record_refusal(verifier.paths, verifier.reader, message, reason)
            return Event(
                kind="refused",
                from_=message.from_,
                text=trust.refusal_notice(refusal),
                timestamp=message.timestamp,
                trust="refused",
            )
        verifier.taken(message)
    event = Event(
        kind="message",
        from_=message.from_,
        text=message.text,
        timestamp=message.timestamp,
        summary=message.summary_text,
        color=message.color_name,
        trust=check.status if verifier is not None else "",
    )
    if body is None:
        return event
    raw: dict[str, Any] = msgspec.to_builtins(body)
    event.kind = str(raw.get("type", "message"))
    event.text = _text(body)
    event.request_id = _request_id(body)
    if isinstance(body, TaskAssignment):
        event.task_id = body.task_id
    event.body = raw
    return event


def headline(message: InboxMessage) -> str:
    """One line for people (``inbox``, ``watch``): a protocol message spelled out, a plain
    message as it is."""
    if parse_body(message.text) is None:
        return message.text
    return event_of(message).text.splitlines()[0]
