"""The fault matrix: SIGKILL at each step, a stopped teammate, a full disk, corrupt files."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import time
from pathlib import Path

import psutil
import pytest

from ipc import CorruptFile, Mailbox, StorageError, TaskList, TeamConfigStore, storage
from supervisor import Team
from tests.runtime_helpers import running_team, wait_for, wait_for_gone


def test_kill_9_of_claimers_mid_claim_never_double_claims(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(40):
        tl.create(f"t{i}")
    rng = random.Random(7)
    for _ in range(40):
        pids = []
        for agent in ("alice", "bob"):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - child
                try:
                    while TaskList(root, team).claim_next(agent) is not None:
                        pass
                finally:
                    os._exit(0)
            pids.append(pid)
        time.sleep(rng.uniform(0, 0.01))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    tasks = tl.list()
    assert len(tasks) == 40 and tl.problems == []
    for task in tasks:
        assert (task.status, task.owner_name is None) in {("pending", True), ("in_progress", False)}


def test_kill_9_of_the_fork_server_keeps_teammates_and_spawning_working(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        forkserver = team.status().forkserver or 0
        alice = team.status().teammates[0].pid or 0
        os.kill(forkserver, signal.SIGKILL)
        wait_for(lambda: team.status().forkserver is None)
        assert psutil.pid_exists(alice)  # teammates are the supervisor's children, not the fork server's
        assert team.spawn("bob", prompt="p") == "bob"  # through a new fork server
        assert team.status().forkserver not in (None, forkserver)
        task = team.tasks.create("after", metadata={"command": "true"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=20)


def test_a_teammate_that_ignores_sigterm_is_killed_after_the_grace_period(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        pid = team.status().teammates[0].pid or 0
        os.kill(pid, signal.SIGSTOP)  # a stopped process answers nothing and takes no SIGTERM
        started = time.monotonic()
        result = team.shutdown("alice", force=True, grace=0.5)
        assert result.stopped and result.exit == "signal 9"
        assert time.monotonic() - started < 15
        assert wait_for_gone({pid}) == []


def test_a_commanded_stop_is_never_undone_by_the_restart_policy(root: Path) -> None:
    with running_team(root, restart="on-failure") as team:
        team.spawn("alice", prompt="p")
        team.tasks.create("busy", metadata={"command": "sleep 60"})
        team.wake("*")
        wait_for(lambda: team.ps().teammates[0].children)
        team.shutdown("alice", force=True, grace=0.3)  # exits by signal, not by choice
        time.sleep(1.5)
        assert team.status().teammates == [] and team.member("alice") is None
        assert [e.restarting for e in team.events()] == [False]


def test_a_full_disk_gives_a_clear_error_and_keeps_the_previous_state(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    task = tl.create("kept")
    before = {p: p.read_bytes() for p in (root / "tasks" / team).glob("*.json")}

    def no_space(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    storage.set_write_hook(no_space)
    try:
        with pytest.raises(StorageError, match="disk full.*previous version is intact"):
            tl.update(task.id, subject="lost")
        with pytest.raises(StorageError, match="disk full"):
            tl.create("lost")
        with pytest.raises(StorageError, match="disk full"):
            TeamConfigStore(root, team).add_member("carol")
    finally:
        storage.set_write_hook(None)
    assert {p: p.read_bytes() for p in (root / "tasks" / team).glob("*.json")} == before
    assert [m.name for m in TeamConfigStore(root, team).read().members] == ["team-lead", "alice", "bob"]
    assert not list((root / "tasks" / team).glob(".*.tmp"))


@pytest.mark.skipif(os.getuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_really_full_tmpfs(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    if os.system(f"mount -t tmpfs -o size=64k tmpfs {mount} 2>/dev/null") != 0:
        pytest.skip("this sandbox cannot mount a tmpfs")
    try:
        store = TeamConfigStore(mount, "t")
        store.create()
        store.add_member("alice")
        mb = Mailbox(mount, "t", "alice")
        with pytest.raises(StorageError, match="disk full"):
            for i in range(10_000):
                mb.append(sender="team-lead", text=f"{i} " + "x" * 500)
        kept = mb.read()  # the last good version, parseable
        assert kept and kept[-1].text.startswith(str(len(kept) - 1))
    finally:
        os.system(f"umount {mount}")


@pytest.mark.parametrize("content", ['[{"from": "bob", "text": "tor', "not json at all", '{"an": "object"}'])
def test_a_corrupt_inbox_is_quarantined_and_the_team_keeps_working(root: Path, content: str) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        wait_for(lambda: team.status().teammates[0].state == "idle")
        inbox = root / "teams" / "t" / "inboxes" / "alice.json"
        inbox.write_text(content)
        team.send("alice", "still there?", summary="ping")
        wait_for(lambda: [m for m in team.inbox("team-lead").history() if "still there" in m.text])
        kept = list(inbox.parent.glob("alice.json.corrupt-*"))
        assert len(kept) == 1 and kept[0].read_text() == content


def test_one_bad_entry_among_good_ones_blocks_nothing(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        wait_for(lambda: team.status().teammates[0].state == "idle")
        inbox = root / "teams" / "t" / "inboxes" / "alice.json"
        entries = json.loads(inbox.read_text())
        entries.append({"from": 7, "text": None})
        inbox.write_text(json.dumps(entries))
        team.send("alice", "after the bad one", summary="ping")
        wait_for(lambda: [m for m in team.inbox("team-lead").history() if "after the bad one" in m.text])
        assert {"from": 7, "text": None} in json.loads(inbox.read_text())  # kept, not deleted


def test_a_corrupt_task_file_is_reported_by_name_and_the_rest_keep_going(root: Path) -> None:
    with running_team(root) as team:
        bad = team.tasks.create("will be corrupted")
        (root / "tasks" / "t" / f"{bad.id}.json").write_text('{"id": "1", "subject": 5')
        good = team.tasks.create("fine", metadata={"command": "true"})
        team.spawn("alice", prompt="p")
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(good.id).status == "completed", timeout=20)
        with pytest.raises(CorruptFile, match=f"{bad.id}.json"):
            team.tasks.get(bad.id)
        assert (root / "tasks" / "t" / f"{bad.id}.json").read_text() == '{"id": "1", "subject": 5'


def test_a_corrupt_config_is_a_one_line_error_naming_the_file(root: Path) -> None:
    Team.create("t", root=root)
    config = root / "teams" / "t" / "config.json"
    config.write_text('{"name": "t", "members": "nope"}')
    with pytest.raises(CorruptFile) as info:
        Team.open("t", root=root)
    assert str(config) in str(info.value) and "\n" not in str(info.value)


def test_a_team_delete_of_a_half_deleted_team_works(root: Path, team: str) -> None:
    store = TeamConfigStore(root, team)
    for name in ("alice", "bob"):
        store.remove_member(name)
    (root / "tasks" / team).rename(root / "gone")  # as if a crash removed tasks/ first
    store.delete()
    assert not (root / "teams" / team).exists()
    assert not (root / "tasks" / team).exists() and (root / "gone").exists()
