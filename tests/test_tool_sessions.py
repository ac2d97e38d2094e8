"""An in-process teammate's tool sessions (agentproc.tool_sessions), with real processes: a
leader whose session something still runs in is kept unreaped, so its number (the session's
id) is never another's; the end takes what runs, in whatever process group."""

from __future__ import annotations

import os
import subprocess

from agentproc.tool_sessions import ToolSessions
from ipc.osproc import session_members
from tests.runtime_helpers import alive

JOB = "set -m; sleep 600 >/dev/null & echo $!; exit 3"  # a job in a process group of its own


def test_a_leader_is_kept_while_its_job_runs_and_the_end_takes_the_job() -> None:
    sessions = ToolSessions()
    told: list[tuple[int, bool]] = []
    sessions.report = lambda sid, running: told.append((sid, running))
    proc = sessions.start(["/bin/bash", "-c", JOB], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    sleeper = int(proc.communicate(timeout=10)[0])  # its output, not its exit: never reaped by Popen
    assert sessions.exit_code(proc, 10) == 3
    assert os.getsid(sleeper) == proc.pid and os.getpgid(sleeper) == sleeper
    sessions.settle()
    assert proc.pid in sessions.leaders, "its job runs: the leader's number is held"
    assert os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None  # a zombie
    sessions.end(grace=5)
    assert not alive([sleeper]) and not session_members({proc.pid})
    assert not sessions.leaders and told == [(proc.pid, True), (proc.pid, False)]


def test_a_session_with_nothing_left_is_reaped_at_once() -> None:
    sessions = ToolSessions()
    proc = sessions.start(["/bin/bash", "-c", "exit 0"], stdin=subprocess.DEVNULL)
    assert sessions.exit_code(proc, 10) == 0
    sessions.settle()
    assert not sessions.leaders
    assert sessions.exit_code(proc, 0) == 0, "still said once reaped"
    sessions.end()


def test_a_killed_session_is_reported_by_signal() -> None:
    sessions = ToolSessions()
    proc = sessions.start(["/bin/bash", "-c", "set -m; sleep 600 & wait"], stdin=subprocess.DEVNULL)
    try:
        sessions.exit_code(proc, 0.05)
        raise AssertionError("it runs")
    except subprocess.TimeoutExpired:
        pass
    sessions.kill(proc)
    assert sessions.exit_code(proc, 10) == -9
    sessions.settle()
    assert not sessions.leaders, "its job died with it"
    sessions.end()
