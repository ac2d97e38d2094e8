"""Claude Code's session registry and the rules its socket applies, as far as agentteams
needs them to reach Claude Code sessions and to be reached by them.

Sessions find each other through ``<config dir>/sessions/``: ``<pid>.json`` describes a live
session and its socket (what ``ListAgents`` lists: one per process), and
``<pid>.<sha256 of the socket path>.key`` holds the token a sender puts on its auth line.
Sessions with different config dirs do not see each other.

What a session does with a message that arrives (2.1.330): the setting
``crossSessionInbound`` (``accept | hold | refuse``) decides if it is set, taken from the
managed policy, then ``--settings``, then ``<config dir>/settings.json``, and made only
stricter by the project's ``.claude/settings.json`` and ``settings.local.json``; otherwise
the sender's attested permission mode class must equal the receiver's, and a message with
none is held by a session that bypasses permissions. A held message waits for a person in a
dialog that also stops the session's inbox deliveries.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ipc.cc_socket import Mode
from ipc.errors import UnsafeRuntimeDir
from ipc.paths import ensure_private_dir
from ipc.storage import atomic_write, ensure_dir

POLICY_DIR = Path("/etc/claude-code")
_RANK = {"accept": 0, "hold": 1, "refuse": 2}
MAX_SOCKET_PATH = 103  # bytes, as the binary checks


def sessions_dir(config_dir: Path) -> Path:
    return config_dir / "sessions"


def proc_start(pid: int) -> str:
    """The process's start time in clock ticks (``/proc/PID/stat`` field 22), which tells a
    live process from a recycled pid."""
    data = Path(f"/proc/{pid}/stat").read_text()
    return data[data.rindex(")") + 2 :].split()[19]


def pid_domain() -> str:
    machine = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").exists() else "unknown"
    return f"linux:{machine}:{os.readlink('/proc/self/ns/pid')}"


def _socket_digest(sock: Path | str) -> str:
    return hashlib.sha256(os.path.realpath(sock).encode()).hexdigest()


def key_path(config_dir: Path, sock: Path | str, pid: int | None = None) -> Path:
    return sessions_dir(config_dir) / f"{os.getpid() if pid is None else pid}.{_socket_digest(sock)}.key"


def new_token() -> str:
    return secrets.token_hex(16)


def publish_key(config_dir: Path, sock: Path, token: str) -> Path:
    """Let senders of ``config_dir`` authenticate to ``sock`` (this process listens there)."""
    ensure_dir(sessions_dir(config_dir))
    path = key_path(config_dir, sock)
    body = {"peerToken": token, "procStart": proc_start(os.getpid()), "pidDomain": pid_domain()}
    atomic_write(path, json.dumps(body).encode())
    return path


def publish_record(config_dir: Path, sock: Path, *, name: str, cwd: str, status: str = "idle") -> Path:
    """Make this process a session of ``config_dir`` that ``ListAgents`` lists by ``name``
    (one record per process: the registry is keyed by pid)."""
    ensure_dir(sessions_dir(config_dir))
    pid, now = os.getpid(), int(time.time() * 1000)
    record = {
        "pid": pid,
        "sessionId": str(uuid.uuid4()),
        "cwd": cwd,
        "startedAt": now,
        "procStart": proc_start(pid),
        "version": "agentteams",
        "peerProtocol": 1,
        "peerFeatures": [],
        "kind": "bg",
        "entrypoint": "agentteams",
        "pidDomain": pid_domain(),
        "messagingSocketPath": str(sock),
        "name": name,
        "nameSource": "user",
        "nameSince": now,
        "status": status,
        "updatedAt": now,
        "statusUpdatedAt": now,
    }
    path = sessions_dir(config_dir) / f"{pid}.json"
    atomic_write(path, json.dumps(record).encode())
    return path


def withdraw(paths: Iterable[Path]) -> None:
    for path in paths:
        try:
            path.unlink()
        except OSError:
            pass


def token_for(config_dir: Path, sock: Path | str) -> str | None:
    """The token the listener at ``sock`` published in ``config_dir``, preferring a live
    owner's; None if there is none."""
    best: tuple[int, str] | None = None
    for path in sessions_dir(config_dir).glob(f"*.{_socket_digest(sock)}.key"):
        try:
            data = json.loads(path.read_text())
            pid = int(path.name.split(".", 1)[0])
            token = str(data["peerToken"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        try:
            rank = 2 if proc_start(pid) == data.get("procStart") else 1
        except (OSError, ValueError, IndexError):
            rank = 0
        if best is None or rank > best[0]:
            best = (rank, token)
    return best[1] if best else None


# ---------------------------------------------------------------- where sockets live


def socket_dir() -> Path:
    """The directory Claude Code's sessions bind in by default and accept reply addresses
    in: ``$XDG_RUNTIME_DIR/cc-socks`` or ``/tmp/cc-socks``, private to this user; else
    ``/tmp/cc-socks-{uid}``, as the binary falls back."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    try:
        return ensure_private_dir(Path(base) / "cc-socks")
    except UnsafeRuntimeDir:
        return ensure_private_dir(Path(f"/tmp/cc-socks-{os.getuid()}"))


def new_socket_path() -> Path:
    """A fresh address in :func:`socket_dir` (``/tmp/cc-socks-{uid}`` if that would be over
    the binary's length limit, as it falls back), named as the binary accepts a reply
    address there (up to 16 hex digits)."""
    name = f"{secrets.token_hex(8)}.sock"
    path = socket_dir() / name
    if not socket_path_fits(path):
        path = ensure_private_dir(Path(f"/tmp/cc-socks-{os.getuid()}")) / name
    return path


def is_private_socket(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()


# ---------------------------------------------------------------- what a receiver accepts


def mode_class(permission_mode: str) -> Mode:
    """Claude Code's two classes: a session that bypasses permission prompts, and the rest."""
    return "bypass" if permission_mode == "bypassPermissions" else "prompting"


def _setting(path: Path) -> Any:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data.get("crossSessionInbound") if isinstance(data, dict) else None


def _project_dirs(cwd: Path) -> list[Path]:
    """The cwd and, up to the repository root above it, where project settings may be."""
    out = [cwd]
    for parent in cwd.parents:
        if (parent / ".git").exists():
            out.append(parent)
            break
    return out


def inbound_policy(config_dir: Path, cwd: Path, flag: Mapping[str, Any] | None = None) -> str | None:
    """The ``crossSessionInbound`` a session with this config dir, cwd and ``--settings``
    would apply: accept, hold, refuse, or None (not set: modes decide). A value that is not
    one of the three counts as hold, as the binary treats an invalid setting."""
    policy = [_setting(p) for p in sorted(POLICY_DIR.glob("managed-settings.d/*.json"))]
    policy.append(_setting(POLICY_DIR / "managed-settings.json"))
    first = [*policy, (flag or {}).get("crossSessionInbound"), _setting(config_dir / "settings.json")]
    value = next((v for v in first if v is not None), None)
    for folder in _project_dirs(cwd):
        for name in ("settings.local.json", "settings.json"):
            stricter = _setting(folder / ".claude" / name)
            if stricter is not None and _RANK.get(stricter, 1) > _RANK.get(value or "accept", 1):
                value = stricter
    if value is not None and value not in _RANK:
        return "hold"
    return str(value) if value is not None else None


def accepts_at_once(policy: str | None, receiver: Mode, sender: Mode | None) -> bool:
    """True if the receiver delivers the message without holding or refusing it."""
    if policy is not None:
        return policy == "accept"
    if sender is not None:
        return sender == receiver
    return receiver == "prompting"


def messaging_on(env: Mapping[str, str]) -> bool:
    """Claude Code's own switch (``CLAUDE_CODE_HARBOR_KITE``): off refuses every message."""
    value = env.get("CLAUDE_CODE_HARBOR_KITE")
    return value is None or value.strip().lower() not in ("0", "false", "no", "off", "")


def socket_path_fits(path: Path) -> bool:
    return len(str(path).encode()) <= MAX_SOCKET_PATH
