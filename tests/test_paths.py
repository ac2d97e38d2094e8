from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

from ipc.errors import InvalidInput, UnsafeRuntimeDir
from ipc.leftovers import temp_path
from ipc.locks import claude_lock_path
from ipc.paths import (
    TeamPaths,
    color_for,
    ensure_private_dir,
    normalise_agent_name,
    normalise_team_name,
    permission_request_id,
    plan_request_id,
    request_epoch_ms,
    resolve_root,
    shutdown_request_id,
)


def test_root_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_root(tmp_path / "x") == tmp_path / "x"
    monkeypatch.setenv("AGENTTEAMS_HOME", str(tmp_path / "env"))
    assert resolve_root(None) == tmp_path / "env"
    monkeypatch.delenv("AGENTTEAMS_HOME")
    assert resolve_root(None) == Path.home() / ".agentteams"


def test_claude_code_normalisation() -> None:
    assert normalise_team_name("My Team!") == "my-team-"
    assert normalise_agent_name("worker_1.x") == "worker_1-x"


@pytest.mark.parametrize(
    "hostile",
    ["../../etc/passwd", "/abs/path", "a\x00b", "..", "ａｌｉｃｅ-1", "a/../../b", "\u2215etc"],
)
def test_hostile_names_stay_inside_their_directory(tmp_path: Path, hostile: str) -> None:
    try:
        paths = TeamPaths(tmp_path, hostile)
        inbox = paths.inbox(hostile)
    except InvalidInput:
        return  # refused outright is fine too
    for path in (paths.team_dir, inbox, paths.tasks_dir):
        assert path.resolve().is_relative_to(tmp_path.resolve())
    assert inbox.parent == paths.inboxes
    assert "/" not in inbox.name and "\x00" not in inbox.name


@pytest.mark.parametrize("bad", ["", "   ", "x" * 10_000, "...", "！！"])
def test_unusable_names_are_refused_with_one_line(bad: str) -> None:
    with pytest.raises(InvalidInput) as info:
        normalise_agent_name(bad)
    assert "\n" not in str(info.value)


def test_task_ids_must_be_numbers(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        TeamPaths(tmp_path, "t").task("../1")


@pytest.mark.skipif(not hasattr(Path, "_make_child_relpath"), reason="no unparsed child in this pathlib")
def test_a_task_file_name_is_not_interned(tmp_path: Path) -> None:
    """A name per task kept out of the interpreter's table of interned strings, which would
    otherwise rebuild itself larger as tasks come and go (a lasting step in the supervisor)."""
    task_id = str(secrets.randbelow(10**11) + 10**11)  # a name no other test has made
    path = TeamPaths(tmp_path, "t").task(task_id)
    assert path == tmp_path / "tasks" / "t" / f"{task_id}.json"
    for made in (path, temp_path(path), claude_lock_path(path)):  # its file, its temp, its lock
        fresh = "".join([made.name[:3], made.name[3:]])  # equal to the name, a separate object
        assert sys.intern(fresh) is fresh, f"{made.name} was interned"


def test_color_cycle() -> None:
    assert [color_for(i) for i in range(9)] == [
        "blue",
        "green",
        "yellow",
        "purple",
        "orange",
        "pink",
        "cyan",
        "red",
        "blue",
    ]


def test_request_id_formats() -> None:
    assert shutdown_request_id("w", 5) == "shutdown-5@w"
    assert plan_request_id("w", "t", 7) == "plan_approval-7@w@t"
    perm = permission_request_id(9)
    assert perm.startswith("perm-9-") and len(perm.split("-")[2]) == 7
    assert request_epoch_ms("shutdown-123@x") == 123
    assert request_epoch_ms("nonsense") is None


def test_runtime_dir_is_private(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = ensure_private_dir(tmp_path / "rt")
    finally:
        os.umask(old)
    assert made.stat().st_mode & 0o777 == 0o700


def test_runtime_dir_open_to_others_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "open"
    target.mkdir()
    target.chmod(0o755)
    with pytest.raises(UnsafeRuntimeDir, match="chmod 700"):
        ensure_private_dir(target)


def test_runtime_dir_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UnsafeRuntimeDir):
        ensure_private_dir(tmp_path / "link")


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to create a directory owned by another uid")
def test_runtime_dir_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "theirs"
    target.mkdir(mode=0o700)
    os.chown(target, 65534, 65534)
    with pytest.raises(UnsafeRuntimeDir, match="owned by uid 65534"):
        ensure_private_dir(target)


def test_the_public_surface_is_what_ipc_exports() -> None:
    import ipc

    for name in ipc.__all__:
        assert getattr(ipc, name) is not None, name
    assert set(ipc.__all__) >= {"Mailbox", "TaskList", "TeamConfigStore", "AgentTeamsError", "LaunchSpec"}
