"""An agent of ours as a session Claude Code can list and message (``ListAgents``,
``SendMessage``), and answer.

A :class:`ClaudePeer` listens on a socket in Claude Code's socket directory and publishes
its record and token in one Claude Code config dir (``agentteams up TEAM --claude-peers
DIR``): the sessions that use that dir list it by ``{agent}.{team}``. What a session sends
is written into the agent's inbox, from the session's address (``uds:…``), and the agent
is rung: our agents need no other input. An answer to that address goes back as a frame
from this process, which is also the one listening (Claude Code checks that the process it
answers is the one that wrote to it, and so does this one). The registry holds one record
per process, so each agent's own process exposes it; the supervisor exposes the lead's
side, and a lead agent or the command line answer through it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipc import cc_registry, cc_socket, control
from ipc.cc_socket import Arrival, ControlFrame, Mode, PeerCred, UserFrame
from ipc.errors import InvalidInput, NotFound
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME
from ipc.wake import LazyWaker

log = logging.getLogger("agentteams.cc_peer")


def display_name(agent: str, team: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"{agent}.{team}")


def response(sender: str, to: str, text: str, summary: str, msg_id: str) -> dict[str, Any]:
    """What SendMessage answers for a message to a session."""
    return {
        "success": True,
        "message": f"Message sent to the Claude Code session at {to}",
        "msg_id": msg_id,
        "routing": {"sender": sender, "target": f"@{to}", "summary": summary, "content": text},
    }


class ClaudePeer:
    def __init__(
        self,
        paths: TeamPaths,
        agent: str,
        config_dir: Path,
        *,
        cwd: str,
        mode: Callable[[], Mode | None],
    ) -> None:
        self.paths = paths
        self.agent = agent
        self.config_dir = config_dir
        self.mode = mode
        self.name = display_name(agent, paths.team)
        self.mailbox = Mailbox.at(paths, agent)
        self.doorbell = LazyWaker(paths.runtime_dir)
        self.correspondents: dict[str, PeerCred] = {}  # address → the process that wrote from it
        self.lock = threading.Lock()
        self.path = cc_registry.new_socket_path()
        self.token = cc_registry.new_token()
        self.listener = cc_socket.Listener(self.path, self.token, self._on_frame)
        self.address = cc_socket.address(self.path)
        try:
            self.files = [cc_registry.publish_key(config_dir, self.path, self.token)]
            self.files.append(cc_registry.publish_record(config_dir, self.path, name=self.name, cwd=cwd))
        except Exception:
            self.listener.close()
            raise

    def _on_frame(self, arrival: Arrival) -> None:
        frame = arrival.frame
        with self.lock:
            if isinstance(frame, ControlFrame):
                log.info(
                    "%s: receipt %s for %s: %s",
                    self.name,
                    frame.outcome or frame.action,
                    frame.about(),
                    frame.reason,
                )
                return
            assert isinstance(frame, UserFrame)
            wrapped = cc_socket.unwrap(frame.message.content)
            sender = frame.from_ if isinstance(frame.from_, str) and cc_socket.is_address(frame.from_) else ""
            if not sender:
                log.warning(
                    "%s: a message from pid %d has no address to answer; kept anyway",
                    self.name,
                    arrival.peer.pid,
                )
                sender = f"claude-code-pid-{arrival.peer.pid}"
            else:
                self.correspondents[sender] = arrival.peer
            who = f"Claude Code session {wrapped.name}" if wrapped.name else "a Claude Code session"
            self.mailbox.append(sender, wrapped.body, summary=f"from {who}", member_checked=True)
            self.doorbell.wake(self.agent)

    def send(self, sender: str, to: str, text: str, summary: str) -> dict[str, Any]:
        """A message from ``sender`` (this peer's agent) to the session at ``to``."""
        if sender != self.agent:
            raise InvalidInput(f"this process answers Claude Code sessions as {self.agent}, not {sender}")
        path = cc_socket.path_of(to)
        if not cc_registry.is_private_socket(path):
            raise NotFound(f"no Claude Code session listens at {to} (or not as this user)")
        with self.lock:
            wrote = self.correspondents.get(to)
        frame = cc_socket.user_frame(text, sender=self.address, name=self.name, mode=self.mode())
        cc_socket.send(
            path,
            frame,
            token=cc_registry.token_for(self.config_dir, path),
            expect_pid=wrote.pid if wrote is not None else None,
        )
        return response(sender, to, text, summary, frame.msg_id)

    def withdraw(self) -> None:
        """Unlist this peer: its record, key and socket go (safe in a signal handler)."""
        cc_registry.withdraw([*self.files, self.path])

    def close(self) -> None:
        self.listener.close()
        self.withdraw()
        self.doorbell.close()


class SupervisorRoute:
    """The lead's side, from a process that is not its supervisor (the command line, a lead
    agent): the supervisor's peer sends it, as only the process listening may."""

    def __init__(self, paths: TeamPaths, client: Callable[[], control.ControlClient] | None = None) -> None:
        self.paths = paths
        self.client = client

    def send(self, sender: str, to: str, text: str, summary: str) -> dict[str, Any]:
        if sender != LEAD_NAME:
            raise InvalidInput(
                f"{sender} answers Claude Code sessions from its own process; "
                f"from here only {LEAD_NAME}'s messages go (through the team's supervisor)"
            )
        cc_socket.path_of(to)  # a clear error for a bad address before anything is asked
        request = control.SessionSend(id=control.new_id(), sender=sender, to=to, text=text, summary=summary)
        if self.client is not None:
            reply = self.client().call(request, timeout=10)
        else:
            with control.ControlClient(self.paths.runtime_dir()) as client:
                reply = client.call(request, timeout=10)
        return response(sender, to, text, summary, reply.msg_id)
