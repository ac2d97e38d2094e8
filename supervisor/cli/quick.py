"""The quick path of ``send`` and ``task create``: the standard library only, taken before
anything heavy is imported. The command line is read by the same parser as the full path's
(:mod:`supervisor.cli.parsers`), then handed as one JSON line to the team's resident door
(a socket in its runtime directory, served by a program its supervisor keeps warm, see
:mod:`supervisor.resident`), which runs it through the table of operations; what comes back
is printed as the full path prints it, with the same exit code.

Whenever the door cannot be asked (the team is not up, its socket is missing or stale,
a runtime directory that is not private, ``--engine``, an argument it does not take, or a
door that says "not here", or one that could not start), nothing has been sent and the full
path runs instead, so the result is the same either way. Once a request has gone out the
answer is waited for, up to ``DEADLINE``: a door that goes away first is an error, never a
second send.
"""

from __future__ import annotations

import _socket  # not socket: its enums and selectors are a good share of this path's start-up
import io
import json
import os
import re
import stat
import sys
import time

from supervisor.cli import exits
from supervisor.cli.homes import command_of
from supervisor.cli.parsers import LEAD_NAME, created_line, quick_parser, task_metadata

TYPE_CHECKING = False  # not typing's (see supervisor.cli.parsers)
if TYPE_CHECKING:
    import argparse

# The door's wire (ipc.resident, not imported here: it needs msgspec; a test holds them equal).
SOCKET_NAME = "door.sock"
VERSION = 1
MAX_REQUEST = 4 * 1024 * 1024
DEADLINE = 20.0  # seconds for the answer: the door's first start, on a busy machine, included
MAX_NAME_LENGTH = 64  # ipc.paths: team names and the runtime directory's place
MAX_RUNTIME_PATH = 80
UNDER_AGENT = "AGENTTEAMS_UNDER_AGENT"  # ipc.trust: set in a teammate and every tool it runs

try:  # the interpreter's own SHA-256 (3.11): hashlib loads OpenSSL first, a few ms of start-up
    from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    from hashlib import sha256


def attempt(argv: list[str]) -> int | None:
    """The exit code of ``argv`` done through the team's resident door, or None: take the
    full path (nothing was sent)."""
    if os.environ.get("AGENTTEAMS_QUICK_DOOR", "1") == "0":
        return None
    if os.environ.get(UNDER_AGENT):  # a teammate's tool: the door would sign as the lead
        return None
    command = command_of(argv)
    if command not in ("send", "task") or (command == "task" and task_command(argv) != "create"):
        return None
    if not all(arg.isascii() or _utf8(arg) for arg in argv):
        return None  # bytes that are not UTF-8: the full path names the argument
    args = quick_parser(command, "create").parse_args(argv)  # a usage error exits here, as on the full path
    if args.engine or os.environ.get("AGENTTEAMS_ENGINE"):
        return None
    where = place(args.root, args.team)
    if where is None:
        return None
    root, team, path = where
    if command == "send":
        text = message_text(args.text)
        if text is None:
            return None
        op, actor = "send_message", args.sender
        fields: dict[str, object] = {"to": args.recipient, "text": text, "summary": args.summary}
    else:
        text, op, actor = None, "task_create", LEAD_NAME
        fields = {
            "subject": args.subject,
            "description": args.description,
            "blocked_by": args.blocked_by,
            "metadata": task_metadata(args),
            "active_form": args.active_form,
            "owner": args.owner,
        }
    request = {"v": VERSION, "op": op, "args": fields, "actor": actor, "root": root, "team": team}
    line = json.dumps(request).encode() + b"\n"
    conn = connect(path) if len(line) <= MAX_REQUEST else None  # a longer one: the full path
    reply: dict[str, object] | None = {"fallback": "no door"}
    if conn is not None:
        reply = exchange(conn, line)
    if reply is None:
        what, look = (
            ("the message may or may not have been sent", "inbox")
            if op == "send_message"
            else ("the task may or may not exist", "task list")
        )
        print(
            f"agentteams: error: the resident door of team {team!r} went away before answering; "
            f"{what} (look with 'agentteams {look} {team} ...' before trying again)",
            file=sys.stderr,
        )
        return exits.ERROR
    if reply.get("fallback"):  # nothing was done
        if command == "send" and args.text == "-" and text is not None:
            sys.stdin = io.StringIO(text)  # read already: the full path reads it from here
        return None
    return show(args, op, reply)


def show(args: argparse.Namespace, op: str, reply: dict[str, object]) -> int:
    """Print what the full path prints for the same outcome; its exit code."""
    if not reply.get("ok"):
        code = reply.get("exit")
        code = code if isinstance(code, int) and code else exits.ERROR
        if code == exits.INTERNAL:
            print(f"agentteams: internal error: {reply.get('error')} (please report this)", file=sys.stderr)
        else:
            print(f"agentteams: error: {reply.get('error')}", file=sys.stderr)
        return code
    result = reply.get("result")
    assert isinstance(result, dict)
    try:
        if args.json:
            print(json.dumps(result, ensure_ascii=False, default=str))
        elif op == "send_message":
            print(result["message"])
        else:
            print(created_line(result["id"], result["subject"]))
        sys.stdout.flush()
    except BrokenPipeError:  # `agentteams send ... | head -0`: quiet, as the full path is
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exits.OK


def message_text(value: str) -> str | None:
    """``send``'s text as the full path reads it, or None (let the full path say why not)."""
    if value == "-":
        try:
            raw = sys.stdin.buffer.read()
        except OSError:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # the full path reads the same bytes and says what is wrong
            sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
            return None
    if value.startswith("@") and len(value) > 1:
        try:
            with open(value[1:], encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            return None
    return value


def task_command(argv: list[str]) -> str | None:
    """The word after ``task`` (which :func:`~supervisor.cli.homes.command_of` found)."""
    words, seen = iter(argv), False
    for word in words:
        if word in ("--root", "--engine"):  # the global options that take a value
            next(words, None)
        elif not word.startswith("-"):
            if seen:
                return word
            seen = True
    return None


# ---------------------------------------------------------------- where the door is


def _utf8(arg: str) -> bool:
    try:
        arg.encode()
    except UnicodeEncodeError:  # argv decoded with surrogateescape
        return False
    return True


def place(root_arg: str | None, team_arg: str) -> tuple[str, str, str] | None:
    """(state root, team, door socket) as :class:`ipc.paths.TeamPaths` computes them, or
    None for anything the full path should judge (an odd root or name, an unsafe place)."""
    if root_arg is not None:
        if not root_arg.strip():
            return None
        given = os.path.expanduser(root_arg)
        if os.path.exists(given) and not os.path.isdir(given):
            return None
        root = absolute(given)
    else:
        home = os.environ.get("AGENTTEAMS_HOME")
        root = absolute(os.path.expanduser(home)) if home else plain(os.path.expanduser("~") + "/.agentteams")
    team = re.sub(r"[^a-zA-Z0-9]", "-", team_arg).lower()
    if (
        not team_arg.strip()
        or len(team) > MAX_NAME_LENGTH
        or team.startswith("-")
        or not re.search(r"[a-z0-9]", team)
    ):
        return None
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    base = plain(xdg + "/agentteams") if xdg else f"/tmp/agentteams-{os.getuid()}"
    if root is None or base is None:
        return None
    try:
        digest = sha256(f"{root}\0{team}".encode()).hexdigest()[:12]
    except UnicodeEncodeError:
        return None
    runtime = f"{base}/{team[:24]}-{digest}"
    if len(runtime) > MAX_RUNTIME_PATH:
        runtime = f"/tmp/agentteams-{os.getuid()}/{team[:24]}-{digest}"
    return (root, team, f"{runtime}/{SOCKET_NAME}") if private(runtime) else None


def plain(path: str) -> str | None:
    """``str(Path(path))``: no empty or '.' parts (None for a leading '//', which Path keeps)."""
    if path.startswith("//") and not path.startswith("///"):
        return None
    joined = "/".join(p for p in path.split("/") if p and p != ".")
    return "/" + joined if path.startswith("/") else (joined or ".")


def absolute(path: str) -> str | None:
    """``str(Path(path).absolute())``."""
    return plain(path if path.startswith("/") else f"{os.getcwd()}/{path}")


def private(runtime: str) -> bool:
    """The runtime directory is ours alone, as :func:`ipc.paths.ensure_private_dir` demands."""
    try:
        info = os.lstat(runtime)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def connect(path: str) -> _socket.socket | None:
    """A connection to the door, or None (no door: nothing was sent)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(DEADLINE)
        conn.connect(path)  # refused: a dead supervisor's socket
        creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():  # (pid, uid, gid)
            raise ConnectionRefusedError
    except OSError:
        conn.close()
        return None
    return conn


def exchange(conn: _socket.socket, line: bytes) -> dict[str, object] | None:
    """Send the request line, wait for the reply's (None: the door went away or took too long).
    A line not sent whole was never acted on (the door acts on whole lines): if no reply came
    (the supervisor says at once when its door could not start), the full path is taken."""
    deadline = time.monotonic() + DEADLINE
    data, sent = b"", True
    try:
        try:
            conn.sendall(line)
        except OSError:
            deadline, sent = time.monotonic() + 1.0, False  # a reply written already is read below
        while b"\n" not in data:
            conn.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = conn.recv(65536)
            if not chunk:
                return None if sent else {"fallback": "not sent"}
            data += chunk
    except OSError:
        return None if sent else {"fallback": "not sent"}
    finally:
        conn.close()
    try:
        reply = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None
