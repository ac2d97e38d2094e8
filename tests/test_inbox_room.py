"""A long inbox: the room a rewrite leaves before its bracket grows with it, appends and
looks step over that room a page at a time without being fooled by a text of spaces, and
every writer of ours keeps each read flag inside one page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ipc import Mailbox, inbox_file, mailbox
from ipc.inbox_scan import Cursor, archive_scanned, scan


@pytest.fixture
def preads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every ``os.pread`` from here on (clear it to count afresh)."""
    lengths: list[int] = []
    real = os.pread

    def counted(fd: int, length: int, offset: int) -> bytes:
        data = real(fd, length, offset)
        lengths.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counted)
    return lengths


def test_a_long_pile_is_rewritten_once_per_an_eighth_appended_and_its_room_is_never_read(
    root: Path, team: str, preads: list[int]
) -> None:
    """A pile of unread reports megabytes long: the room a rewrite leaves grows with it (an
    eighth), so appends rewrite it seldom however long it gets; neither an append nor a
    look past a cursor reads that room, only a few pages about its ends."""
    mb = Mailbox(root, team, "team-lead")
    mb.create()
    pile = [
        inbox_file.encode_entry(mailbox.new_message("bob", f"report {n} " + "y" * 300)) for n in range(12_000)
    ]
    mb.path.write_bytes(inbox_file.format_array(pile))  # 5 MB, as written whole, with no room yet
    _, cursor = scan(mb, Cursor())
    rewrites, most_read = 0, 0
    for n in range(400):  # 180 KB: a fixed room of 48 KiB made that four rewrites of the whole 5 MB
        inode = mb.path.stat().st_ino
        preads.clear()
        mb.append(sender="bob", text=f"more {n} " + "y" * 300)
        rewrite = mb.path.stat().st_ino != inode
        rewrites += rewrite
        new, cursor = scan(mb, cursor)
        assert [e.message.text.split()[1] for e in new] == [str(n)]
        if not rewrite:
            most_read = max(most_read, sum(preads))
    size = mb.path.stat().st_size
    room = size - len(mb.path.read_bytes().rstrip()[:-1].rstrip())
    assert rewrites == 1 and room > 400_000  # the first left 660 KB of room; 400 appends used 180
    # An append and a look step over the room in pages, galloping and halving: ~30 in all.
    assert most_read < room / 3, (most_read, room)
    assert len(mb.unread()) == 12_400 and json.loads(mb.path.read_bytes())[-1]["text"].startswith("more 399")


def test_a_text_holding_pages_of_spaces_is_not_taken_for_the_room(root: Path, team: str) -> None:
    """A page of spaces inside a text looks like the room before the bracket; the end found
    there is refused (the last element does not close there), so the append rewrites the
    file: every message is kept, in order, and the file stays plain JSON."""
    mb = Mailbox(root, team, "team-lead")
    for n in range(200):
        mb.append(sender="bob", text=f"report {n} " + "y" * 300)
    spaces = "open}" + " " * 20_000 + "close"
    for n in range(60):
        mb.append(sender="bob", text=spaces if n % 20 == 0 else f"more {n} " + "y" * 300)
    texts = [m.text for m in mb.read()]
    assert len(texts) == 260 and texts[200] == spaces and texts[-1].startswith("more 59")
    assert [t for t in texts if t.startswith("more")] == [
        f"more {n} " + "y" * 300 for n in range(60) if n % 20
    ]
    assert json.loads(mb.path.read_bytes())[220]["text"] == spaces
    entries, _ = scan(mb, Cursor())
    assert [e.message.text for e in entries] == texts


def test_the_end_of_an_inbox_is_found_past_its_room_and_never_inside_a_text(tmp_path: Path) -> None:
    """content_end steps over the room before the bracket (and the newlines after it) a page
    at a time; a text that holds pages of spaces just before the room does not fool it."""
    entry = {"from": "bob", "text": "", "timestamp": "2026-11-27T00:00:00.000Z", "read": False}
    for text in ("short", "open}" + " " * 30_000 + "]" + " " * 9000 + "close"):
        body = json.dumps([entry, {**entry, "text": text}], indent=2)[:-2].encode()  # up to the last }
        path = tmp_path / "inbox.json"
        # Rooms of one to four pages: the gallop skips the page holding the text's end for some.
        for room, after in ((0, 1), (10, 0), *((r, 3) for r in range(4096, 20_000, 500)), (300_000, 5000)):
            path.write_bytes(body + b"\n" + b" " * room + b"]" + b"\n" * after)
            fd = os.open(path, os.O_RDONLY)
            try:
                assert inbox_file.content_end(fd, path.stat().st_size) == (len(body), len(body) + 1 + room)
            finally:
                os.close(fd)
    path.write_bytes(body + b"\n" + b" " * 9000)  # torn: no closing bracket
    fd = os.open(path, os.O_RDONLY)
    try:
        assert inbox_file.content_end(fd, path.stat().st_size) is None
    finally:
        os.close(fd)


def test_the_end_of_a_long_pile_is_found_in_a_few_pages_whatever_follows_its_bracket(
    tmp_path: Path, preads: list[int]
) -> None:
    """Each append into the room adds a newline after the bracket, thousands of them late in a
    long room's life: the bracket is still found past them, and the room stepped over, in a
    few dozen pages read, never the room's megabytes."""
    entry = {"from": "bob", "text": "report", "timestamp": "2026-11-27T00:00:00.000Z", "read": False}
    body = json.dumps([entry] * 3, indent=2)[:-2].encode()
    path = tmp_path / "inbox.json"
    room = 6_000_000
    for after in (0, 1, 4000, 5700, 6000, 6500, 9000, 20_000):
        path.write_bytes(body + b"\n" + b" " * room + b"]" + b"\n" * after)
        fd = os.open(path, os.O_RDONLY)
        preads.clear()
        try:
            assert inbox_file.content_end(fd, path.stat().st_size) == (len(body), len(body) + 1 + room)
        finally:
            os.close(fd)
        assert sum(preads) < 60 * 4096, (after, sum(preads))


def test_every_writer_of_ours_keeps_each_read_flag_inside_a_page(root: Path, team: str) -> None:
    """Appends (in the room, over the bracket, with a rewrite), the archive pass and a whole
    rewrite all lay entries out so that no ``false`` past the first 32 KiB lies across a page
    boundary: every message of a long pile can be taken by flipping its flag in place, none
    costs a pass over the file. (Before, a rewrite is cheap, and Claude Code's bytes are kept.)"""
    import random

    from ipc.storage import within_a_page

    rng = random.Random(7)
    mb = Mailbox(root, team, "team-lead")

    def flags_in_a_page() -> bool:
        snap = inbox_file.parse(mb.path.read_bytes())
        offsets = [
            inbox_file.read_flag_offset(snap, i) for i in range(len(snap.raws)) if snap.reads[i] is False
        ]
        assert offsets and all(o >= 0 for o in offsets)
        return all(within_a_page(o, len(inbox_file.FLIP)) for o in offsets if o >= inbox_file.ROOM_FROM)

    for n in range(1500):  # about 1000 pages, so some 1500 * 5 / 4096 flags would have straddled
        mb.append(sender="bob", text=f"report {n} " + "z" * rng.randrange(20, 1200))
    assert flags_in_a_page()
    entries, cursor = scan(mb, Cursor())
    assert archive_scanned(mb, entries[:700:2], cursor) is not None  # the streaming pass
    assert len(mb.read()) == 1150 and flags_in_a_page()  # 350 moved to the archive
    mb.mark_read_where(lambda m: m.text.startswith("report 7"))  # a whole rewrite
    assert flags_in_a_page() and json.loads(mb.path.read_bytes())
