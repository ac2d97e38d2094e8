"""The completed prefix: hot paths cost what is open, not the history, and a task a peer
reopens behind the prefix is found again by the sweep."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ipc import TaskList, task_window
from ipc.schemas import Task


def _complete_all(tl: TaskList, n: int) -> None:
    for task in tl.create_many([(f"t{i}", "", None, None, []) for i in range(n)]):
        tl.update(task.id, status="completed")


def _swept(tl: TaskList, monkeypatch: pytest.MonkeyPatch) -> None:
    """Have ``tl`` look twice with a sweep each time: the second writes the shared hint."""
    monkeypatch.setattr(task_window, "SWEEP_EVERY", 0.0)
    tl.find_claimable()
    tl.find_claimable()
    monkeypatch.setattr(task_window, "SWEEP_EVERY", 30.0)


def _counting_reads(tl: TaskList, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = tl._read

    def counted(task_id: str) -> Task:
        reads.append(task_id)
        return real(task_id)

    monkeypatch.setattr(tl, "_read", counted)
    return reads


def _reopen_by_peer(root: Path, team: str, task_id: str) -> None:
    """A peer sets a completed task back to pending, rewriting its file in place."""
    path = root / "tasks" / team / f"{task_id}.json"
    task = json.loads(path.read_text())
    path.write_text(json.dumps({**task, "status": "pending"}, indent=2))


def test_hot_paths_read_only_past_the_completed_prefix(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tl = TaskList(root, team)
    _complete_all(tl, 300)
    open_task = tl.create("still open")
    assert tl.find_claimable() == open_task
    assert tl.window.through == 300
    assert set(tl._cache) <= {open_task.id}  # completed history is not held in memory
    assert [tl.get(str(n)).status for n in (1, 150, 300)] == ["completed"] * 3
    assert set(tl._cache) | set(tl._paths) <= {open_task.id}  # nor its paths, once read again

    reads = _counting_reads(tl, monkeypatch)
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
    _reopen_by_peer(root, team, "2")
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


def test_a_new_process_starts_from_the_shared_prefix_not_the_history(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = TaskList(root, team)
    _complete_all(first, 200)
    _swept(first, monkeypatch)
    assert (root / "tasks" / team / task_window.HINT).exists()
    open_task = first.create("still open")

    fresh = TaskList(root, team)  # a restarted teammate, a CLI command
    reads = _counting_reads(fresh, monkeypatch)
    assert fresh.find_claimable() == open_task
    assert reads == [open_task.id] and fresh.window.through == 200


def test_a_task_reopened_after_the_hint_is_found_by_a_new_process(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = TaskList(root, team)
    _complete_all(first, 6)
    _swept(first, monkeypatch)
    _reopen_by_peer(root, team, "3")

    fresh = TaskList(root, team)
    monkeypatch.setattr(task_window, "SWEEP_EVERY", 0.0)  # its first sweep falls due
    found = fresh.find_claimable()
    assert found is not None and found.id == "3"


def test_a_hint_from_before_a_reset_or_a_change_of_its_task_is_not_trusted(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = TaskList(root, team)
    _complete_all(first, 5)
    _swept(first, monkeypatch)
    tasks = root / "tasks" / team
    for name in [*(f"{n}.json" for n in range(1, 6)), ".highwatermark"]:
        (tasks / name).unlink()  # a peer resets the list, keeping files it does not know
    again = TaskList(root, team)
    made = again.create_many([(f"new {i}", "", None, None, []) for i in range(6)])
    assert [t.id for t in made] == ["1", "2", "3", "4", "5", "6"]
    assert [t.subject for t in TaskList(root, team).window.live()] == [f"new {i}" for i in range(6)]

    _swept(again, monkeypatch)  # no hint: nothing is completed
    for task in made[:2]:
        again.update(task.id, status="completed")
    _swept(again, monkeypatch)
    assert again.window.through == 2
    again.update("2", description="changed since the hint")  # its file is not the one named
    fresh = TaskList(root, team)
    assert fresh.window.through == 0


def test_one_sweep_per_interval_for_the_team_not_one_per_process(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = TaskList(root, team), TaskList(root, team)
    _complete_all(first, 10)
    _swept(first, monkeypatch)
    listed: list[Path] = []
    real = task_window.task_ids

    def listing(directory: Path) -> list[int]:
        listed.append(directory)
        return real(directory)

    monkeypatch.setattr(task_window, "task_ids", listing)
    second.window._swept = -1e9  # its own sweep is long overdue: the fresh hint stands for it
    second.find_claimable()
    assert listed == [] and second.window.through == 10


def test_the_hint_does_not_bring_back_a_deleted_task_list(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tl = TaskList(root, team)
    _complete_all(tl, 3)
    tl.find_claimable()
    shutil.rmtree(root / "tasks" / team)
    tl.window._write_hint()
    assert not (root / "tasks" / team).exists()
