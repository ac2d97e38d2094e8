"""Handing a message to a Claude Code teammate's courier, so it reaches its turn at once.

A ``claude`` 2.1.330 teammate polls its inbox once a second, but also listens on a socket of
its own. The process that runs it (``agentproc.claude_teammate``) keeps a courier socket in
the team's runtime directory. A sender hands it the message instead of appending it; the
courier appends it under the inbox's lock, after first offering it to ``claude``'s socket:
sent, it is stored read, so the poll never delivers it again; not sent (Claude Code would
hold it, its socket is gone), it is stored unread for the poll, as without a courier. The
entry is the record either way, and the message reaches ``claude`` once.

No courier (another backend, 2.1.38, the teammate not up): the sender appends as usual. A
courier that took the request but did not answer: the sender appends unless the entry is
there already (the courier's ``claude`` died with it, so nothing was delivered twice).
"""

from __future__ import annotations

import contextlib
import socket
import struct
from pathlib import Path

import msgspec

from ipc.cc_socket import Mode
from ipc.mailbox import Mailbox
from ipc.schemas import InboxMessage
from ipc.wake import socket_path

ANSWER_TIMEOUT = 5.0  # s for a courier to answer; it holds the inbox lock well under this
MAX_FRAME = 2 * 1024 * 1024


class HandOver(msgspec.Struct, kw_only=True):
    """A message for the courier's teammate, and what the sender attests about itself."""

    message: InboxMessage
    mode: Mode | None = None  # the sender's permission mode class, when it knows it


class HandedOver(msgspec.Struct, kw_only=True):
    message: InboxMessage  # as stored: read if it went through the socket, unread for the poll


def courier_path(runtime_dir: Path, agent: str) -> Path:
    return socket_path(runtime_dir, agent, "c")


def write_frame(sock: socket.socket, obj: msgspec.Struct) -> None:
    data = msgspec.msgpack.encode(obj)
    sock.sendall(struct.pack(">I", len(data)) + data)


def read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    return None if size > MAX_FRAME else _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def hand_over(runtime_dir: Path, mailbox: Mailbox, message: InboxMessage, mode: Mode | None) -> InboxMessage:
    """Deliver ``message`` to ``mailbox``'s agent through its courier if it has one, else
    append it; returns the message as stored."""
    path = courier_path(runtime_dir, mailbox.agent)
    if not path.exists():
        return mailbox.append_message(message)
    mailbox.check_size(message)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    with contextlib.closing(sock):
        sock.settimeout(ANSWER_TIMEOUT)
        try:
            sock.connect(str(path))
        except OSError:
            return mailbox.append_message(message)  # a courier gone with its teammate
        try:
            write_frame(sock, HandOver(message=message, mode=mode))
            answer = read_frame(sock)
            if answer is not None:
                return msgspec.msgpack.decode(answer, type=HandedOver).message
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            pass
    return mailbox.append_once(message)
