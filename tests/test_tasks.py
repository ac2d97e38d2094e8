from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc import Conflict, InvalidInput, Mailbox, NotFound, TaskList, claim_prompt
from ipc.schemas import TaskAssignment, parse_body
from ipc.task_rules import MAX_DESCRIPTION_BYTES


def test_create_and_ids_never_reused(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    a = tl.create("First", "do it")
    b = tl.create("Second")
    assert (a.id, b.id) == ("1", "2")
    tl.delete("2")
    assert tl.create("Third").id == "3"
    assert (root / "tasks" / team / ".highwatermark").read_text() == "3"
    assert json.loads((root / "tasks" / team / "1.json").read_text()) == {
        "id": "1",
        "subject": "First",
        "description": "do it",
        "status": "pending",
        "blocks": [],
        "blockedBy": [],
    }


def test_list_is_numeric_and_skips_invalid_files(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(11):
        tl.create(f"t{i + 1}")
    (root / "tasks" / team / "5.json").write_text("{not json")
    ids = [t.id for t in tl.list()]
    assert ids == ["1", "2", "3", "4", "6", "7", "8", "9", "10", "11"]
    assert len(tl.problems) == 1 and "5.json" in tl.problems[0]
    assert (root / "tasks" / team / "5.json").exists()


def test_update_merges_and_id_is_immutable(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    t = tl.create("s", metadata={"a": 1})
    updated = tl.update(t.id, subject="new", metadata={"b": 2}, active_form="Doing")
    assert updated is not None and updated.id == "1"
    assert updated.metadata == {"a": 1, "b": 2} and updated.subject == "new"
    with pytest.raises(InvalidInput):
        tl.update(t.id, status="done")
    with pytest.raises(NotFound):
        tl.update("99", subject="x")


def test_dependencies_are_symmetric_and_completion_unblocks(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(4):
        tl.create(f"t{i + 1}")
    tl.update("4", add_blocked_by=["1", "2"])
    tl.update("3", add_blocks=["4"])
    assert tl.get("1").blocks == ["4"] and tl.get("4").blocked_by == ["1", "2", "3"]
    assert tl.claim("4", "alice").reason == "blocked"
    for blocker in ("1", "2", "3"):
        tl.update(blocker, status="completed")
    assert tl.get("4").blocked_by == []
    assert tl.claim("4", "alice").success


def test_cycles_and_missing_ids_are_refused_and_change_nothing(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(3):
        tl.create(f"t{i + 1}")
    tl.update("2", add_blocked_by=["1"])
    tl.update("3", add_blocked_by=["2"])
    before = [tl.get(i) for i in ("1", "2", "3")]
    with pytest.raises(Conflict, match="cycle"):
        tl.update("1", add_blocked_by=["3"])
    with pytest.raises(Conflict, match="itself"):
        tl.update("1", add_blocks=["1"])
    with pytest.raises(NotFound, match="#9"):
        tl.update("1", add_blocks=["9"], subject="changed")
    assert [tl.get(i) for i in ("1", "2", "3")] == before


def test_delete_cleans_every_reference(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(3):
        tl.create(f"t{i + 1}")
    tl.update("2", add_blocked_by=["1"], add_blocks=["3"])
    assert tl.update("2", status="deleted") is None
    assert tl.get("1").blocks == [] and tl.get("3").blocked_by == []
    with pytest.raises(NotFound):
        tl.get("2")


def test_claim_reasons(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(4):
        tl.create(f"t{i + 1}")
    tl.update("3", add_blocked_by=["4"])
    assert tl.claim("9", "alice").reason == "task_not_found"
    assert tl.claim("1", "alice").success
    assert tl.claim("1", "alice").success  # the owner may claim again
    assert tl.claim("1", "bob").reason == "already_claimed"
    assert tl.claim("3", "bob").reason == "blocked"
    assert tl.claim("2", "alice", check_agent_busy=True).reason == "agent_busy"
    tl.update("2", status="completed")
    assert tl.claim("2", "bob").reason == "already_resolved"
    assert tl.get("1").owner == "alice" and tl.get("1").status == "in_progress"


def test_auto_claim_takes_the_lowest_open_unblocked_task(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(3):
        tl.create(f"t{i + 1}", f"details {i + 1}")
    tl.update("1", add_blocks=["2"])
    tl.claim("1", "bob")
    got = tl.claim_next("alice")
    assert got is not None and got.id == "3" and got.owner == "alice"
    assert tl.claim_next("alice") is None
    assert claim_prompt(got) == "Complete all open tasks. Start with task #3:\n\n t3\n\ndetails 3"


def test_setting_owner_sends_a_task_assignment(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    t = tl.create("Review", "look at it")
    tl.update(t.id, owner="bob")
    (message,) = Mailbox(root, team, "bob").unread()
    body = parse_body(message.text)
    assert isinstance(body, TaskAssignment)
    assert (body.task_id, body.subject, body.assigned_by) == ("1", "Review", "team-lead")
    tl.update(t.id, owner="alice", by="alice")  # self-assignment sends nothing
    assert Mailbox(root, team, "alice").unread() == []


def test_the_owner_of_a_task_freed_of_its_last_blocker_is_told_again(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    first, second = tl.create("First"), tl.create("Second")
    later = tl.create("Later", owner="bob", blocked_by=[first.id, second.id])
    Mailbox(root, team, "bob").mark_all_read()
    tl.update(first.id, status="completed", by="alice")
    assert Mailbox(root, team, "bob").unread() == []  # still waits for #2
    tl.update(second.id, status="completed", by="alice")
    (message,) = Mailbox(root, team, "bob").unread()
    body = parse_body(message.text)
    assert isinstance(body, TaskAssignment) and (body.task_id, body.assigned_by) == (later.id, "alice")


def _told(root: Path, team: str, name: str) -> list[str]:
    """The task ids ``name`` was sent assignments for since the last look (marked read)."""
    bodies = [parse_body(m.text) for m in Mailbox(root, team, name).mark_all_read()]
    return [b.task_id for b in bodies if isinstance(b, TaskAssignment)]


def test_an_owner_is_told_once_whichever_way_its_last_blocker_goes(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    a, b, c = (tl.create(s) for s in ("A", "B", "C"))
    waits = [tl.create(f"W{i}", owner="bob", blocked_by=[blocker.id]) for i, blocker in enumerate((a, b, c))]
    _told(root, team, "bob")
    tl.update(a.id, status="completed", by="alice")
    tl.update(a.id, status="completed", by="alice")  # again: it held no one up any more
    tl.update(waits[1].id, remove_blocked_by=[b.id], by="alice")  # the edited task freed itself
    tl.delete(c.id, by="alice")  # its last blocker gone
    assert _told(root, team, "bob") == [waits[0].id, waits[1].id, waits[2].id]


def test_a_notice_that_cannot_be_sent_does_not_undo_the_completion(
    root: Path, team: str, caplog: pytest.LogCaptureFixture
) -> None:
    ready: list[list[str]] = []
    tl = TaskList(root, team, on_ready=lambda ids, rung: ready.append(ids))
    blocker = tl.create("Blocker")
    # bob took it himself (nothing sent then); its assignment would be over a message's limit
    huge = tl.create("Huge", "d" * MAX_DESCRIPTION_BYTES, owner="bob", by="bob", blocked_by=[blocker.id])
    free = tl.create("Free", blocked_by=[blocker.id])
    ready.clear()
    tl.update(blocker.id, status="completed", by="alice")
    assert tl.get(blocker.id).status == "completed" and ready == [[free.id]]
    assert f"task #{huge.id} is free to start; could not tell bob" in caplog.text


def test_owner_must_be_a_member(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    t = tl.create("x")
    with pytest.raises(NotFound, match="members"):
        tl.update(t.id, owner="mallory")
    assert tl.get(t.id).owner_name is None
    assert not Mailbox(root, team, "mallory").exists()


def test_a_task_created_with_an_owner_is_never_claimable_by_another(root: Path, team: str) -> None:
    ready: list[list[str]] = []
    tl = TaskList(root, team, on_ready=lambda ids, rung: ready.append(ids))
    task = tl.create("Review", "look at it", owner="bob")
    assert (task.owner, task.status) == ("bob", "pending")
    assert tl.get(task.id).owner == "bob"
    assert tl.claim_next("alice") is None and not tl.claim(task.id, "alice").success
    assert ready == [], "no idle teammate is woken for a task that has its owner"
    (message,) = Mailbox(root, team, "bob").unread()
    body = parse_body(message.text)
    assert isinstance(body, TaskAssignment) and (body.task_id, body.assigned_by) == (task.id, "team-lead")
    tl.create("Mine", owner="alice", by="alice")  # one's own task: nothing to tell
    assert Mailbox(root, team, "alice").unread() == []


def test_a_create_for_a_stranger_is_refused_with_nothing_made(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    with pytest.raises(NotFound, match="members"):
        tl.create("x", owner="mallory")
    assert tl.list() == [] and not Mailbox(root, team, "mallory").exists()


def test_release_owner(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(3):
        tl.create(f"t{i + 1}")
    tl.claim("1", "alice")
    tl.claim("2", "alice")
    tl.update("2", status="completed")
    assert tl.release_owner("alice") == ["1"]
    assert tl.get("1").owner_name is None and tl.get("1").status == "pending"


def test_a_lagging_mark_never_lets_a_deleted_id_come_back(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    tl.create("one")
    tl.create("two")
    (root / "tasks" / team / ".highwatermark").write_text("1")  # as if killed before the mark
    tl.delete("2")
    assert tl.create("three").id == "3"


def test_on_ready_is_told_what_each_change_made_claimable(root: Path, team: str) -> None:
    told: list[list[str]] = []
    tl = TaskList(root, team, on_ready=lambda ids, rung: told.append(ids))
    a, b, c = tl.create_many(
        [("a", "", None, None, []), ("b", "", None, None, ["@1"]), ("c", "", None, None, ["@1"])]
    )
    assert told == [[a.id]] and b.blocked_by == [a.id]  # the graph is whole before anyone is told
    tl.update(a.id, status="completed")
    assert told[-1] == [b.id, c.id]
    d = tl.create("d", blocked_by=[b.id])
    assert told[-1] == [b.id, c.id] and d.blocked_by == [b.id]  # d is blocked: nobody to wake
    tl.delete(b.id)
    assert told[-1] == [d.id]  # its blocker is gone
    tl.claim(c.id, "alice")
    tl.release_owner("alice", error="turn failed: API error")
    failed = tl.get(c.id)
    assert failed.failed and tl.find_claimable() == tl.get(d.id)  # a failed task is not taken again
    tl.update(c.id, status="pending")  # a retry clears the failure
    assert not tl.get(c.id).failed and told[-1] == [c.id]
