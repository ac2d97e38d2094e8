"""The completed prefix: hot paths cost what is open, not the history, and a task a peer
reopens behind the prefix is found again by the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc import TaskList, task_window
from ipc.schemas import Task


def _complete_all(tl: TaskList, n: int) -> None:
    for task in tl.create_many([(f"t{i}", "", None, None, []) for i in range(n)]):
        tl.update(task.id, status="completed")


def test_hot_paths_read_only_past_the_completed_prefix(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tl = TaskList(root, team)
    _complete_all(tl, 300)
    open_task = tl.create("still open")
    assert tl.find_claimable() == open_task
    assert tl.window.through == 300
    assert set(tl._cache) <= {open_task.id}  # completed history is not held in memory

    reads: list[str] = []
    real = tl._read

    def counted(task_id: str) -> Task:
        reads.append(task_id)
        return real(task_id)

    monkeypatch.setattr(tl, "_read", counted)
    assert tl.claim_next("alice") is not None
    assert tl.release_owner("alice") == [open_task.id]
    assert reads and set(reads) == {open_task.id}
    assert len(tl.list()) == 301  # the full listing still has everything


def test_a_task_reopened_behind_the_prefix_is_found_by_the_sweep(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tl = TaskList(root, team)
    _complete_all(tl, 5)
    assert tl.find_claimable() is None and tl.window.through == 5
    path = root / "tasks" / team / "2.json"
    task = json.loads(path.read_text())
    path.write_text(json.dumps({**task, "status": "pending"}, indent=2))  # a peer, in place
    monkeypatch.setattr(task_window, "SWEEP_EVERY", 0.0)
    found = tl.find_claimable()
    assert found is not None and found.id == "2"
    assert tl.window.through == 1


def test_new_ids_follow_files_a_peer_created_without_the_mark(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    _complete_all(tl, 3)
    assert tl.find_claimable() is None
    peer = TaskList(root, team)
    peer.create("from a peer")
    (root / "tasks" / team / ".highwatermark").unlink()
    assert tl.create("ours").id == "5"
    assert [t.subject for t in tl.window.live()] == ["from a peer", "ours"]


def test_a_task_this_process_reopens_is_seen_at_once(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    _complete_all(tl, 4)
    assert tl.find_claimable() is None and tl.window.through == 4
    tl.update("3", status="pending")
    found = tl.find_claimable()
    assert found is not None and found.id == "3"
