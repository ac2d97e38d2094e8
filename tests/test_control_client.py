"""The control client against a supervisor that goes away before it answers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ipc import control
from ipc.errors import NotRunning

SILENT = """
import fcntl, os, sys, time, zmq
runtime = sys.argv[1]
fd = os.open(os.path.join(runtime, "supervisor.lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)  # as the supervisor holds it for its whole life
socket = zmq.Context().socket(zmq.ROUTER)
socket.bind("ipc://" + os.path.join(runtime, "control.sock"))
print("ready", flush=True)
time.sleep(300)  # takes every request, answers none
"""


def test_a_call_to_a_supervisor_killed_before_it_answers_ends_at_once(tmp_path: Path) -> None:
    # The call waited out its whole timeout (60 s for a subagent's start): a lead whose
    # supervisor was killed under it sat in a tool call for a minute.
    silent = subprocess.Popen(
        [sys.executable, "-c", SILENT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert silent.stdout is not None and silent.stdout.readline().strip() == "ready"
        client = control.ControlClient(tmp_path)
        threading.Timer(0.5, silent.kill).start()
        started = time.monotonic()
        with pytest.raises(NotRunning, match="the supervisor ended before it answered status"):
            client.call(control.Status(id=control.new_id()), timeout=60)
        assert time.monotonic() - started < 10
        client.close()
    finally:
        silent.kill()
        silent.wait()
