"""Sending, as SendMessage does it: membership checked, inbox appended, recipient woken,
Claude Code's responses.

The inbox is written first, then the recipient woken through its doorbell (:mod:`ipc.wake`): the file
is the truth, the wake only a doorbell. A :class:`Messenger` keeps the team's config, the
recipients' mailboxes and its doorbell sockets between sends, so a sender that sends often
decodes the config only when it changes and connects to each recipient once.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from ipc import trace
from ipc.clock import now_iso
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, InvalidInput
from ipc.mailbox import Mailbox
from ipc.paths import normalise_agent_name, shutdown_request_id
from ipc.schemas import LEAD_NAME, InboxMessage, ProtocolBody, ShutdownRequest, TeamConfig, body_text
from ipc.wake import Waker

Root = str | os.PathLike[str] | None
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # already a valid name: nothing to normalise


def clean_recipient(recipient: str) -> str:
    """``@name`` and ``name`` mean the same member."""
    name = recipient[1:] if recipient.startswith("@") else recipient
    return name if _PLAIN.fullmatch(name) else normalise_agent_name(name)


class Messenger:
    """Sends into one team's inboxes; reusable and cheap to call again."""

    def __init__(self, root: Root, team: str, *, waker: Waker | None = None) -> None:
        self.store = TeamConfigStore(root, team)
        self.paths = self.store.paths
        self.root = self.paths.root
        self.team = self.store.team
        self.waker = waker
        self._boxes: dict[str, Mailbox] = {}

    def _deliver(
        self,
        sender: str,
        name: str,
        text: str,
        *,
        summary: str | None = None,
        color: str | None = None,
        v2: bool = False,
    ) -> InboxMessage:
        """Append to ``name``'s inbox, then wake it (and trace both, when tracing is on)."""
        sent = time.time_ns()
        message = self.mailbox(name).append(
            sender=sender, text=text, summary=summary, color=color, member_checked=True, v2=v2
        )
        written = time.time_ns()
        if self.waker is not None:
            self.waker.wake(name)
        if trace.enabled() and isinstance(message.msg_id, str):
            trace.record(
                self.paths, message.msg_id, name, sent=sent, written=written, wake_sent=time.time_ns()
            )
        return message

    def mailbox(self, name: str) -> Mailbox:
        box = self._boxes.get(name)
        if box is None:
            box = self._boxes[name] = Mailbox(self.root, self.team, name)
        return box

    def config(self) -> TeamConfig:
        return self.store.read()

    def send_message(
        self, sender: str, recipient: str, content: str, summary: str, color: str | None = None
    ) -> dict[str, Any]:
        """A direct message; returns SendMessage's response (seed 004 §C.2.1)."""
        if not summary:
            raise InvalidInput("a message needs a summary (a few words shown in previews)")
        name = clean_recipient(recipient)
        config = self.config()
        target = config.member(name) or self.store.require_member(name)  # the second raises, naming them
        if name == sender:
            raise InvalidInput(f"{sender} cannot send a message to itself; pick another member")
        self._deliver(sender, name, content, summary=summary, color=color, v2=config.writes_v2)
        routing: dict[str, Any] = {"sender": sender, "target": f"@{name}"}
        if target.color_name:
            routing["targetColor"] = target.color_name
        routing.update(summary=summary, content=content)
        return {"success": True, "message": f"Message sent to {name}'s inbox", "routing": routing}

    def broadcast(self, sender: str, content: str, summary: str, color: str | None = None) -> dict[str, Any]:
        """One message per member other than the sender (seed 004 §C.2.2)."""
        if not summary:
            raise InvalidInput("a broadcast needs a summary (a few words shown in previews)")
        config = self.config()
        recipients = [m.name for m in config.members if m.name != sender]
        for name in recipients:
            self._deliver(sender, name, content, summary=summary, color=color, v2=config.writes_v2)
        return {
            "success": True,
            "message": f"Message broadcast to {len(recipients)} teammate(s): {', '.join(recipients)}",
            "recipients": recipients,
            "routing": {"sender": sender, "target": "@team", "summary": summary, "content": content},
        }

    def send_shutdown_request(self, sender: str, recipient: str, reason: str) -> dict[str, Any]:
        """A shutdown_request body in the recipient's inbox (seed 004 §C.2.3)."""
        name = clean_recipient(recipient)
        if name == LEAD_NAME:
            raise InvalidInput("the lead cannot be asked to shut down; delete the team instead")
        self.store.require_member(name)
        request_id = shutdown_request_id(name)
        body = ShutdownRequest(request_id=request_id, from_=sender, reason=reason, timestamp=now_iso())
        self.send_body(sender, name, body)
        return {
            "success": True,
            "message": f"Shutdown request sent to {name}. Request ID: {request_id}",
            "request_id": request_id,
            "target": name,
        }

    def send_body(self, sender: str, recipient: str, body: ProtocolBody, color: str | None = None) -> None:
        """Deliver a protocol body (JSON in ``text``) to a member's inbox."""
        name = clean_recipient(recipient)
        if name != LEAD_NAME:
            self.store.require_member(name)
        self._deliver(sender, name, body_text(body), color=color, v2=self._v2())

    def _v2(self) -> bool:
        try:
            return self.config().writes_v2
        except AgentTeamsError:  # the shape is a nicety; an unreadable config is reported elsewhere
            return False


# One-shot forms, for callers that send once.


def send_message(
    root: Root, team: str, sender: str, recipient: str, content: str, summary: str, color: str | None = None
) -> dict[str, Any]:
    return Messenger(root, team).send_message(sender, recipient, content, summary, color)


def broadcast(
    root: Root, team: str, sender: str, content: str, summary: str, color: str | None = None
) -> dict[str, Any]:
    return Messenger(root, team).broadcast(sender, content, summary, color)


def send_shutdown_request(root: Root, team: str, sender: str, recipient: str, reason: str) -> dict[str, Any]:
    return Messenger(root, team).send_shutdown_request(sender, recipient, reason)


def send_body(
    root: Root, team: str, sender: str, recipient: str, body: ProtocolBody, color: str | None = None
) -> None:
    Messenger(root, team).send_body(sender, recipient, body, color)
