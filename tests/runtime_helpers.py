"""Helpers for tests that start real supervisors and teammates."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import psutil

from supervisor import Team

AGENTTEAMS = [sys.executable, "-m", "supervisor.cli"]


def cli(
    root: Path,
    *args: str,
    ok: bool | None = True,
    stdin: str | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``agentteams ARGS --root ROOT``, run from ``cwd`` (default ROOT). ``ok``: it must
    succeed; ``ok=False``: it must fail with one line and no traceback; ``ok=None``: whatever
    it does."""
    result = subprocess.run(
        [*AGENTTEAMS, *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(cwd or root),
        input=stdin,
    )
    if ok:
        assert result.returncode == 0, result.stderr
    elif ok is False:
        assert result.returncode != 0, result.stdout
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, (
            result.stderr
        )
    return result


def team_pids(team: Team) -> list[int]:
    """Every pid of the team's tree right now: supervisor, fork server, resident door, lead,
    teammates, their tools."""
    tree = team.ps()
    pids = [p.pid for p in (tree.supervisor, tree.forkserver, tree.door, tree.lead) if p is not None]
    for mate in tree.teammates:
        if mate.pid:
            pids.append(mate.pid)
        pids.extend(c.pid for c in mate.children)
    return pids


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def wait_for(predicate: Any, timeout: float = 20.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def whole_bytes(path: Path, timeout: float = 5.0) -> bytes:
    """The bytes of ``path`` once they parse as JSON: Claude Code rewrites its files in place,
    so a reader beside a live ``claude`` may catch one empty or half written for a moment."""

    def parsed() -> list[bytes]:
        data = path.read_bytes()
        with contextlib.suppress(json.JSONDecodeError):
            json.loads(data)
            return [data]
        return []

    return cast(bytes, wait_for(parsed, timeout)[0])


def whole_json(path: Path, timeout: float = 5.0) -> Any:
    return json.loads(whole_bytes(path, timeout))


@contextlib.contextmanager
def running_team(root: Path, name: str = "t", **up: Any) -> Iterator[Team]:
    """A created, started team; on exit it is brought down and nothing of it may survive."""
    team = Team.create(name, root=root, cwd=str(root))
    team.up(**up)
    seen: set[int] = set()
    try:
        yield team
        with contextlib.suppress(Exception):
            seen.update(team_pids(team))
    finally:
        with contextlib.suppress(Exception):
            seen.update(team_pids(team))
        team.down(grace=2)
        leftover = wait_for_gone(seen)
        for pid in leftover:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not leftover, f"processes left running: {leftover}"


def wait_for_gone(pids: set[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = alive(sorted(pids))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def processes_under(root: Path) -> list[int]:
    """Live processes of the team state under ``root``: supervisors and leads (``--root`` in
    their command line), fork servers, teammates, subagents and their tools (its
    ``AGENTTEAMS_ROOT`` in their environment)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if str(root) in " ".join(proc.info["cmdline"] or []) or proc.environ().get(
                "AGENTTEAMS_ROOT"
            ) == str(root):
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def nothing_left_under(root: Path, timeout: float = 10.0) -> None:
    """Wait for every process of ``root`` to be gone; kill and fail if some stay."""
    deadline = time.monotonic() + timeout
    while (left := processes_under(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left running: {left}"


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes: equal before and after means nothing changed."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def git(cwd: Path, *args: str) -> str:
    """``git -C cwd ARGS`` as a user with a name; its output."""
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    done = subprocess.run(
        ["git", *env_args, "-C", str(cwd), *args], check=True, capture_output=True, text=True
    )
    return done.stdout


def git_repo(path: Path, files: dict[str, str]) -> Path:
    """A repository at ``path`` whose one commit, on main, holds ``files``."""
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path
