"""Answers to teammates' plan approval and permission requests, built once for every
answerer: the supervisor's plan policy, a person (`agentteams approve|deny`, the API, the
MCP and web doors) and a lead agent's SendMessage.

A request waits in the lead's inbox; an answer goes to the requesting teammate's inbox, and
the request is marked read only once the answer is there.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec

from ipc import trust
from ipc.clock import now_iso
from ipc.errors import AgentTeamsError, Conflict, InvalidInput, NotFound
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
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

Request = PlanApprovalRequest | PermissionRequest
DEFAULT_PLAN_MODE = "acceptEdits"  # the mode an approved plan hands a teammate, unless told


class Answered(msgspec.Struct, kw_only=True):
    """What answering a request did."""

    request_id: str
    agent: str  # the teammate that asked, now answered
    approved: bool
    type: str  # PlanApprovalResponse or PermissionResponse


def plan_answer(
    request_id: str, approved: bool, *, permission_mode: str = "", feedback: str = ""
) -> PlanApprovalResponse:
    """Approval carries the permission mode the teammate continues in; rejection, feedback."""
    response = PlanApprovalResponse(request_id=request_id, approved=approved, timestamp=now_iso())
    if approved:
        response.permission_mode = permission_mode or DEFAULT_PLAN_MODE
    else:
        response.feedback = feedback or "Rejected by the lead."
    return response


def permission_answer(
    request: PermissionRequest,
    approved: bool,
    *,
    updated_input: dict[str, Any] | None = None,
    permission_updates: list[dict[str, Any]] | None = None,
    feedback: str = "",
) -> PermissionResponse:
    """Approval lets the tool run with its input (or ``updated_input``); denial carries why."""
    if approved:
        return PermissionResponse(
            request_id=request.request_id,
            subtype="success",
            response=PermissionGrant(
                updated_input=request.input if updated_input is None else updated_input,
                permission_updates=permission_updates or [],
            ),
        )
    return PermissionResponse(
        request_id=request.request_id, subtype="error", error=feedback or "Denied by the lead"
    )


def requester(request: Request) -> str:
    """The teammate that asked (a permission request names it by agent id)."""
    return request.from_ if isinstance(request, PlanApprovalRequest) else request.agent_id.split("@")[0]


def pending(
    lead: Mailbox, config: trust.ConfigSource, stopped: Collection[str] = ()
) -> list[tuple[InboxMessage, Request]]:
    """Unanswered plan approval and permission requests in the lead's inbox, oldest first:
    those its verification lets stand (``config``: the team's keys) and someone waits for
    (:func:`moot`; ``stopped``: members known not to run now). A forged one (a member
    that signs, unsigned or wrongly signed; or a request in another's name) is never shown
    to a person to approve, nor matched by its id: the supervisor refuses it at its look."""
    verifier = trust.Verifier(config, LEAD_NAME)
    found = []
    for message in lead.unread():
        body = parse_body(message.text)
        if not isinstance(body, PlanApprovalRequest | PermissionRequest) or not verifier.stands(
            message, body
        ):
            continue
        if moot(message, config, stopped) is None:
            found.append((message, body))
    return found


def moot(message: InboxMessage, config: trust.ConfigSource, stopped: Collection[str] = ()) -> str | None:
    """Why nobody waits for the answer to this request, or None. The incarnation of a
    member that asked waits, and each incarnation of a member that signs has a key pair of
    its own: a request its member's current key did not sign was asked by one gone since
    (a restart, a down and up), and one from a member in ``stopped`` has nobody to read it.
    A member that cannot sign (a claude teammate) is not judged: its requests stand."""
    try:
        member = config.read().member(message.from_)
    except AgentTeamsError:
        return None
    current = member.verify_key if member is not None else None
    if not isinstance(current, str) or not current:
        return None
    if not trust.signed_by(message, [current]):
        return f"{message.from_} has restarted since it asked"
    if message.from_ in stopped:
        return f"{message.from_} is not running"
    return None


def find(lead: Mailbox, request_id: str, config: trust.ConfigSource) -> Request | None:
    """The request with this id, answered or not, that its verification lets stand (a
    forged copy of a real request's id is passed over)."""
    verifier = trust.Verifier(config, LEAD_NAME)
    for message in lead.history():
        body = parse_body(message.text)
        if not isinstance(body, PlanApprovalRequest | PermissionRequest) or body.request_id != request_id:
            continue
        if verifier.stands(message, body):
            return body
    return None


def _moot(lead: Mailbox, request_id: str, config: trust.ConfigSource, stopped: Collection[str]) -> str | None:
    verifier = trust.Verifier(config, LEAD_NAME)
    for message in lead.unread():
        body = parse_body(message.text)
        is_it = isinstance(body, PlanApprovalRequest | PermissionRequest) and body.request_id == request_id
        if is_it and verifier.stands(message, body):
            return moot(message, config, stopped)
    return None


def answered(lead: Mailbox, request_id: str, config: trust.ConfigSource) -> bool:
    """Whether a request with this id that its verification lets stand was taken from the
    lead's inbox (answered); one still unread is not, nor a forged one the supervisor's look
    refused (it was never a request)."""
    verifier = trust.Verifier(config, LEAD_NAME)
    for message in lead.history():
        if not message.read:
            continue
        body = parse_body(message.text)
        if (
            isinstance(body, PlanApprovalRequest | PermissionRequest)
            and body.request_id == request_id
            and verifier.stands(message, body)
        ):
            return True
    return False


def answer(
    messenger: Messenger,
    request_id: str,
    *,
    approve: bool,
    feedback: str = "",
    updated_input: dict[str, Any] | None = None,
    permission_mode: str = "",
    permission_updates: list[dict[str, Any]] | None = None,
    always: bool = False,
    stopped: Collection[str] = (),
) -> Answered:
    """Answer one pending request as the lead: NotFound naming the pending ones, Conflict if
    it was answered already or nobody waits for it (:func:`moot`); nothing is sent then. An approved permission carries
    ``permission_updates`` (with ``always``, the request's own suggestions), which the
    teammate keeps for the rest of its life."""
    lead = messenger.mailbox(LEAD_NAME)
    open_requests = pending(lead, messenger.store, stopped)
    match = next(((m, b) for m, b in open_requests if b.request_id == request_id), None)
    if match is None:
        if answered(lead, request_id, messenger.store):
            raise Conflict(f"request {request_id} has already been answered")
        if (gone := _moot(lead, request_id, messenger.store, stopped)) is not None:
            raise Conflict(
                f"nobody waits for the answer to request {request_id}: {gone}; nothing was sent "
                "(a teammate that still needs it asks again once it runs)"
            )
        known = ", ".join(b.request_id for _, b in open_requests) or "none"
        raise NotFound(f"no pending request {request_id!r}; pending: {known}")
    message, request = match
    plan = isinstance(request, PlanApprovalRequest)
    given = (
        ("an input to use instead", updated_input),
        ("permission updates", permission_updates),
        ("'always'", always),
    )
    wrong = [what for what, value in given if value] if plan else []
    if wrong:  # said, not dropped: nothing is sent
        raise InvalidInput(
            f"request {request_id} is a plan approval: {' and '.join(wrong)} "
            f"{'is' if len(wrong) == 1 else 'are'} for permission requests; leave "
            f"{'it' if len(wrong) == 1 else 'them'} out"
        )
    if not plan and permission_mode:
        raise InvalidInput(
            f"request {request_id} is a permission request: a permission mode is for plan approvals; leave it out"
        )
    response: PlanApprovalResponse | PermissionResponse
    if isinstance(request, PlanApprovalRequest):
        response = plan_answer(request_id, approve, permission_mode=permission_mode, feedback=feedback)
    else:
        if always and permission_updates is None:
            permission_updates = request.permission_suggestions  # "yes, and don't ask again"
        response = permission_answer(
            request,
            approve,
            updated_input=updated_input,
            permission_updates=permission_updates,
            feedback=feedback,
        )
    agent = requester(request)
    messenger.send_body(LEAD_NAME, agent, response)
    lead.mark_read_matching(message)
    return Answered(request_id=request_id, agent=agent, approved=approve, type=type(response).__name__)
