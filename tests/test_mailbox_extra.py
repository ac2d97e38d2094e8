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
