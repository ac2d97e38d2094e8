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
from collections.abc import Callable
from typing import Any, Protocol

from ipc import trace, trust
from ipc.cc_socket import Mode, is_address
from ipc.clock import now_iso
from ipc.config import TeamConfigStore
from ipc.courier import hand_over
from ipc.errors import AgentTeamsError, InvalidInput
from ipc.mailbox import Mailbox, new_message
from ipc.options import runs_claude_code
from ipc.paths import TeamPaths, normalise_agent_name, shutdown_request_id
from ipc.schemas import LEAD_NAME, InboxMessage, Member, ProtocolBody, ShutdownRequest, TeamConfig, body_text
from ipc.wake import Doorbell

Root = str | os.PathLike[str] | None
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # already a valid name: nothing to normalise


class SessionRoute(Protocol):
    """How a process sends to a Claude Code session (a ``uds:`` recipient): see
    :mod:`ipc.cc_peer`."""

    def send(self, sender: str, to: str, text: str, summary: str) -> dict[str, Any]: ...


def _is_claude(member: Member) -> bool:
    backend = member.backend_type if isinstance(member.backend_type, str) else ""
    return runs_claude_code(backend, member.model_name)


def clean_recipient(recipient: str) -> str:
    """``@name`` and ``name`` mean the same member."""
    name = recipient[1:] if recipient.startswith("@") else recipient
    return name if _PLAIN.fullmatch(name) else normalise_agent_name(name)


def _needs_summary(summary: str) -> None:
    if not summary:
        raise InvalidInput("a message needs a summary (a few words shown in previews)")


class Messenger:
    """Sends into one team's inboxes; reusable and cheap to call again."""

    def __init__(self, root: Root, team: str, *, waker: Doorbell | None = None) -> None:
        self._bind(TeamConfigStore(root, team), waker)

    @classmethod
    def at(
        cls, paths: TeamPaths, *, waker: Doorbell | None = None, store: TeamConfigStore | None = None
    ) -> Messenger:
        """A messenger for the team of ``paths`` (sharing ``store``, the team's config, if given)."""
        messenger = cls.__new__(cls)
        messenger._bind(store or TeamConfigStore.at(paths), waker)
        return messenger

    def _bind(self, store: TeamConfigStore, waker: Doorbell | None) -> None:
        self.store = store
        self.paths = self.store.paths
        self.root = self.paths.root
        self.team = self.store.team
        self.waker = waker
        # The sending process's permission mode class, attested to Claude Code teammates
        # (None: not known here, nothing is attested).
        self.attest: Callable[[], Mode | None] | None = None
        # How this process reaches a Claude Code session (``uds:`` recipients), if it can.
        self.sessions: SessionRoute | None = None
        self._boxes: dict[str, Mailbox] = {}
        # A person's door (the CLI, the Python API): what it cannot sign in a member's name
        # goes marked as a person's, delivered marked unverified and never acted on as a
        # protocol message (ipc.trust), rather than refused as forged.
        self.as_person = False

    def _deliver(
        self,
        sender: str,
        name: str,
        text: str,
        *,
        summary: str | None = None,
        color: str | None = None,
        v2: bool = False,
        courier: bool = False,
    ) -> InboxMessage:
        """Append to ``name``'s inbox, then wake it (and trace both, when tracing is on).
        ``courier``: ``name`` is a Claude Code teammate; its courier, if it runs, delivers
        the message through ``claude``'s own socket and appends it (:mod:`ipc.courier`)."""
        sent = time.time_ns()
        # Measured before it is signed: signing makes the sender's key at its first message,
        # a write to the config that a refused message must not leave behind.
        self.mailbox(name).check_size(
            InboxMessage(from_=sender, text=text, timestamp="", summary=summary or "")
        )
        message = new_message(sender, text, summary, color, v2=v2, paths=self.paths)
        if self.as_person and trust.signature_of(message) is None:
            message.via = "person"
        if courier:
            mode = self.attest() if self.attest is not None else None
            message = hand_over(self.paths.runtime_dir(), self.mailbox(name), message, mode)
        else:
            self.mailbox(name).append_message(message)
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
            box = self._boxes[name] = Mailbox.at(self.paths, name)
        return box

    def config(self) -> TeamConfig:
        return self.store.read()

    def send_message(
        self, sender: str, recipient: str, content: str, summary: str, color: str | None = None
    ) -> dict[str, Any]:
        """A direct message; returns Claude Code's SendMessage response. The recipient is
        checked before the summary: a message to no one is the bigger mistake, and the
        refusal names the members."""
        if is_address(recipient):
            if self.sessions is None:
                raise InvalidInput(
                    f"{recipient} is a Claude Code session; {sender} can answer one only when the team "
                    "is up with --claude-peers"
                )
            _needs_summary(summary)
            return self.sessions.send(sender, recipient, content, summary)
        name = clean_recipient(recipient)
        config = self.config()
        target = config.member(name) or self.store.require_member(name)  # the second raises, naming them
        if name == sender:
            raise InvalidInput(f"{sender} cannot send a message to itself; pick another member")
        _needs_summary(summary)
        self._deliver(
            sender,
            name,
            content,
            summary=summary,
            color=color,
            v2=config.writes_v2,
            courier=_is_claude(target),
        )
        routing: dict[str, Any] = {"sender": sender, "target": f"@{name}"}
        if target.color_name:
            routing["targetColor"] = target.color_name
        routing.update(summary=summary, content=content)
        return {"success": True, "message": f"Message sent to {name}'s inbox", "routing": routing}

    def broadcast(self, sender: str, content: str, summary: str, color: str | None = None) -> dict[str, Any]:
        """One message per member other than the sender; Claude Code's broadcast response."""
        if not summary:
            raise InvalidInput("a broadcast needs a summary (a few words shown in previews)")
        config = self.config()
        members = [m for m in config.members if m.name != sender]
        recipients = [m.name for m in members]
        for member in members:
            self._deliver(
                sender,
                member.name,
                content,
                summary=summary,
                color=color,
                v2=config.writes_v2,
                courier=_is_claude(member),
            )
        return {
            "success": True,
            "message": f"Message broadcast to {len(recipients)} teammate(s): {', '.join(recipients)}",
            "recipients": recipients,
            "routing": {"sender": sender, "target": "@team", "summary": summary, "content": content},
        }

    def send_shutdown_request(self, sender: str, recipient: str, reason: str) -> dict[str, Any]:
        """A shutdown_request body in the recipient's inbox, as Claude Code's lead sends it."""
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
        self.deliver_body(sender, name, body, color)

    def deliver_body(self, sender: str, name: str, body: ProtocolBody, color: str | None = None) -> None:
        """:meth:`send_body` to ``name``, a member the caller has checked already."""
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
