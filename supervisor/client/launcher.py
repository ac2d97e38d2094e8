"""Start a team's supervisor detached, find it, and wait for it to go."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from ipc import control
from ipc.control import running_pid
from ipc.errors import AgentTeamsError, Conflict, InvalidInput, NotRunning, SupervisorError
from ipc.launch import SupervisorOptions
from ipc.osproc import pidfd_open
from ipc.paths import TeamPaths

START_TIMEOUT = 30.0


def supervisor_pid(paths: TeamPaths) -> int | None:
    """The pid of the team's running supervisor, or None (see :func:`ipc.control.running_pid`)."""
    runtime = paths.existing_runtime_dir()
    return None if runtime is None else running_pid(runtime)


def start(paths: TeamPaths, options: SupervisorOptions) -> subprocess.Popen[bytes]:
    """Start the daemon in its own session, logging to the runtime dir; return once it serves."""
    running = supervisor_pid(paths)
    if running is not None:
        raise Conflict(
            f"team {paths.team!r} is already up (supervisor pid {running}); 'agentteams down {paths.team}' first"
        )
    paths.runtime_dir()  # made 0700 (and checked) before the log goes in
    read_end, write_end = os.pipe()
    with open(paths.log(), "ab") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "supervisor.daemon",
                "--root",
                str(paths.root),
                "--team",
                paths.team,
                "--ready-fd",
                str(write_end),
                *options.to_argv(),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            pass_fds=(write_end,),
        )
    os.close(write_end)
    try:
        line = _read_line(read_end, START_TIMEOUT)
    finally:
        os.close(read_end)
    if line.startswith("ok"):
        return proc
    proc.wait(5)
    detail = (
        line.removeprefix("error ").strip()
        or f"it exited with {proc.returncode}; see 'agentteams logs {paths.team}'"
    )
    raise SupervisorError(f"the supervisor of {paths.team!r} did not start: {detail}")


def _read_line(fd: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


def wait_gone(pid: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """Wait for ``pid`` to exit (reaping it if it is our child). Exited is gone: a zombie
    its parent has not reaped yet (an init slow to reap, a Python program that started the
    team and has not waited) does not count, so a pidfd, not a poll for the pid, says when."""
    if proc is not None and proc.pid == pid:
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    fd = pidfd_open(pid)
    if fd is None:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def require_running(paths: TeamPaths) -> int:
    pid = supervisor_pid(paths)
    if pid is None:
        raise NotRunning(f"team {paths.team!r} is not up; start it with 'agentteams up {paths.team}'")
    return pid


def stop(paths: TeamPaths, grace: float, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Ask the team's supervisor to go down (its teammates by the protocol first, ``grace``
    seconds each); signal it if it cannot be asked, kill it if it has not gone within
    ``timeout``. Only this host's runtime files are needed: a team whose engine is away or
    refuses us stops all the same."""
    if not 0 <= grace <= 86400:  # NaN too: the supervisor would be handed it as a deadline
        raise InvalidInput(f"a grace of {grace:g} seconds; give 0 to 86400 (a day)")
    pid = supervisor_pid(paths)
    if pid is None:
        return
    try:
        client = control.ControlClient(paths.runtime_dir())
        try:
            client.call(control.Down(id=control.new_id(), grace=grace), timeout=timeout)
        finally:
            client.close()
    except AgentTeamsError:
        if pid > 0:
            os.kill(pid, signal.SIGTERM)
    if pid > 0 and not wait_gone(pid, timeout, proc):
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 5, proc)
