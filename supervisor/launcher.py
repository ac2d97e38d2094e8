"""Start a team's supervisor detached, find it, and wait for it to go."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

from ipc.control import running_pid
from ipc.errors import Conflict, NotRunning, SupervisorError
from ipc.launch import SupervisorOptions
from ipc.paths import TeamPaths

START_TIMEOUT = 30.0


def supervisor_pid(paths: TeamPaths) -> int | None:
    """The pid of the team's running supervisor, or None (see :func:`ipc.control.running_pid`)."""
    return running_pid(paths.runtime_dir())


def start(paths: TeamPaths, options: SupervisorOptions) -> subprocess.Popen[bytes]:
    """Start the daemon in its own session, logging to the runtime dir; return once it serves."""
    running = supervisor_pid(paths)
    if running is not None:
        raise Conflict(
            f"team {paths.team!r} is already up (supervisor pid {running}); 'agentteams down {paths.team}' first"
        )
    runtime = paths.runtime_dir()
    read_end, write_end = os.pipe()
    with open(runtime / "supervisor.log", "ab") as log:
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
        or f"it exited with {proc.returncode}; see {runtime / 'supervisor.log'}"
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
    """Wait for ``pid`` to exit (reaping it if it is our child)."""
    if proc is not None and proc.pid == pid:
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    import psutil  # here, not at the top: most commands never wait for a supervisor

    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


def require_running(paths: TeamPaths) -> int:
    pid = supervisor_pid(paths)
    if pid is None:
        raise NotRunning(f"team {paths.team!r} is not up; start it with 'agentteams up {paths.team}'")
    return pid
