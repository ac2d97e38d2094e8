from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from ipc import TeamConfigStore
from ipc.paths import remove_runtime_dirs

# A pytest started in the background (``&`` in a script) inherits Ctrl-C as ignored, and so would
# every command the tests start; the tests that press Ctrl-C need it delivered.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Never touch the user's ~/.agentteams; a private runtime dir per test.
    monkeypatch.setenv("AGENTTEAMS_HOME", str(tmp_path / "home"))
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield
    _kill_leftovers(tmp_path)
    remove_runtime_dirs(tmp_path)  # those that fell back to /tmp/agentteams-{uid} (a long path)


def _kill_leftovers(tmp_path: Path) -> None:
    """A safety net for failing tests: supervisors, fork servers and agents of this test's
    roots (their command lines carry ``--root`` under tmp_path, or their environment
    ``AGENTTEAMS_ROOT``, as a lead agent's does) must not outlive it."""
    marker = f"--root {tmp_path}"
    for proc in psutil.process_iter(["pid", "cmdline", "environ"]):
        root = (proc.info.get("environ") or {}).get("AGENTTEAMS_ROOT", "")
        ours = marker in " ".join(proc.info.get("cmdline") or []) or root.startswith(str(tmp_path))
        if ours and proc.pid != os.getpid():
            for sig in (signal.SIGCONT, signal.SIGKILL):  # a stopped process ignores the rest
                try:
                    os.kill(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture
def team(root: Path) -> str:
    store = TeamConfigStore(root, "demo")
    store.create("a test team", cwd=str(root))
    for name in ("alice", "bob"):
        store.add_member(name, prompt=f"you are {name}", cwd=str(root))
    return "demo"


def pids_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


@pytest.fixture
def fake_api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """For agents on the fake Messages API (tests.agent_helpers.serve): a key, and no retries
    (its answers are scripted: a retry would only replay one)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "0")


@pytest.fixture
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: the user's settings, agents and CLAUDE.md are read from it
    (and an API key is set, as the user's shell would)."""
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return home
