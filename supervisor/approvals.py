"""Answering teammates' plan approval and permission requests: the lead's policies and the
`agentteams approve|deny` path for a person."""

from __future__ import annotations

import json
from typing import Any

from ipc import messaging
from ipc.errors import Conflict, InvalidInput, NotFound
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.schemas import (
    LEAD_NAME,
    InboxMessage,
    PermissionGrant,
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    parse_body,
)

PLAN_POLICIES = ("auto", "lead", "human")
Request = PlanApprovalRequest | PermissionRequest


def pending(paths: TeamPaths) -> list[tuple[InboxMessage, Request]]:
    """Unanswered plan approval and permission requests in the lead's inbox, oldest first."""
    found = []
    for message in Mailbox(paths.root, paths.team, LEAD_NAME).unread():
        body = parse_body(message.text)
        if isinstance(body, PlanApprovalRequest | PermissionRequest):
            found.append((message, body))
    return found


def answer(
    paths: TeamPaths,
    messenger: messaging.Messenger,
    request_id: str,
    *,
    approve: bool,
    feedback: str = "",
    updated_input: dict[str, Any] | None = None,
    permission_mode: str = "acceptEdits",
) -> dict[str, Any]:
    """Answer one pending request as the lead; returns what was sent. The request is marked
    read only after the answer is in the teammate's inbox."""
    lead = Mailbox(paths.root, paths.team, LEAD_NAME)
    open_requests = pending(paths)
    match = next(((m, b) for m, b in open_requests if b.request_id == request_id), None)
    if match is None:
        answered = any(
            isinstance(b := parse_body(m.text), PlanApprovalRequest | PermissionRequest)
            and b.request_id == request_id
            for m in lead.read()
        )
        if answered:
            raise Conflict(f"request {request_id} has already been answered")
        known = ", ".join(b.request_id for _, b in open_requests) or "none"
        raise NotFound(f"no pending request {request_id!r}; pending: {known}")
    message, body = match
    if isinstance(body, PlanApprovalRequest):
        from supervisor.lead_inbox import plan_response

        response: PlanApprovalResponse | PermissionResponse = plan_response(
            body, approve, permission_mode=permission_mode, feedback=feedback
        )
        agent = body.from_
    else:
        if approve:
            response = PermissionResponse(
                request_id=body.request_id,
                subtype="success",
                response=PermissionGrant(
                    updated_input=updated_input if updated_input is not None else body.input,
                    permission_updates=[],
                ),
            )
        else:
            response = PermissionResponse(
                request_id=body.request_id, subtype="error", error=feedback or "Denied by the lead"
            )
        agent = body.agent_id
    messenger.send_body(LEAD_NAME, agent, response)
    lead.mark_read_matching(message)
    return {"request_id": request_id, "agent": agent, "approved": approve, "type": type(response).__name__}


def parse_input(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"--input is not JSON ({exc}); give the tool input as a JSON object") from None
    if not isinstance(value, dict):
        raise InvalidInput("--input must be a JSON object, the tool's input")
    return value
