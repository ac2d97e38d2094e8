"""A Claude Code teammate (SPEC §13): this process runs the real ``claude`` CLI with Claude
Code's teammate flags in a pseudo-terminal, and stands for it toward the supervisor.

Claude Code does its own work: it polls its inbox (every 500 ms), claims tasks, answers a
shutdown request and exits. This process starts it once it is sure it runs, keeps its
screen (as text) in the teammate's log, and takes its whole process tree down when it is
stopped: it is a child subreaper, so nothing ``claude`` starts can slip out from under it,
and ``claude`` gets SIGKILL from the kernel if this process dies first.
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

from agentproc.channel import Channel
from ipc import claude_code
from ipc.errors import AgentTeamsError, StorageError
from ipc.launch import LaunchSpec
from ipc.locks import locked
from ipc.osproc import pidfd_open, set_child_subreaper, set_parent_death_signal
from ipc.storage import atomic_write, read_bytes

ROWS, COLUMNS = 50, 200
STARTED_AFTER = 2.0  # s alive (or first output) before it counts as started
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

    def __init__(self) -> None:
        self.written = 0
        self.tail = b""

    def feed(self, data: bytes) -> None:
        text = _ANSI.sub(b"", data)
        self.tail = (self.tail + text)[-4096:]
        if self.written < LOG_CAP:
            sys.stdout.buffer.write(text)
            sys.stdout.flush()
            self.written += len(text)

    def last_line(self) -> str:
        lines = [ln.strip() for ln in self.tail.decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1][:300] if lines else ""


class ClaudeTeammate:
    def __init__(self, spec: LaunchSpec, channel: Channel) -> None:
        self.spec = spec
        self.channel = channel
        self.screen = Screen()
        self.pid = 0
        self.master = -1

    def _start(self) -> None:
        env = claude_code.environment(self.spec, dict(os.environ))
        argv = claude_code.argv(self.spec)
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
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))

    def _read_screen(self) -> bool:
        """Take what claude wrote; False once its terminal has closed."""
        try:
            data = os.read(self.master, 65536)
        except OSError as exc:
            if exc.errno == errno.EIO:
                return False
            raise
        self.screen.feed(data)
        return bool(data)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        """Stopped (by the supervisor, or its death): claude first, gently, then everything
        it started."""
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
        os._exit(128 + signum)

    def run(self) -> int:
        set_child_subreaper()
        signal.signal(signal.SIGTERM, self._stop)
        self._start()
        exited = pidfd_open(self.pid)
        selector = selectors.DefaultSelector()
        selector.register(self.master, selectors.EVENT_READ, "screen")
        if exited is not None:
            selector.register(exited, selectors.EVENT_READ, "exit")
        started_at = time.monotonic()
        announced = False
        status: int | None = None
        while status is None:
            for key, _ in selector.select(timeout=0.5):
                if key.data == "screen" and not self._read_screen():
                    selector.unregister(self.master)
                elif key.data == "exit":
                    status = os.waitpid(self.pid, 0)[1]
            if not announced and status is None and time.monotonic() - started_at >= STARTED_AFTER:
                self.channel.hello(self.spec.agent_name, os.getpid())  # it runs: the spawn succeeded
                announced = True
            self.channel.wait(0)  # the supervisor's wakes mean nothing to a polling claude
        with contextlib.suppress(OSError):
            while self._read_screen():
                pass
        code = os.waitstatus_to_exitcode(status)
        if not announced:
            reason = self.screen.last_line() or f"it exited with {code}"
            raise AgentTeamsError(f"Claude Code did not start: {reason}")
        return code if code >= 0 else 128 - code
