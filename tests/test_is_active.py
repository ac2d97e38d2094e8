"""``isActive`` as Claude Code keeps it: true while a teammate works on a turn, false once it
is idle; whether it is alive is the supervisor's to say, as ``ps`` and the member listing do."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from ipc import operations as io
from ipc.config import TeamConfigStore
from ipc.schemas import LEAD_NAME
from supervisor import Team
from supervisor.client.operations import list_members
from tests.runtime_helpers import running_team, wait_for


def is_active(root: Path, name: str) -> object:
    """What config.json itself says (absent: None)."""
    config = json.loads((root / "teams" / "t" / "config.json").read_text())
    return next(m for m in config["members"] if m["name"] == name).get("isActive")


def listed_alive(team: Team, name: str) -> bool | None:
    members = list_members(team, io.NoInput(), LEAD_NAME).members
    return next(m for m in members if m.name == name).active


def works_then_idles(team: Team, root: Path) -> None:
    go = root / "go"
    team.spawn("alice", prompt="")
    wait_for(lambda: team.status().teammates[0].state == "idle")
    assert wait_for(lambda: is_active(root, "alice") is False)
    assert listed_alive(team, "alice") is True  # idle, not gone
    task = team.tasks.create("wait", metadata={"command": f"while [ ! -e {go} ]; do sleep 0.05; done"})
    team.wake("*")
    wait_for(lambda: team.tasks.get(task.id).status == "in_progress")
    assert wait_for(lambda: is_active(root, "alice") is True)
    assert listed_alive(team, "alice") is True
    go.touch()
    wait_for(lambda: team.tasks.get(task.id).status == "completed")
    assert wait_for(lambda: is_active(root, "alice") is False and team.status().teammates[0].state == "idle")
    # Idle and still alive, wherever one looks.
    assert listed_alive(team, "alice") is True
    mate = team.ps().teammates[0]
    assert mate.name == "alice" and mate.pid is not None


@pytest.mark.parametrize("mode", ["process", "in-process"])
def test_is_active_while_working_false_once_idle_and_alive_all_along(root: Path, mode: str) -> None:
    with running_team(root, teammate_mode=mode) as team:
        works_then_idles(team, root)


@pytest.mark.tmux
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_teammate_in_a_tmux_pane_marks_itself_too(root: Path) -> None:
    server = f"at-test-{secrets.token_hex(4)}"
    try:
        with running_team(root, teammate_mode="tmux", tmux_server=server) as team:
            works_then_idles(team, root)
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, timeout=10)
        socket_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (socket_dir / server).unlink(missing_ok=True)


def test_set_active_writes_only_a_change(root: Path) -> None:
    store = TeamConfigStore(root, "t")
    store.create()
    store.add_member("alice")
    path = root / "teams" / "t" / "config.json"
    store.add_member("bob")
    assert store.set_active({"alice": True, "bob": True}) == ["alice", "bob"]
    assert [m["isActive"] for m in json.loads(path.read_text())["members"][1:]] == [True, True]
    written = path.stat().st_mtime_ns, path.stat().st_ino
    assert store.set_active({"alice": True}) == []  # already so: nothing written
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == written
    assert store.set_active({"alice": False, "bob": True}) == ["alice"]
    assert store.set_active({"nobody": True}) == []
