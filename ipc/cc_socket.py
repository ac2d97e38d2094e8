"""Claude Code's cross-session socket (2.1.330 and later), as the binary speaks it.

A session listens on a Unix stream socket. A sender connects, writes newline-delimited JSON
and half-closes; the listener never answers on that connection (one connection per frame).
The first line may be ``{"type":"auth","token":…}`` with the token the listener published
in its Claude Code config dir (:mod:`ipc.cc_registry`); then a ``user`` frame whose content
Claude Code shows its model, or a ``control`` frame (receipts: ``peer_message_status``).
Identity is the kernel's: the listener reads the sender's pid with ``SO_PEERCRED``, and a
sender checks the pid of an endpoint it replies to. So whoever sends with ``from`` set to
an address must be the process listening there.

The content a sender writes is a wrapper Claude Code parses (and rebuilds, exactly, before
it believes it): ``<cross-session-message from="uds:PATH" from-name="N" from-mode="M">``,
body, closing tag. ``from-mode`` (``bypass`` or ``prompting``) is the sender's permission
mode class, which the receiver compares with its own before it accepts the message.

Claude Code itself ignores a missing or wrong token on Linux (only Windows requires one);
the listener here refuses both.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import re
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

import msgspec
from msgspec import UNSET, Struct, UnsetType, field

from ipc.errors import InvalidInput, TransportError

log = logging.getLogger("agentteams.cc_socket")

MAX_LINE = 1 << 20  # the binary's line cap
FIRST_LINE_DEADLINE = 30.0  # s: a connection with no complete line by then is closed
SEND_TIMEOUT = 1.0  # s to connect and write one frame
TAG = "cross-session-message"
Mode = Literal["bypass", "prompting"]
_SAFE = "A-Za-z0-9:_/.\\-"  # what an address may hold unescaped (the binary's class)


# ---------------------------------------------------------------- frames


class Auth(Struct, tag_field="type", tag="auth"):
    token: str


class Content(Struct):
    content: str
    role: str = "user"


class UserFrame(Struct, tag_field="type", tag="user", kw_only=True):
    message: Content
    msg_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    msg_v: int = field(name="msgV", default=1)
    priority: str = "next"
    from_: str | UnsetType = field(name="from", default=UNSET)


class ControlFrame(Struct, tag_field="type", tag="control", kw_only=True, omit_defaults=True):
    """Receipts (``action: peer_message_status``) and the other control actions, of which
    only the fields read here are named; the rest are ignored."""

    action: str
    status: str | UnsetType = UNSET
    status_detail: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    from_: str | UnsetType = field(name="from", default=UNSET)
    orig_msg_id: str | UnsetType = UNSET
    drop_reason: str | UnsetType = UNSET
    dropped_msg_ids: list[str] = []
    msg_id: str | UnsetType = UNSET

    def about(self) -> list[str]:
        """The msg_ids this receipt is about."""
        ids = [self.orig_msg_id] if isinstance(self.orig_msg_id, str) else []
        return ids + [i for i in self.dropped_msg_ids if i not in ids]

    @property
    def outcome(self) -> str:
        """held | denied | delivered | expired | refused | dropped (the binary writes a
        refusal as ``expired`` with ``status_detail: refused``)."""
        if self.status == "expired" and self.status_detail == "refused":
            return "refused"
        return self.status if isinstance(self.status, str) else ""


Frame = Auth | UserFrame | ControlFrame
_decoder: msgspec.json.Decoder[Frame] = msgspec.json.Decoder(Frame)
_encoder = msgspec.json.Encoder()


def encode_line(frame: Frame) -> bytes:
    return _encoder.encode(frame) + b"\n"


def decode_line(line: bytes) -> Frame | None:
    """A frame, or None for a line that is not one (other types, junk)."""
    try:
        return _decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def user_frame(
    body: str, *, sender: str = "", name: str = "", mode: Mode | None = None, msg_id: str = ""
) -> UserFrame:
    """A message as the binary's own SendMessage writes it: the wrapper, and ``from`` when the
    sender has an address (receipts and replies go there)."""
    frame = UserFrame(message=Content(content=wrap(body, sender=sender, name=name, mode=mode)))
    if msg_id:
        frame.msg_id = msg_id
    if sender:
        frame.from_ = sender
    return frame


# ---------------------------------------------------------------- addresses and the wrapper


def address(path: str | os.PathLike[str]) -> str:
    """``uds:PATH``, escaped as the binary escapes it (each UTF-8 byte of anything else as
    ``%XX``)."""
    return "uds:" + re.sub(f"[^{_SAFE}]", lambda m: "".join(f"%{b:02X}" for b in m[0].encode()), str(path))


def is_address(text: str) -> bool:
    return text.startswith("uds:") and len(text) > 5


def path_of(addr: str) -> str:
    """The socket path of a ``uds:`` address; InvalidInput for anything else."""
    if not is_address(addr) or not re.fullmatch(f"[{_SAFE}%]{{1,300}}", addr):
        raise InvalidInput(
            f"{addr!r} is not a Claude Code address; one looks like uds:/tmp/cc-socks/1234.sock"
        )
    path = unquote(addr[4:])
    if not os.path.isabs(path):
        raise InvalidInput(f"{addr!r} does not name an absolute socket path")
    return path


@dataclass(frozen=True)
class Wrapped:
    body: str
    sender: str = ""
    session: str = ""
    name: str = ""
    mode: str = ""


_WRAPPED = re.compile(
    rf'^<{TAG}(?: from="([{_SAFE}%]+)")?(?: from-session="([A-Za-z0-9_-]{{1,80}})")?'
    r'(?: hop-chain="([0-9a-f,]+)")?(?: from-name="([^"<>\n\r]+)")?(?: from-mode="(bypass|prompting)")?'
    rf'(?: from-plugin="([^"<>\n\r]+)")?>\n([\s\S]*)\n</{TAG}>$'
)
_NAME_DROP = re.compile(r'["<>\x00-\x1f\x7f\u2028\u2029]')


def wrap(body: str, *, sender: str = "", name: str = "", mode: Mode | None = None) -> str:
    """The wrapper, attributes in the binary's fixed order (it rebuilds and compares it)."""
    attrs = []
    if sender:
        attrs.append(f'from="{sender}"')
    clean = _NAME_DROP.sub("", name).strip()[:64]
    if clean:
        attrs.append(f'from-name="{clean}"')
    if mode:
        attrs.append(f'from-mode="{mode}"')
    head = " " + " ".join(attrs) if attrs else ""
    return f"<{TAG}{head}>\n{body}\n</{TAG}>"


def unwrap(content: str) -> Wrapped:
    """What a frame's content says; content without the wrapper is all body."""
    match = _WRAPPED.match(content)
    if match is None:
        return Wrapped(body=content)
    return Wrapped(
        body=match[7],
        sender=match[1] or "",
        session=match[2] or "",
        name=match[4] or "",
        mode=match[5] or "",
    )


def wraps_cleanly(body: str) -> bool:
    """False if ``body`` mentions the wrapper's own tag in any spelling: the binary would
    escape it, its rebuilt wrapper would differ, and the attestation would be lost."""
    folded = re.sub(r"[^a-z]", "", body.casefold())
    return "crosssessionmessage" not in folded


# ---------------------------------------------------------------- the kernel's word on a peer


@dataclass(frozen=True)
class PeerCred:
    pid: int
    uid: int
    gid: int


def peer_cred(sock: socket.socket) -> PeerCred:
    pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return PeerCred(pid, uid, gid)


# ---------------------------------------------------------------- sending


def send(
    path: str,
    frame: UserFrame | ControlFrame,
    *,
    token: str | None = None,
    expect_pid: int | None = None,
    timeout: float = SEND_TIMEOUT,
) -> None:
    """Write one frame (after the auth line when there is a token) and half-close. With
    ``expect_pid``, refuse to write unless the listener is that process and runs as this
    user, as the binary does before it replies. TransportError if it cannot be written."""
    data = (encode_line(Auth(token=token)) if token else b"") + encode_line(frame)
    if len(data) > MAX_LINE:
        raise InvalidInput(f"a message of {len(data)} bytes is over Claude Code's limit of {MAX_LINE}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        if expect_pid is not None:
            cred = peer_cred(sock)
            if cred.pid != expect_pid or cred.uid != os.getuid():
                raise TransportError(
                    f"{path} is served by pid {cred.pid} (uid {cred.uid}), not the session that wrote "
                    f"from it (pid {expect_pid}); not sending"
                )
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError as exc:
        raise TransportError(f"cannot send to {path}: {exc.strerror or exc}") from exc
    finally:
        sock.close()


# ---------------------------------------------------------------- listening


@dataclass(frozen=True)
class Arrival:
    """One frame that came in, with who sent it."""

    frame: UserFrame | ControlFrame
    peer: PeerCred
    at: float


class Listener:
    """Listens at ``path`` (0600, in a directory the caller keeps private) on a thread of its
    own; hands each authenticated frame to ``on_frame`` on that thread. A connection whose
    first line is not the auth line with ``token`` is closed and nothing of it is used."""

    def __init__(self, path: Path, token: str, on_frame: Callable[[Arrival], None]) -> None:
        self.path = path
        self.token = token
        self.on_frame = on_frame
        self.refused = 0
        self._closed = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            with contextlib.suppress(FileNotFoundError):
                if path.is_socket():
                    path.unlink()
            self.sock.bind(str(path))
            os.chmod(path, 0o600)
            self.sock.listen(64)
        except OSError as exc:
            self.sock.close()
            raise TransportError(f"cannot listen at {path}: {exc.strerror or exc}") from exc
        self.thread = threading.Thread(target=self._serve, name=f"cc-listen {path.name}", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            try:
                peer = peer_cred(conn)
                lines = _read_lines(conn)
            except OSError:
                return
            first = decode_line(lines[0]) if lines else None
            if not isinstance(first, Auth) or not hmac.compare_digest(
                first.token.encode(), self.token.encode()
            ):
                self.refused += 1
                log.warning(
                    "%s: refused a connection from pid %d without the right token", self.path, peer.pid
                )
                return
            for line in lines[1:]:
                frame = decode_line(line)
                if isinstance(frame, UserFrame | ControlFrame):
                    try:
                        self.on_frame(Arrival(frame, peer, time.time()))
                    except Exception:  # one bad frame must not stop the listener
                        log.exception("%s: handling a frame from pid %d failed", self.path, peer.pid)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def _read_lines(conn: socket.socket) -> list[bytes]:
    """Every complete line until the sender half-closes, the deadline, or the size cap."""
    deadline = time.monotonic() + FIRST_LINE_DEADLINE
    data = b""
    while len(data) <= MAX_LINE + 200:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    lines = data.split(b"\n")
    return [line for line in lines[:-1] if line.strip()] + ([lines[-1]] if lines[-1].strip() else [])
