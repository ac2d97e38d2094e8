"""What every benchmark shares: the machine, percentiles, and a team to measure."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import psutil
import zmq

from ipc import trace
from ipc.mailbox import Mailbox
from ipc.paths import remove_runtime_dirs
from ipc.schemas import InboxMessage
from ipc.storage import atomic_write
from supervisor import Team

percentiles = trace.percentiles


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyzmq": zmq.__version__,
        "libzmq": zmq.zmq_version(),
        "msgspec": msgspec.__version__,
        "filesystem": _filesystem(Path(tempfile.gettempdir())),
    }


def _filesystem(path: Path) -> str:
    best = ""
    fstype = "unknown"
    for part in psutil.disk_partitions(all=True):
        if str(path).startswith(part.mountpoint) and len(part.mountpoint) > len(best):
            best, fstype = part.mountpoint, part.fstype
    return f"{fstype} ({best})"


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="agentteams-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        remove_runtime_dirs(path)  # the teams' sockets and logs, outside the root


@contextlib.contextmanager
def env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def team_of(
    root: Path, teammates: int, model: str = "offline", **up: Any
) -> Iterator[tuple[Team, list[str]]]:
    """A team with ``teammates`` idle teammates; brought down (and its runtime directory
    removed) afterwards."""
    team = Team.create("bench", root=root, cwd=str(root))
    team.up(**up)
    try:
        names = [team.spawn(f"w{i}", prompt="", model=model) for i in range(teammates)]
        wait_idle(team, len(names))
        yield team, names
    finally:
        team.down(grace=2)
        shutil.rmtree(team.paths.runtime_dir(), ignore_errors=True)


def wait_idle(team: Team, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [m.state for m in team.status().teammates]
        if len(states) == count and all(s == "idle" for s in states):
            return
        time.sleep(0.05)
    raise TimeoutError("teammates did not become idle")


def prefill(team: Team, agent: str, count: int) -> None:
    """Give ``agent`` an inbox of ``count`` read messages (~300 bytes each)."""
    if count <= 0:
        return
    mailbox = Mailbox(team.root, team.name, agent)
    messages = [
        InboxMessage(
            from_="team-lead",
            text=f"history {i} " + "x" * 240,
            timestamp="2026-01-01T00:00:00.000Z",
            read=True,
            summary="old",
        )
        for i in range(count)
    ]
    atomic_write(mailbox.path, msgspec.json.format(msgspec.json.encode(messages), indent=2))
