from __future__ import annotations

from pathlib import Path

from ipc import Mailbox


def test_mark_read_matching_marks_exactly_one_equal_message(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="same")
    mb.append(sender="bob", text="other")
    first = mb.read()[0]
    assert mb.mark_read_matching(first) is not None
    assert [m.text for m in mb.unread()] == ["other"]
    assert mb.mark_read_matching(first) is None  # already read: nothing matches


def test_unread_skips_read_entries_without_being_fooled_by_text(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text='tricky: {"read": true, "x": 1}')
    mb.append(sender="bob", text="plain")
    mb.mark_read_where(lambda m: m.text == "plain")
    assert [(i, m.text) for i, m in mb.unread_entries()] == [(0, 'tricky: {"read": true, "x": 1}')]


def test_mark_read_matching_uses_the_position_and_falls_back_when_it_moved(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "alice")
    for text in ("a", "b", "c"):
        mb.append(sender="bob", text=text)
    ((position, message),) = [(i, m) for i, m in mb.unread_entries() if m.text == "c"]
    assert position == 2 and mb.mark_read_matching(message, position) is not None
    assert [m.text for m in mb.unread()] == ["a", "b"]
    b = mb.unread()[1]
    assert mb.mark_read_matching(b, 0) is not None  # stale position: found by search
    assert [m.text for m in mb.unread()] == ["a"]
