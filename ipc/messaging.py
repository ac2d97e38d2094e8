"""Sending, as SendMessage does it: membership checked, inbox appended, Claude Code's responses.

Ringing the recipient is the caller's job (a teammate rings up its PAIR, the CLI through the
supervisor's control socket): the file is the truth, the wake only a doorbell.
"""

from __future__ import annotations

import os
from typing import Any

from ipc.clock import now_iso
from ipc.config import TeamConfigStore
from ipc.errors import InvalidInput
from ipc.mailbox import Mailbox
from ipc.paths import normalise_agent_name, shutdown_request_id
from ipc.schemas import ProtocolBody, ShutdownRequest, body_text

Root = str | os.PathLike[str] | None


def clean_recipient(recipient: str) -> str:
    """``@name`` and ``name`` mean the same member."""
    name = recipient[1:] if recipient.startswith("@") else recipient
    return normalise_agent_name(name)


def send_message(
    root: Root, team: str, sender: str, recipient: str, content: str, summary: str, color: str | None = None
) -> dict[str, Any]:
    """A direct message; returns SendMessage's response (seed 004 §C.2.1)."""
    if not summary:
        raise InvalidInput("a message needs a summary (a few words shown in previews)")
    name = clean_recipient(recipient)
    target = TeamConfigStore(root, team).require_member(name)
    if name == sender:
        raise InvalidInput(f"{sender} cannot send a message to itself; pick another member")
    Mailbox(root, team, name).append(sender=sender, text=content, summary=summary, color=color, member_checked=True)
    routing: dict[str, Any] = {"sender": sender, "target": f"@{name}"}
    if isinstance(target.color, str):
        routing["targetColor"] = target.color
    routing.update(summary=summary, content=content)
    return {"success": True, "message": f"Message sent to {name}'s inbox", "routing": routing}


def broadcast(
    root: Root, team: str, sender: str, content: str, summary: str, color: str | None = None
) -> dict[str, Any]:
    """One message per member other than the sender (seed 004 §C.2.2)."""
    if not summary:
        raise InvalidInput("a broadcast needs a summary (a few words shown in previews)")
    config = TeamConfigStore(root, team).read()
    recipients = [m.name for m in config.members if m.name != sender]
    for name in recipients:
        Mailbox(root, team, name).append(sender=sender, text=content, summary=summary, color=color, member_checked=True)
    return {
        "success": True,
        "message": f"Message broadcast to {len(recipients)} teammate(s): {', '.join(recipients)}",
        "recipients": recipients,
        "routing": {"sender": sender, "target": "@team", "summary": summary, "content": content},
    }


def send_shutdown_request(root: Root, team: str, sender: str, recipient: str, reason: str) -> dict[str, Any]:
    """A shutdown_request body in the recipient's inbox (seed 004 §C.2.3)."""
    name = clean_recipient(recipient)
    TeamConfigStore(root, team).require_member(name)
    request_id = shutdown_request_id(name)
    body = ShutdownRequest(request_id=request_id, from_=sender, reason=reason, timestamp=now_iso())
    Mailbox(root, team, name).append(sender=sender, text=body_text(body), member_checked=True)
    return {
        "success": True,
        "message": f"Shutdown request sent to {name}. Request ID: {request_id}",
        "request_id": request_id,
        "target": name,
    }


def send_body(root: Root, team: str, sender: str, recipient: str, body: ProtocolBody, color: str | None = None) -> None:
    """Deliver a protocol body (JSON in ``text``) to a member's inbox."""
    Mailbox(root, team, clean_recipient(recipient)).append(sender=sender, text=body_text(body), color=color)
