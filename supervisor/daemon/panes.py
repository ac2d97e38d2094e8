"""The tmux backend: teammates that run in tmux panes, still supervised.

A pane's process is the tmux server's child, not ours, so it is watched otherwise: by a
pidfd (readable when it exits), and its exit status is read from the pane, which tmux keeps
for us (``remain-on-exit``) until we respawn the teammate in it (a restart stays in its
pane, with its pane id) or kill it (the teammate left the team, failed, or the team went
down). Its tools are killed with it, by session, as for any teammate.

Where a pane goes: beside the caller's pane when the team was brought up inside tmux (the
first teammate to its right, the others stacked under it), else in a detached session
``agentteams-{team}-{digest of the root}`` that ``agentteams attach`` opens. Every pane is
tagged with its team (and root) and agent, so a supervisor that starts after one was killed
finds and removes what it left.
A teammate whose supervisor dies closes its own pane (see the teammate's side).
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ipc import key_handover
from ipc.launch import LaunchSpec, SupervisorOptions
from ipc.osproc import kill_session, pidfd_open
from ipc.storage import atomic_write, read_bytes
from ipc.tmux import AGENT_OPTION, TEAM_OPTION, Tmux, TmuxError, session_name, socket_file, team_tag
from supervisor.daemon.inprocess import InProcess
from supervisor.daemon.processes import Processes
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")
TEAMMATE_MODULE = "agentproc"
EXIT_UNKNOWN = 1 << 8  # the pane went with its status (closed by a person, or the server died)
STATUS_TRIES = 50  # looks at a dead pane's status, 20 ms apart: tmux reaps it after we hear of it
_NOT_PASSED = {"TMUX", "TMUX_PANE", "TERM", "COLUMNS", "LINES"}  # the pane's own


def _server(runtime: Path, given: str, beside: str) -> str:
    """The tmux server of the team's panes: the one ``up`` was given, remembered with the
    team, so a later ``up`` without it resumes (and sweeps) them there, not on the default
    server, which is the one a person works in. Beside the caller's pane (``up`` inside
    tmux), the caller's server."""
    remembered = runtime / "tmux-server"
    if given:
        atomic_write(remembered, given.encode())
    elif beside:
        remembered.unlink(missing_ok=True)
    else:
        given = (read_bytes(remembered) or b"").decode()
    return given


@dataclass
class Pane:
    pane_id: str
    pid: int
    pidfd: int | None = None


class Panes:
    def __init__(
        self,
        reactor: Reactor,
        team: str,
        runtime: Path,
        options: SupervisorOptions,
        log_path: Callable[[LaunchSpec], Path],
    ) -> None:
        self.reactor = reactor
        self.team = team
        self.runtime = runtime
        self.options = options
        self.log_path = log_path
        # Set by the supervisor: the exit of a teammate, as if reaped; whether it is to run
        # again (its pane waits for it); a pane closed.
        self.on_exit: Callable[[int, int], None] = lambda pid, status: None
        self.runs_again: Callable[[str], bool] = lambda name: False
        self.closed: Callable[[str], None] = lambda name: None
        self.tmux = Tmux(_server(runtime, options.tmux_server, beside=options.tmux_pane))
        self.by_name: dict[str, Pane] = {}
        self.by_pid: dict[int, str] = {}

    # ------------------------------------------------------------ what the rest asks

    def owns(self, pid: int) -> bool:
        return pid in self.by_pid

    def pane_id(self, name: str) -> str:
        pane = self.by_name.get(name)
        return pane.pane_id if pane is not None else ""

    def start(self, spec: LaunchSpec, key: bytes | None = None) -> int:
        """Start ``spec`` in its pane: the one it had (a restart), else a new one."""
        argv = self._command(spec, key)
        try:
            return self._start(spec, argv)
        except Exception:  # no teammate will read them: its environment and key go now
            for path in self._handed(spec):
                path.unlink(missing_ok=True)
            raise

    def _start(self, spec: LaunchSpec, argv: list[str]) -> int:
        pane = self.by_name.get(spec.agent_name)
        if pane is not None and not self.tmux.pane_exists(pane.pane_id):
            self.close(spec.agent_name)  # gone (its server died): its id too, whether a new one comes or not
            pane = None
        if pane is not None:
            self.tmux.run("respawn-pane", "-k", "-t", pane.pane_id, "-c", self._cwd(spec), *argv)
            pid = int(self.tmux.query(pane.pane_id, "#{pane_pid}") or 0)
        else:
            pane_id, pid = self._new_pane(spec, argv)
            pane = Pane(pane_id=pane_id, pid=pid)
            self.by_name[spec.agent_name] = pane
            self._tag(pane_id, spec)
        if pid <= 0:
            raise TmuxError(f"tmux started no process in pane {pane.pane_id}")
        pane.pid = pid
        self.by_pid[pid] = spec.agent_name
        pane.pidfd = pidfd_open(pid)
        if pane.pidfd is None:
            self.reactor.call_later(0, lambda: self._exited(spec.agent_name, pid, 0))
        else:
            fd = pane.pidfd
            self.reactor.add_reader(fd, lambda: self._exited(spec.agent_name, pid, 0))
        log.info("%s runs in tmux pane %s (pid %d)", spec.agent_name, pane.pane_id, pid)
        return pid

    def close(self, name: str) -> None:
        """The teammate is not coming back to its pane: the pane goes."""
        pane = self.by_name.pop(name, None)
        if pane is None:
            return
        self._unwatch(pane)
        self.tmux.kill_pane(pane.pane_id)
        self.closed(name)

    def close_all(self) -> None:
        for name in list(self.by_name):
            self.close(name)
        for path in (self.runtime / "panes").glob("*.*"):  # handed to a teammate that never read them
            path.unlink(missing_ok=True)

    def sweep(self) -> None:
        """Remove the panes a supervisor of this team left behind (it was killed)."""
        for pane_id, agent in self.tmux.panes_tagged(team_tag(self.runtime)):
            log.info("removing tmux pane %s of %s, left by an earlier supervisor", pane_id, agent)
            self.tmux.kill_pane(pane_id)

    # ------------------------------------------------------------ starting

    def _cwd(self, spec: LaunchSpec) -> str:
        return spec.cwd if os.path.isdir(spec.cwd) else str(self.runtime)

    def _handed(self, spec: LaunchSpec) -> tuple[Path, Path]:
        """The private files a pane's teammate is handed: its environment, its key."""
        folder = self.runtime / "panes"
        return folder / f"{spec.agent_name}.env", folder / f"{spec.agent_name}.key"

    def _command(self, spec: LaunchSpec, key: bytes | None) -> list[str]:
        """``sh -c`` that loads the teammate's environment from a private file (never on a
        command line: it may hold an API key) and becomes the teammate, its log taking
        what it writes to stderr; what it prints is the pane's. Its private key is a file
        of its own, which it reads and removes (never in its environment: ipc.key_handover)."""
        env_file, key_file = self._handed(spec)
        env_file.parent.mkdir(mode=0o700, exist_ok=True)
        env = {**os.environ, **spec.to_env()}
        if key is not None:
            atomic_write(key_file, key)  # 0600
            env[key_handover.KEY_FILE_ENV] = str(key_file)
        lines = [
            f"{name}={shlex.quote(value)}\n"
            for name, value in env.items()
            if name not in _NOT_PASSED and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
        ]
        atomic_write(env_file, "".join(lines).encode())
        teammate = shlex.join([sys.executable, "-m", TEAMMATE_MODULE, *spec.to_argv()])
        log_file = shlex.quote(str(self.log_path(spec)))
        # Read once, then removed: it may hold an API key (a restart writes it again).
        source = shlex.quote(str(env_file))
        script = f"umask 077; set -a; . {source}; set +a; rm -f {source}; exec {teammate} 2>>{log_file}"
        return ["/bin/sh", "-c", script]

    def _new_pane(self, spec: LaunchSpec, argv: list[str]) -> tuple[str, int]:
        fmt = ["-P", "-F", "#{pane_id} #{pane_pid}"]
        cwd = ["-c", self._cwd(spec)]
        beside = self.options.tmux_pane
        out = ""
        if beside and self.tmux.pane_exists(beside):
            ours = [p.pane_id for p in self.by_name.values() if self.tmux.pane_exists(p.pane_id)]
            try:
                if ours:  # stacked under the last teammate's pane
                    out = self.tmux.run("split-window", "-v", "-d", "-t", ours[-1], *fmt, *cwd, *argv)
                else:  # the first to the right of the caller's
                    out = self.tmux.run(
                        "split-window", "-h", "-d", "-l", "70%", "-t", beside, *fmt, *cwd, *argv
                    )
            except TmuxError as exc:
                log.warning(
                    "no room beside pane %s (%s); using session %s", beside, exc.message, self._session
                )
        if not out:
            out = self._in_own_session(fmt, cwd, argv)
        pane_id, pid = out.split()
        return pane_id, int(pid)

    @property
    def _session(self) -> str:
        return session_name(self.runtime)

    def _in_own_session(self, fmt: list[str], cwd: list[str], argv: list[str]) -> str:
        session = self._session
        if self.tmux.query(f"={session}:", "#{session_name}") != session:
            out = self.tmux.run(
                "new-session", "-d", "-s", session, "-x", "200", "-y", "50", *fmt, *cwd, *argv
            )
            self._remember_server()
            return out
        try:
            out = self.tmux.run("split-window", "-d", "-t", f"={session}:", *fmt, *cwd, *argv)
        except TmuxError:  # the window is full: a new one
            out = self.tmux.run("new-window", "-d", "-t", f"={session}:", *fmt, *cwd, *argv)
        self.tmux.run("select-layout", "-t", f"={session}:", "tiled")
        return out

    def _remember_server(self) -> None:
        """Which server the team's session is on, for ``agentteams attach``."""
        path = self.tmux.query(f"={self._session}:", "#{socket_path}")
        if path:
            atomic_write(socket_file(self.runtime), path.encode())

    def _tag(self, pane_id: str, spec: LaunchSpec) -> None:
        for option, value in (
            ("remain-on-exit", "on"),  # its exit status stays for us to read, and a restart reuses it
            (TEAM_OPTION, team_tag(self.runtime)),
            (AGENT_OPTION, spec.agent_name),
        ):
            self.tmux.run("set-option", "-p", "-t", pane_id, option, value)
        self.tmux.run("select-pane", "-t", pane_id, "-T", f"{spec.agent_name}@{self.team}")
        if self.options.tmux_pane:
            self._remember_server()

    # ------------------------------------------------------------ exits

    def _unwatch(self, pane: Pane) -> None:
        if pane.pidfd is not None:
            self.reactor.remove_reader(pane.pidfd)
            os.close(pane.pidfd)
            pane.pidfd = None
        self.by_pid.pop(pane.pid, None)

    def _exited(self, name: str, pid: int, tries: int) -> None:
        """The teammate in pane ``name`` exited: its tools go, then the supervisor hears its
        wait status (as if it had reaped it), read from the dead pane."""
        pane = self.by_name.get(name)
        if pane is None or pane.pid != pid:
            return
        if tries == 0:
            self._unwatch(pane)
            kill_session(pid)  # its tools: the session outlives its leader while they run
        fields = self.tmux.query(pane.pane_id, "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}")
        dead, code, signum = (fields.split(":") + ["", ""])[:3] if fields else ("", "", "")
        known = dead == "1" and (code.isdigit() or signum.isdigit())
        if fields is not None and not known and tries < STATUS_TRIES:
            self.reactor.call_later(0.02, lambda: self._exited(name, pid, tries + 1))
            return
        if not known:
            status = EXIT_UNKNOWN
            log.warning("%s's pane %s gave no exit status; taken as exit 1", name, pane.pane_id)
        elif signum.isdigit():
            status = int(signum)  # killed by that signal
        else:
            status = int(code) << 8
        self.on_exit(pid, status)
        if not self.runs_again(name):  # it left, failed, or the team went down
            self.close(name)


class Backends:
    """The supervisor's one :class:`~supervisor.daemon.child.ProcessSeam` over every way a
    teammate of ours runs: in a pane (tmux), as a thread of the team's host (in-process), or
    as a process of its own (everything else). A pane's teammate is signalled by its pid like
    a process; an in-process teammate by its number, through its host."""

    def __init__(self, processes: Processes, panes: Panes, threads: InProcess) -> None:
        self.processes = processes
        self.panes = panes
        self.threads = threads
        # A new private key per start, its public half already in the config (ipc.trust):
        # set by the supervisor (TeamFiles.issue_key).
        self.issue_key: Callable[[LaunchSpec], bytes | None] = lambda spec: None

    def start(self, spec: LaunchSpec) -> int:
        key = self.issue_key(spec)
        if spec.backend == "in-process":
            return self.threads.start(spec, key)
        return self.panes.start(spec, key) if spec.backend == "tmux" else self.processes.start(spec, key)

    def signal(self, pid: int, sig: int) -> None:
        if self.threads.owns(pid):
            self.threads.signal(pid, sig)
        else:
            self.processes.signal(pid, sig)

    def kill_tree(self, pid: int) -> None:
        if self.threads.owns(pid):
            self.threads.signal(pid, signal.SIGKILL)
        else:
            self.processes.kill_tree(pid)

    def startup_error(self, spec: LaunchSpec) -> str:
        return self.processes.startup_error(spec)

    def handle(self, spec: LaunchSpec, pid: int) -> str:
        """What ``tmuxPaneId`` says: the pane's id, ``in-process:{host pid}``, or ``process:{pid}``."""
        if spec.backend == "in-process":
            return self.threads.handle(spec)
        return self.panes.pane_id(spec.agent_name) if spec.backend == "tmux" else f"process:{pid}"
