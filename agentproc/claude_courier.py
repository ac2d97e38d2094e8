"""The courier of a ``claude`` 2.1.330 teammate: messages handed to it (:mod:`ipc.courier`)
reach ``claude`` through its own socket at once, instead of at its next inbox poll.

For each message it decides, under the inbox's lock, whether Claude Code would take it at
once: its ``crossSessionInbound`` setting, else the sender's attested permission mode class
against the teammate's (a held message would stop the teammate behind a dialog no one
sees); a body that keeps the wrapper intact; and the binary's per-sender limits (30 at
once, one every 2 s after, no identical body twice in 30 s), kept below. If so it writes the
frame to ``claude``'s socket and stores the entry read; else it stores it unread and the
poll delivers it. Either way the entry is the record and ``claude`` sees it once.

Each sender gets a reply address here (``from``): Claude Code sends its receipts there, and a
``claude`` that answers by ``SendMessage`` to that address reaches the sender's inbox. A
receipt that says the message did not reach ``claude`` (dropped, refused, expired, denied)
puts it back in the inbox unread, so the poll still delivers it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ipc import cc_registry, cc_socket
from ipc.cc_socket import Arrival, ControlFrame, Mode, UserFrame
from ipc.courier import HandedOver, HandOver, courier_path, read_frame, write_frame
from ipc.errors import AgentTeamsError
from ipc.launch import LaunchSpec
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.schemas import InboxMessage
from ipc.wake import LazyWaker, reply_socket_path

log = logging.getLogger("agentteams.claude_courier")
REQUEST_TIMEOUT = 2.0  # s for a sender to write its request
UNDELIVERED = ("dropped", "refused", "expired", "denied")
KEEP_SENT = 500  # messages remembered for a late receipt


@dataclass(frozen=True)
class ClaudeSocket:
    """One running ``claude``'s socket, and what decides whether it takes a message."""

    path: Path
    token: str
    pid: int
    receiver: Mode  # the teammate's permission mode class
    policy: str | None  # its crossSessionInbound, as Claude Code would resolve it


@dataclass
class Pacer:
    """The binary's per-sender limits (a bucket of 30 refilled at 0.5/s; an identical body
    twice within 30 s is dropped), kept below so that what is sent is not dropped."""

    capacity: float = 20.0
    refill: float = 0.5
    window: float = 30.0
    buckets: dict[str, tuple[float, float, str, float]] = field(default_factory=dict)

    def admit(self, sender: str, body: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        tokens, at, last, last_at = self.buckets.get(sender, (self.capacity, now, "", -1e9))
        tokens = min(self.capacity, tokens + (now - at) * self.refill)
        if tokens < 1 or (body == last and now - last_at < self.window):
            self.buckets[sender] = (tokens, now, last, last_at)
            return False
        self.buckets[sender] = (tokens - 1, now, body, now)
        return True


class Courier:
    def __init__(self, spec: LaunchSpec, claude: ClaudeSocket, on_held: Callable[[], None]) -> None:
        self.spec = spec
        self.claude = claude
        self.on_held = on_held
        self.paths = spec.team_paths()
        self.runtime = self.paths.runtime_dir()
        self.config_dir = Path(spec.root).resolve()
        self.mailbox = Mailbox.at(self.paths, spec.agent_name)
        self.messenger = Messenger.at(self.paths, waker=LazyWaker(self.paths.runtime_dir))
        self.pacer = Pacer()
        self.enabled = True
        self.sent: OrderedDict[str, InboxMessage] = OrderedDict()
        self.replies: dict[str, cc_socket.Listener] = {}
        self.keys: list[Path] = []
        self.lock = threading.Lock()
        self.answer_lock = threading.Lock()
        self.path = courier_path(self.runtime, spec.agent_name)
        self.path.unlink(missing_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.server.bind(str(self.path))
        self.path.chmod(0o600)
        self.server.listen(64)
        threading.Thread(target=self._serve, name="courier", daemon=True).start()

    # ------------------------------------------------------------ senders hand over

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(REQUEST_TIMEOUT)
                try:
                    data = read_frame(conn)
                    if data is None:
                        continue
                    answer = self.deliver(msgspec.msgpack.decode(data, type=HandOver))
                    write_frame(conn, answer)
                except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                    log.warning("courier: a hand-over failed: %s", exc)
                except AgentTeamsError as exc:
                    log.warning("courier: %s", exc.message)

    def deliver(self, request: HandOver) -> HandedOver:
        """Store the message, read if ``claude`` took it through its socket first."""
        with self.lock:
            stored = self.mailbox.append_handed(request.message, lambda m: self._send(m, request.mode))
            return HandedOver(message=stored)

    def _send(self, message: InboxMessage, mode: Mode | None) -> bool:
        """Offer ``message`` to ``claude``'s socket (the inbox lock is held); True if sent."""
        claude = self.claude
        if not (
            self.enabled
            and isinstance(message.msg_id, str)
            and cc_registry.accepts_at_once(claude.policy, claude.receiver, mode)
            and cc_socket.wraps_cleanly(message.text)
            and self.pacer.admit(message.from_, message.text)
        ):
            return False
        try:
            sender = self._reply_address(message.from_)
            frame = cc_socket.user_frame(
                message.text, sender=sender, name=message.from_, mode=mode, msg_id=message.msg_id
            )
            cc_socket.send(str(claude.path), frame, token=claude.token)
        except AgentTeamsError as exc:
            log.warning("courier: not through the socket (%s); the poll delivers it", exc.message)
            return False
        self.sent[message.msg_id] = message
        while len(self.sent) > KEEP_SENT:
            self.sent.popitem(last=False)
        return True

    # ------------------------------------------------------------ what comes back

    def _reply_address(self, sender: str) -> str:
        """The address ``claude`` sees a sender's messages come from (made on first use)."""
        listener = self.replies.get(sender)
        if listener is None:
            path = reply_socket_path(self.runtime, self.spec.agent_name, sender)
            token = cc_registry.new_token()
            listener = cc_socket.Listener(path, token, lambda arrival: self._on_frame(sender, arrival))
            self.keys.append(cc_registry.publish_key(self.config_dir, path, token))
            self.replies[sender] = listener
        return cc_socket.address(listener.path)

    def _on_frame(self, sender: str, arrival: Arrival) -> None:
        if arrival.peer.pid != self.claude.pid:
            log.warning("courier: ignored a frame from pid %d at %s's address", arrival.peer.pid, sender)
            return
        if isinstance(arrival.frame, ControlFrame):
            with self.lock:
                self._on_receipt(arrival.frame)
        elif isinstance(arrival.frame, UserFrame):
            with self.answer_lock:  # not under self.lock: the answer may go to another courier
                self._on_answer(sender, arrival.frame)

    def _on_receipt(self, frame: ControlFrame) -> None:
        if frame.action != "peer_message_status":
            return
        outcome = frame.outcome
        if outcome == "held":
            # Not expected (only what is taken at once is sent); the dialog would stop the
            # teammate, so withdraw it (its default answer, Deny) and stop using the socket.
            log.error(
                "courier: Claude Code held a message (%s); the socket is off for this teammate", frame.reason
            )
            self.enabled = False
            self.on_held()
        elif outcome in UNDELIVERED:
            for msg_id in frame.about():
                message = self.sent.pop(msg_id, None)
                if message is not None:
                    log.warning("courier: Claude Code %s message %s; back to the inbox", outcome, msg_id)
                    self.mailbox.append_message(msgspec.structs.replace(message, read=False))

    def _on_answer(self, sender: str, frame: UserFrame) -> None:
        """``claude`` answered ``sender`` at its address: into the sender's inbox."""
        body = cc_socket.unwrap(frame.message.content).body
        summary = (body.strip().splitlines() or [""])[0][:60] or "message"
        try:
            self.messenger.send_message(
                self.spec.agent_name, sender, body, summary, color=self.spec.agent_color
            )
        except AgentTeamsError as exc:
            log.warning(
                "courier: cannot pass %s's answer to %s: %s", self.spec.agent_name, sender, exc.message
            )

    def withdraw(self) -> None:
        """Take down every path it published (safe in a signal handler)."""
        cc_registry.withdraw([self.path, *self.keys, *(listener.path for listener in self.replies.values())])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.close()
        for listener in self.replies.values():
            listener.close()
        self.withdraw()
        waker = self.messenger.waker
        if isinstance(waker, LazyWaker):
            waker.close()
