"""What a message in the lead's inbox means to the supervisor: a function from message to
actions, so the policy is tested without processes.

While no lead agent runs, the supervisor is the lead's runtime for protocol messages: it
takes idle notifications and shutdown answers, and answers plan approval requests
by the team's policy; plain text stays unread for a person. While a lead agent runs, every
message is the lead's: the supervisor only observes what it must know (who is idle, whose
exit is expected) and takes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ipc.answers import plan_answer
from ipc.plans import review_plan
from ipc.schemas import (
    IdleNotification,
    InboxMessage,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ShutdownApproved,
    ShutdownRejected,
    parse_body,
)


@dataclass(frozen=True)
class Idle:
    name: str


@dataclass(frozen=True)
class ExitApproved:
    name: str
    request_id: str


@dataclass(frozen=True)
class ExitRejected:
    name: str
    request_id: str
    reason: str


@dataclass(frozen=True)
class AnswerPlan:
    name: str
    response: PlanApprovalResponse


@dataclass(frozen=True)
class Refuse:
    """An entry that failed verification or claims what its sender may not say (ipc.trust)."""

    message: InboxMessage
    reason: str


Action = Idle | ExitApproved | ExitRejected | AnswerPlan | Refuse


@dataclass(frozen=True)
class Verdict:
    take: bool  # mark it read: the supervisor has handled it for the lead
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True)
class Policy:
    plan_approval: Literal["auto", "lead", "human"] = "auto"
    lead_permission_mode: str = "acceptEdits"
    lead_attached: bool = False


def judge(message: InboxMessage, policy: Policy, refused: str | None = None) -> Verdict:
    """``refused``: why the entry must not be acted on (:func:`ipc.trust.refusal`), if so."""
    body = parse_body(message.text)
    sender = message.from_
    take = not policy.lead_attached
    if refused is not None:
        # Recorded by whoever reads for the lead: here, or the lead agent when one runs.
        return Verdict(take, (Refuse(message, refused),) if take else ())
    if isinstance(body, IdleNotification):
        return Verdict(take, (Idle(sender),))
    if isinstance(body, ShutdownApproved):
        return Verdict(take, (ExitApproved(sender, body.request_id),))
    if isinstance(body, ShutdownRejected):
        return Verdict(take, (ExitRejected(sender, body.request_id, body.reason),))
    if isinstance(body, PlanApprovalRequest) and take and policy.plan_approval != "human":
        # auto approves at once with the lead's permission mode, as Claude Code does; the
        # offline lead policy wants a plan with concrete steps.
        approved, feedback = review_plan(body.plan_content) if policy.plan_approval == "lead" else (True, "")
        response = plan_answer(
            body.request_id, approved, permission_mode=policy.lead_permission_mode, feedback=feedback
        )
        return Verdict(True, (AnswerPlan(sender, response),))
    return Verdict(False)
