"""Other users: private state and runtime directories, and a client running as nobody."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from ipc import control
from ipc.errors import UnsafeRuntimeDir
from ipc.paths import TeamPaths
from supervisor import Team
from tests.runtime_helpers import running_team


def modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
        for p in root.rglob("*")
        if not p.is_symlink()
    }


def test_state_is_private_whatever_the_umask(root: Path) -> None:
    old = os.umask(0)
    try:
        team = Team.create("t", root=root, cwd=str(root))
        team.store.add_member("alice")
        team.send("alice", "hi", summary="hi")
        team.tasks.create("x")
    finally:
        os.umask(old)
    for path, mode in modes(root).items():
        expected = 0o700 if (root / path).is_dir() else 0o600
        assert mode == expected, f"{path} has mode {mode:o}"


def test_the_runtime_dir_and_sockets_are_private(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        runtime = team.paths.runtime_dir()
        assert stat.S_IMODE(runtime.stat().st_mode) == 0o700
        for sock in runtime.glob("*.sock"):
            assert stat.S_IMODE(sock.stat().st_mode) == 0o600


def test_a_runtime_dir_open_to_others_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "xdg"
    (base / "agentteams").mkdir(parents=True)
    (base / "agentteams").chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    with pytest.raises(UnsafeRuntimeDir, match="must be 700"):
        TeamPaths(tmp_path / "r", "t").runtime_dir()


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.skipif(
    os.getuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
    reason="needs root, setpriv and /usr/bin/python3 to run a client as the user nobody",
)
def test_another_user_can_neither_connect_nor_read(tmp_path: Path) -> None:
    root = tmp_path / "root"  # tmp_path itself is 0700 root: open the way to the root dir only
    root.mkdir()
    for parent in (tmp_path, *tmp_path.parents):
        if parent != Path("/"):  # let nobody walk to the root: only our own modes may stop it
            parent.chmod(parent.stat().st_mode | 0o011)
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        sock = control.control_path(team.paths.runtime_dir())
        connect = as_nobody(
            "/usr/bin/python3",
            "-c",
            f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(sock)!r})",
        )
        assert connect.returncode != 0 and "PermissionError" in connect.stderr
        config = root / "teams" / "t" / "config.json"
        read = as_nobody("/usr/bin/python3", "-c", f"open({str(config)!r}).read()")
        assert read.returncode != 0 and "PermissionError" in read.stderr
        listing = as_nobody("/usr/bin/python3", "-c", f"import os; os.listdir({str(root / 'teams')!r})")
        assert listing.returncode != 0 and "PermissionError" in listing.stderr
        assert team.status().teammates[0].state in ("idle", "running")
