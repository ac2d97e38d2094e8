"""Semantics the peer programs' own tests hold, ported: claude-code-teams-mcp's task list
(a team that does not exist, status rules, completed edges) and agent-team-mail's inbox
entries (``content`` for ``text``), and a team another tool made (its colours)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc import Conflict, Mailbox, NotFound, TaskList, TeamConfigStore
from supervisor import Team

# ---------------------------------------------------------------- a team that does not exist


def test_the_python_api_refuses_tasks_of_a_team_that_does_not_exist(root: Path) -> None:
    with pytest.raises(NotFound, match="team 'ghost' does not exist"):
        TaskList(root, "ghost").create("Sub", "desc")
    with pytest.raises(NotFound, match="team 'ghost' does not exist"):
        TaskList(root, "ghost").list()
    with pytest.raises(NotFound, match="team 'ghost' does not exist"):
        Team("ghost", root=root).tasks.create("Sub")
    assert not (root / "tasks").exists()  # and nothing was made on the way


def test_a_task_list_without_a_team_config_is_still_read(root: Path) -> None:
    # Claude Code keeps a session's own task list in tasks/{session} with no team beside it.
    (root / "tasks" / "session-1").mkdir(parents=True)
    (root / "tasks" / "session-1" / "1.json").write_text(
        json.dumps(
            {"id": "1", "subject": "s", "description": "", "status": "pending", "blocks": [], "blockedBy": []}
        )
    )
    tl = TaskList(root, "session-1")
    assert [t.id for t in tl.list()] == ["1"]
    assert tl.create("another").id == "2"


# ---------------------------------------------------------------- status rules


def test_a_task_cannot_start_while_a_blocker_is_open(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    blocker, task = tl.create("Blocker"), tl.create("Blocked")
    tl.update(task.id, add_blocked_by=[blocker.id])
    with pytest.raises(Conflict, match=r"task #2 is blocked by #1 \(pending\)"):
        tl.update(task.id, status="in_progress")
    assert tl.get(task.id).status == "pending"
    tl.update(blocker.id, status="completed")
    assert tl.update(task.id, status="in_progress").status == "in_progress"  # type: ignore[union-attr]


def test_a_task_whose_blocker_was_deleted_can_start(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    blocker, task = tl.create("Blocker"), tl.create("Blocked")
    tl.update(task.id, add_blocked_by=[blocker.id])
    tl.update(blocker.id, status="deleted")
    assert tl.update(task.id, status="in_progress").status == "in_progress"  # type: ignore[union-attr]


def test_a_completed_task_does_not_go_back_to_in_progress(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    task = tl.create("Sub")
    tl.update(task.id, status="in_progress")
    tl.update(task.id, status="completed")
    with pytest.raises(Conflict, match=r"task #1 is completed; .*\(set it to pending to reopen it\)"):
        tl.update(task.id, status="in_progress")
    assert tl.get(task.id).status == "completed"
    assert tl.update(task.id, status="pending").status == "pending"  # type: ignore[union-attr]


def test_a_failed_task_can_still_be_retried(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    task = tl.create("Sub")
    tl.claim(task.id, "alice")
    tl.release_owner("alice", error="Exit code 1")
    assert tl.get(task.id).failed
    retried = tl.update(task.id, status="in_progress", owner="alice")
    assert retried is not None and retried.status == "in_progress"


def test_completing_a_task_keeps_what_it_blocked(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    t1, t2 = tl.create("A"), tl.create("B")
    tl.update(t1.id, add_blocks=[t2.id])
    tl.update(t1.id, status="completed")
    assert tl.get(t1.id).blocks == [t2.id]  # the record of the edge, as Claude Code keeps it
    assert tl.get(t2.id).blocked_by == []  # and the dependent is free
    assert tl.claim(t2.id, "alice").success
    tl.delete(t2.id)
    assert tl.get(t1.id).blocks == []  # a delete leaves no reference behind


def test_a_reopened_task_does_not_block_work_that_went_ahead(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    t1, t2 = tl.create("A"), tl.create("B")
    tl.update(t2.id, add_blocked_by=[t1.id])
    tl.update(t1.id, status="completed")
    tl.update(t1.id, status="pending")
    assert tl.get(t1.id).blocks == [] and tl.get(t2.id).blocked_by == []


# ---------------------------------------------------------------- other writers' shapes


def test_an_entry_with_content_instead_of_text_is_a_message(root: Path, team: str) -> None:
    box = Mailbox(root, team, "alice")
    box.append(sender="team-lead", text="first")
    entries = json.loads(box.path.read_text())
    entries.append({"from": "bob", "content": "Legacy content key", "timestamp": "2026-02-11T14:30:00.000Z"})
    box.path.write_text(json.dumps(entries, indent=2))
    assert [m.text for m in box.unread()] == ["first", "Legacy content key"]
    box.mark_all_read()
    assert box.unread() == []
    assert json.loads(box.path.read_text())[1]["content"] == "Legacy content key"  # kept as written


def test_colours_continue_past_those_another_tool_gave(root: Path) -> None:
    store = TeamConfigStore(root, "other")
    store.create()
    config = json.loads(store.path.read_text())
    for name, color in (("a", "blue"), ("b", "green")):
        config["members"].append(
            {
                "agentId": f"{name}@other",
                "name": name,
                "color": color,
                "joinedAt": 0,
                "cwd": "/",
                "subscriptions": [],
            }
        )
    store.path.write_text(json.dumps(config, indent=2))
    assert store.add_member("c").color == "yellow"
    assert store.add_member("d").color == "purple"
