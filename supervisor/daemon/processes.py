"""The real :class:`~supervisor.children.ProcessSeam`: fork (through the fork server, or a
fresh interpreter), signal, and reap, all of the supervisor's syscalls on processes.

Reaping kills before it reaps: an exited teammate's session (its tools) is killed while its
zombie still holds the pid, so a pid the kernel hands to a stranger is never signalled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import msgspec
import psutil

from ipc import key_handover, trust
from ipc.errors import AgentTeamsError
from ipc.launch import LaunchSpec
from ipc.osproc import kill_session
from supervisor.daemon.forkserver import Spawned, SpawnOrder

log = logging.getLogger("agentteams.supervisor")
TEAMMATE_MODULE = "agentproc.main"  # started by entry point and flags, as `python -m agentproc`
SPAWN_TIMEOUT = 10.0
# Teammates run one step below the supervisor: among a thousand busy teammates it still gets
# the CPU to hand out work and answer ps and status (a real model's teammates mostly wait).
TEAMMATE_NICE = 1


def _lower_priority() -> None:
    os.nice(TEAMMATE_NICE)


class ForkServer:
    """The supervisor's handle on its fork server process."""

    def __init__(self, supervisor_pid: int) -> None:
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [
            sys.executable,
            "-m",
            "supervisor.daemon.forkserver",
            "--fd",
            str(child_end.fileno()),
            "--supervisor-pid",
            str(supervisor_pid),
            "--module",
            TEAMMATE_MODULE,
        ]
        proc = subprocess.Popen(argv, pass_fds=(child_end.fileno(),), stdin=subprocess.DEVNULL)
        proc.returncode = 0  # reaped by the supervisor's own reaper, never through Popen
        child_end.close()
        self.pid = proc.pid
        self.sock = parent_end
        self.sock.settimeout(SPAWN_TIMEOUT)

    def spawn(self, order: SpawnOrder, key_fd: int | None = None) -> int:
        """Start one teammate; ``key_fd`` (a pipe holding its private key) goes along as an
        inherited descriptor, never in the order's bytes."""
        data = msgspec.msgpack.encode(order)
        if key_fd is None:
            self.sock.send(data)
        else:
            socket.send_fds(self.sock, [data], [key_fd])
        reply = msgspec.msgpack.decode(self.sock.recv(65536), type=Spawned)
        if reply.error:
            raise AgentTeamsError(f"the fork server could not start it: {reply.error}")
        return reply.pid

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


class Processes:
    def __init__(
        self,
        runtime: Path,
        *,
        method: str = "forkserver",
    ) -> None:
        self.runtime = runtime
        self.method = method
        self.logs = runtime / "logs"
        self.logs.mkdir(mode=0o700, exist_ok=True)
        self.forkserver: ForkServer | None = None
        self.forkserver_pid: int | None = None

    def _forkserver(self) -> ForkServer | None:
        if self.method != "forkserver":
            return None
        if self.forkserver is None:
            try:
                self.forkserver = ForkServer(os.getpid())
                self.forkserver_pid = self.forkserver.pid
            except OSError as exc:
                log.error("cannot start the fork server (%s); starting teammates as fresh interpreters", exc)
                self.method = "exec"
        return self.forkserver

    def log_path(self, spec: LaunchSpec) -> Path:
        return self.logs / f"{spec.agent_name}.log"

    def start(self, spec: LaunchSpec, key: bytes | None = None) -> int:
        """Start ``spec``; its private ``key`` (:mod:`ipc.trust`) goes through a pipe it inherits."""
        key_fd = key_handover.hand_key(trust.key_from_bytes(key)) if key is not None else None
        try:
            return self._start(spec, key_fd)
        finally:
            if key_fd is not None:
                os.close(key_fd)  # the child has its own copy (or never started)

    def _start(self, spec: LaunchSpec, key_fd: int | None) -> int:
        argv = spec.to_argv()
        env = {**os.environ, **spec.to_env()}
        env.pop(key_handover.KEY_FD_ENV, None)
        cwd = spec.cwd if os.path.isdir(spec.cwd) else str(self.runtime)
        log_file = self.log_path(spec)
        server = self._forkserver()
        if server is not None:
            title = f"{sys.executable} -m agentproc"
            order = SpawnOrder(
                argv=argv, env=env, cwd=cwd, log=str(log_file), title=title, nice=TEAMMATE_NICE
            )
            try:
                return server.spawn(order, key_fd)
            except (OSError, msgspec.DecodeError) as exc:
                log.error("the fork server failed (%s); starting a new one", exc)
                self._drop_forkserver()
                server = self._forkserver()
                if server is not None:
                    return server.spawn(order, key_fd)
        if key_fd is not None:
            env[key_handover.KEY_FD_ENV] = str(key_fd)  # the descriptor's number, not the key
        with open(log_file, "ab") as out:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "agentproc", *argv],
                    env=env,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                    pass_fds=() if key_fd is None else (key_fd,),
                    preexec_fn=_lower_priority,  # noqa: PLW1509 (one syscall; nothing to deadlock on)
                )
            except OSError as exc:
                raise AgentTeamsError(f"cannot start a teammate process: {exc.strerror}") from exc
        proc.returncode = 0  # reaped by our reaper
        return proc.pid

    def _drop_forkserver(self) -> None:
        if self.forkserver is not None:
            self.forkserver.close()
            self.forkserver = None

    def signal(self, pid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    def kill_tree(self, pid: int) -> None:
        """SIGKILL the teammate, its session, and anything below it that left the session
        (a tool that called setsid; a Claude Code teammate's own terminal session)."""
        try:
            below = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            below = []
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        kill_session(pid)
        for proc in below:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()

    def startup_error(self, spec: LaunchSpec) -> str:
        """The last non-empty line the teammate wrote to its log."""
        try:
            with open(self.log_path(spec), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                lines = [
                    line.strip() for line in f.read().decode(errors="replace").splitlines() if line.strip()
                ]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def reap(self) -> list[tuple[int, int]]:
        """(pid, wait status) of every exited child; each teammate's session is killed first."""
        out = []
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            if info is None or info.si_pid == 0:
                break
            pid = info.si_pid
            if pid != self.forkserver_pid:
                kill_session(pid)  # its tools, while its zombie still holds the number
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                continue
            if pid == self.forkserver_pid:
                log.error(
                    "the fork server died (%s); a new one starts with the next spawn",
                    os.waitstatus_to_exitcode(status),
                )
                self.forkserver_pid = None
                if self.forkserver is not None:
                    self.forkserver.sock.close()
                    self.forkserver = None
                continue
            out.append((pid, status))
        return out

    def close(self) -> None:
        if self.forkserver is not None:
            pid = self.forkserver.pid
            self._drop_forkserver()
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
