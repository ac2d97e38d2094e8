from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ipc import Mailbox, NotFound, TeamConfigStore
from ipc.errors import InvalidInput, StorageError
from ipc.mailbox import MAX_TEXT_BYTES


def test_append_read_unread_mark(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    stored = mb.append(sender="team-lead", text="hi", summary="greeting")
    assert stored.from_ == "team-lead" and stored.read is False
    assert stored.timestamp.endswith("Z") and len(stored.timestamp) == 24
    mb.append(sender="bob", text="second", color="green")
    assert [m.text for m in mb.read()] == ["hi", "second"]
    assert len(mb.unread()) == 2
    mb.mark_read(0)
    assert [m.text for m in mb.unread()] == ["second"]
    mb.mark_read_where(lambda m: m.from_ == "bob")
    assert mb.unread() == []
    on_disk = json.loads(mb.path.read_text())
    assert on_disk[0] == {
        "from": "team-lead",
        "text": "hi",
        "timestamp": stored.timestamp,
        "read": True,
        "summary": "greeting",
        "msg_id": stored.msg_id,
        "lead_sig": stored.lead_sig,  # the team's lead signs what it writes (trust)
    }


def test_files_and_dirs_are_private(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.append(sender="team-lead", text="x")
    assert stat.S_IMODE(mb.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(mb.path.parent.stat().st_mode) == 0o700


def test_unknown_recipient_is_refused_and_no_inbox_is_created(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "mallory")
    with pytest.raises(NotFound, match="members: team-lead, alice, bob"):
        mb.append(sender="team-lead", text="x")
    assert not mb.path.exists()


def test_take_marks_only_the_chosen_message(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    for text in ("a", "b", "c"):
        mb.append(sender="bob", text=text)
    taken = mb.take(lambda unread: next(i for i, (_, m) in enumerate(unread) if m.text == "b"))
    assert [m.text for m in taken] == ["b"] and taken[0].read
    assert [m.text for m in mb.unread()] == ["a", "c"]
    assert mb.take(lambda unread: None) == []


def test_mark_all_and_clear(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="a")
    mb.append(sender="bob", text="b")
    assert len(mb.mark_all_read()) == 2
    mb.clear()
    assert mb.read() == []


def test_mark_read_bad_index(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="a")
    with pytest.raises(NotFound, match="no index 5"):
        mb.mark_read(5)


def test_a_bad_entry_is_skipped_reported_and_kept(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="good")
    entries = json.loads(mb.path.read_text())
    entries.insert(0, {"from": 42, "oops": True})
    mb.path.write_text(json.dumps(entries))
    assert [m.text for m in mb.read()] == ["good"]
    assert mb.skipped() == [0]
    mb.append(sender="bob", text="after")
    mb.mark_all_read()
    entries = json.loads(mb.path.read_text())
    assert entries[0] == {"from": 42, "oops": True}  # kept byte for byte in meaning
    assert [e.get("text") for e in entries[1:]] == ["good", "after"]


def test_a_torn_inbox_is_quarantined_and_the_team_keeps_working(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.path.write_text('[{"from": "bob", "text": "whole", "timestamp": "t"}, {"from": "bob", "text": "tor')
    # A look reads what parses and changes nothing (ps over a Claude Code root rewrote its
    # inboxes); the next writer repairs it.
    assert [m.text for m in mb.read()] == ["whole"] and mb.unread_entries()
    assert mb.path.read_text().endswith('"text": "tor') and not list(mb.path.parent.glob("*.corrupt-*"))
    mb.path.write_text('[{"from": "bob", "text": "tor')
    mb.append(sender="bob", text="fresh")
    assert [m.text for m in mb.read()] == ["fresh"]
    kept = list(mb.path.parent.glob("alice.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == '[{"from": "bob", "text": "tor'


def test_oversized_message_is_refused(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    with pytest.raises(InvalidInput, match="limit"):
        mb.append(sender="bob", text="x" * (MAX_TEXT_BYTES + 1))
    assert mb.read() == []


def test_read_messages_are_archived_never_dropped(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTTEAMS_INBOX_ARCHIVE_AFTER", "10")
    mb = Mailbox(root, team, "alice")
    for i in range(30):
        mb.append(sender="bob", text=f"m{i}")
        if i % 2 == 0:
            mb.mark_all_read()
    assert len(mb.read()) <= 12
    history = [m.text for m in mb.history()]
    assert sorted(history, key=lambda t: int(t[1:])) == [f"m{i}" for i in range(30)]
    assert len(history) == 30


def test_writes_under_a_claude_code_root_take_its_lock_and_leave_no_file_in_its_way(tmp_path: Path) -> None:
    root = tmp_path / "elsewhere"
    (root / "projects").mkdir(parents=True)  # Claude Code's files: a Claude Code root, whatever its name
    store = TeamConfigStore(root, "t")
    store.create()
    store.add_member("alice")
    Mailbox(root, "t", "alice").append(sender="team-lead", text="hi")
    inboxes = root / "teams" / "t" / "inboxes"
    assert not (inboxes / "alice.json.lock").exists(), "the mkdir lock is released"
    assert not (root / "teams" / "t" / "config.json.lock").exists()
    assert (inboxes / "alice.lock").is_file()  # our own flock lives where Claude Code never locks


def test_failed_write_leaves_previous_state(root: Path, team: str) -> None:
    import errno

    from ipc import storage

    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="kept")
    before = mb.path.read_bytes()

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    storage.set_write_hook(full)
    try:
        with pytest.raises(StorageError, match="disk full"):
            mb.append(sender="bob", text="lost")
    finally:
        storage.set_write_hook(None)
    assert mb.path.read_bytes() == before
    assert not list(mb.path.parent.glob(".*.tmp"))


def test_a_claude_code_root_is_known_by_its_content_through_a_symlink(tmp_path: Path) -> None:
    from ipc import locks

    real = tmp_path / "cc-home"
    (real / "projects").mkdir(parents=True)
    link = tmp_path / "innocent-name"
    link.symlink_to(real)
    assert locks.is_claude_root(link) and not locks.is_claude_root(tmp_path / "plain")
