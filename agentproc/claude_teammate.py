"""A Claude Code teammate (the ``claude-code`` backend): this process runs the real ``claude`` CLI with Claude
Code's teammate flags in a pseudo-terminal, and stands for it toward the supervisor.

Claude Code does its own work: it polls its inbox (once a second), claims tasks, answers a
shutdown request and exits. This process starts it once it is sure it runs, keeps its
screen (as text) in the teammate's log, and takes its whole process tree down when it is
stopped: it is a child subreaper, so nothing ``claude`` starts can slip out from under it,
and ``claude`` gets SIGKILL from the kernel if this process dies first.

A release with a messaging socket of its own (2.1.330 and later) is started listening in
the team's runtime directory, and this process runs its courier
(:mod:`agentproc.claude_courier`): a message handed to it reaches ``claude`` through that
socket at once, not at the next poll. Not in the user's own ``~/.claude``, where that would
mean writing Claude Code settings and keys into it: there the poll alone delivers.

In a tmux pane (``--backend tmux``) Claude Code's screen is also the pane's, and what a
person types there is its input (:class:`agentproc.pane.Relay`); the log takes the text.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pty
import re
import selectors
import signal
import struct
import sys
import termios
import time
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from agentproc import pane
from agentproc.channel import Channel
from agentproc.claude_courier import ClaudeSocket, Courier
from ipc import cc_registry, claude_code, locks
from ipc.config import TeamConfigStore
from ipc.errors import AgentTeamsError, StorageError
from ipc.launch import LaunchSpec
from ipc.locks import locked
from ipc.osproc import pidfd_open, set_child_subreaper, set_parent_death_signal
from ipc.schemas import LEAD_NAME
from ipc.storage import atomic_write, read_bytes
from ipc.wake import socket_path

ROWS, COLUMNS = 50, 200
STARTED_AFTER = 2.0  # s alive (or first output) before it counts as started
SOCKET_WAIT = 30.0  # s for claude to bind its socket and publish its key
STOP_GRACE = 1.5  # s for claude to exit on SIGTERM before its tree is killed
LOG_CAP = 1 << 20  # bytes of screen text written to the teammate's log
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r")


def seed_config(root: Path, cwd: str, env: dict[str, str]) -> None:
    """Answer Claude Code's first-run questions in a root agentteams owns (onboarding done,
    ``cwd`` trusted, this API key accepted), keeping every other setting. The user's own
    ``~/.claude`` is never touched: there, Claude Code asks them itself."""
    if claude_code.is_users_home(root):
        return
    path = root / ".claude.json"
    try:
        with locked(path, root=root):
            data: dict[str, Any] = json.loads(read_bytes(path) or b"{}")
            data.setdefault("hasCompletedOnboarding", True)
            data.setdefault("theme", "dark")
            data["bypassPermissionsModeAccepted"] = True
            projects = data.setdefault("projects", {})
            projects.setdefault(cwd, {}).update(
                hasTrustDialogAccepted=True, hasCompletedProjectOnboarding=True
            )
            key = env.get("ANTHROPIC_API_KEY", "")
            if key:
                answers = data.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
                if key[-20:] not in answers.setdefault("approved", []):
                    answers["approved"].append(key[-20:])
            atomic_write(path, json.dumps(data, indent=2).encode())
    except (OSError, ValueError, AttributeError) as exc:
        raise StorageError(f"cannot prepare Claude Code's settings in {path}: {exc}") from exc


class Screen:
    """Claude Code's terminal output as text: into the teammate log (up to a cap), with the
    last lines kept for a start-up error."""

    def __init__(self, log: Any) -> None:
        self.log = log  # a binary stream: stdout (the log) hidden, stderr (the log) in a pane
        self.written = 0
        self.tail = b""

    def feed(self, data: bytes) -> None:
        text = _ANSI.sub(b"", data)
        self.tail = (self.tail + text)[-4096:]
        if self.written < LOG_CAP:
            self.log.write(text)
            self.log.flush()
            self.written += len(text)

    def last_line(self) -> str:
        lines = [ln.strip() for ln in self.tail.decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""


class ClaudeTeammate:
    def __init__(self, spec: LaunchSpec, channel: Channel, *, in_pane: bool = False) -> None:
        self.spec = spec
        self.channel = channel
        self.in_pane = in_pane
        self.config = TeamConfigStore.at(spec.team_paths())  # claude rewrites it in place: see repair_torn
        self.relay: pane.Relay | None = None  # in a pane: the pane's terminal, lent to claude
        self.screen = Screen(sys.stderr.buffer if in_pane else sys.stdout.buffer)
        self.pid = 0
        self.master = -1
        self.socket: Path | None = None  # claude's own socket, when it has one
        self.socket_since = 0.0
        self.courier: Courier | None = None

    def _wants_socket(self, env: dict[str, str], found: tuple[int, int, int] | None) -> bool:
        root = Path(self.spec.root)
        return (
            self.spec.wake == "zmq"  # in poll mode, Claude Code's own behaviour: the inbox poll alone
            and not claude_code.is_users_home(root)
            and cc_registry.messaging_on(env)
            and claude_code.has_socket(found)
        )

    def _start(self) -> None:
        env = claude_code.environment(self.spec, dict(os.environ))
        lead = TeamConfigStore.at(self.spec.team_paths()).config_member(LEAD_NAME)
        lead_key = lead.verify_key if lead is not None and isinstance(lead.verify_key, str) else None
        found = claude_code.version(claude_code.command())
        extra = claude_code.lead_key_flags(found, lead_key)  # it verifies what the lead signs
        if self._wants_socket(env, found):
            self.socket = socket_path(self.spec.team_paths().runtime_dir(), self.spec.agent_name, "m")
            self.socket.unlink(missing_ok=True)
            extra += claude_code.socket_flags(self.socket)
            locks.note_claude_root(Path(self.spec.root))
        argv = claude_code.argv(self.spec, extra)
        seed_config(Path(self.spec.root), self.spec.cwd, env)
        pid, master = pty.fork()
        if pid == 0:  # the child: become claude
            try:
                set_parent_death_signal(signal.SIGKILL)
                os.chdir(self.spec.cwd)
                os.execvpe(argv[0], argv, env)
            except OSError as exc:
                os.write(2, f"cannot run {argv[0]}: {exc.strerror}\n".encode())
            os._exit(127)
        self.pid, self.master = pid, master
        self.socket_since = time.monotonic()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        if self.in_pane:
            self.relay = pane.Relay(master)  # the pane's size, its keys, Claude Code's screen in it

    def _open_courier(self) -> None:
        """Once claude listens and has published its token, hand messages to it."""
        assert self.socket is not None
        config_dir = Path(self.spec.root).resolve()
        token = cc_registry.token_for(config_dir, self.socket) if self.socket.exists() else None
        if token is None:
            if time.monotonic() - self.socket_since > SOCKET_WAIT:
                print(f"[agentteams] {self.socket} did not come up; the inbox poll delivers", file=sys.stderr)
                self.socket = None
            return
        receiver = cc_registry.mode_class(self.spec.permission_mode)
        policy = cc_registry.inbound_policy(config_dir, Path(self.spec.cwd), claude_code.ACCEPT_SETTINGS)
        claude = ClaudeSocket(path=self.socket, token=token, pid=self.pid, receiver=receiver, policy=policy)
        try:
            self.courier = Courier(self.spec, claude, on_held=self._withdraw_held)
        except (AgentTeamsError, OSError) as exc:
            print(f"[agentteams] no courier ({exc}); the inbox poll delivers", file=sys.stderr)
            self.socket = None

    def _withdraw_held(self) -> None:
        """Answer Claude Code's held-message dialog with its default, Deny."""
        with contextlib.suppress(OSError):
            os.write(self.master, b"\r")

    def _read_screen(self) -> bool:
        """Take what claude wrote; False once its terminal has closed."""
        try:
            data = os.read(self.master, 65536)
        except OSError as exc:
            if exc.errno == errno.EIO:
                return False
            raise
        self.screen.feed(data)
        if self.relay is not None:
            self.relay.show(data)
        return bool(data)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        """Stopped (by the supervisor, or its death): claude first, gently, then everything
        it started; then the team's config, which claude rewrites in place, is repaired if it
        was killed in the middle of that (from a copy read just before); then, if the
        supervisor is gone, the pane id cleared (not before: claude's writes would undo it)."""
        store = self.config
        with contextlib.suppress(AgentTeamsError):
            store.read()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    break
            time.sleep(0.02)
        for proc in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        with contextlib.suppress(AgentTeamsError):
            store.repair_torn()
        pane.leave_if_orphaned(store)  # now that claude cannot write over it
        if self.courier is not None:
            self.courier.withdraw()
        if self.relay is not None:
            self.relay.restore()
        os._exit(128 + signum)

    def _close_courier(self) -> None:
        if self.courier is not None:
            self.courier.close()
            self.courier = None

    def run(self) -> int:
        set_child_subreaper()
        signal.signal(signal.SIGTERM, self._stop)
        if self.in_pane:
            signal.signal(signal.SIGHUP, self._stop)  # the pane closed (its tmux server died)
        self._start()
        exited = pidfd_open(self.pid)
        selector = selectors.DefaultSelector()
        selector.register(self.master, selectors.EVENT_READ, "screen")
        if self.relay is not None:
            selector.register(0, selectors.EVENT_READ, "keys")
        if exited is not None:
            selector.register(exited, selectors.EVENT_READ, "exit")
        started_at = time.monotonic()
        announced = False
        status: int | None = None
        while status is None:
            waiting = self.socket is not None and self.courier is None
            for key, _ in selector.select(timeout=0.05 if waiting else 0.5):
                if key.data == "screen" and not self._read_screen():
                    selector.unregister(self.master)
                elif key.data == "keys" and self.relay is not None and not self.relay.typed():
                    selector.unregister(0)
                elif key.data == "exit":
                    status = os.waitpid(self.pid, 0)[1]
            if not announced and status is None and time.monotonic() - started_at >= STARTED_AFTER:
                self.channel.hello(self.spec.agent_name, os.getpid())  # it runs: the spawn succeeded
                announced = True
            if waiting and status is None:
                self._open_courier()
            self.channel.wait(0)  # a ring means a message was appended: claude polls, or the courier took it
            with contextlib.suppress(AgentTeamsError):
                self.config.read()  # a fresh copy to repair from (decoded only when it changed)
        with contextlib.suppress(AgentTeamsError):
            self.config.repair_torn()  # claude may exit (or be killed) in the middle of rewriting it in place
        self._close_courier()
        with contextlib.suppress(OSError):
            while self._read_screen():
                pass
        if self.relay is not None:
            self.relay.restore()
        code = os.waitstatus_to_exitcode(status)
        if not announced:
            reason = self.screen.last_line() or f"it exited with {code}"
            raise AgentTeamsError(f"Claude Code did not start: {reason}")
        return code if code >= 0 else 128 - code
