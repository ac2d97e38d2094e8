"""A long inbox: the room a rewrite leaves before its bracket grows with it, appends and
looks step over that room a page at a time without being fooled by a text of spaces, and
every writer of ours keeps each read flag inside one page."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import pytest

from ipc import Mailbox, inbox_end, inbox_file, mailbox
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


def _end(path: Path, after: int = 0) -> tuple[int, int] | None:
    fd = os.open(path, os.O_RDONLY)
    try:
        return inbox_end.content_end(fd, path.stat().st_size, after)
    finally:
        os.close(fd)


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
            assert _end(path) == (len(body), len(body) + 1 + room)
    path.write_bytes(body + b"\n" + b" " * 9000)  # torn: no closing bracket
    assert _end(path) is None


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
        preads.clear()
        assert _end(path) == (len(body), len(body) + 1 + room)
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


def test_where_a_look_last_found_the_end_never_changes_the_end_found(tmp_path: Path) -> None:
    """A look that knows where it found the end before reads onward from there; from any
    offset at all (an element's end, inside an element, inside a text of spaces, past the
    bracket: the file may have been written over in place since), the end it finds is the one
    found without it."""
    entry = {"from": "bob", "text": "", "timestamp": "2026-11-27T00:00:00.000Z", "read": False}
    spaces = "open\n  }" + " " * 12_000 + "close"  # as an element's close looks, but for the newline
    path = tmp_path / "inbox.json"
    layouts = {
        "ours, with room": [entry | {"text": f"r{n} " + "y" * 200} for n in range(40)],
        "a text of spaces last": [entry | {"text": f"r{n}"} for n in range(10)] + [entry | {"text": spaces}],
        "a text of spaces inside": [entry | {"text": t} for t in ("a", spaces, "b", "c")],
        "a close of spaces": [entry | {"text": "a"}, entry | {"text": "x  }" + " " * 9000 + "y"}],
    }
    for label, entries in layouts.items():
        body = json.dumps(entries, indent=2)[:-2].encode()  # up to the last }, as Claude Code writes
        for room in (0, 3000, 9000, 40_000):
            path.write_bytes(body + b"\n" + b" " * room + b"]\n")
            expected = (len(body), len(body) + 1 + room)
            assert _end(path) == expected
            for after in [*range(1, len(body) + room + 4, 97), len(body)]:
                assert _end(path, after) == expected, (label, room, after)
    # Our appends into the room: some start at the next page, some are led by spaces that move
    # their read flag onto the next page; such a gap never holds a whole page of blanks.
    box = Mailbox.__new__(Mailbox)
    box.path, box._end = path, (0, 0)
    path.write_bytes(inbox_file.format_array([inbox_file.encode_entry(entry)] * 400))  # past ROOM_FROM
    for n in range(60):
        box._append_locked(inbox_file.encode_entry(entry | {"text": f"m{n} " + "y" * (n * 97 % 3900)}))
        size, data = path.stat().st_size, path.read_bytes()
        found = _end(path)
        assert found is not None
        for after in range(1, size, 61):
            assert _end(path, after) == found, (n, after)
    assert len(re.findall(rb"\n  \} {20,},\n", data)) > 5, "gaps between elements were laid"


def test_an_append_or_a_look_that_knows_where_the_end_was_reads_a_page_or_two(
    root: Path, team: str, preads: list[int]
) -> None:
    """An append into a long pile's room reads onward from where this process's last append
    (or look) found the end: a page or two, where stepping back from the bracket over the
    room reads a dozen. Another writer's appends in between are found, and kept, all the same."""
    mb, other = Mailbox(root, team, "team-lead"), Mailbox(root, team, "team-lead")
    mb.create()
    pile = [inbox_file.encode_entry(mailbox.new_message("bob", f"r{n} " + "y" * 300)) for n in range(3000)]
    mb.path.write_bytes(inbox_file.format_array(pile))  # as written whole: no room yet
    inode = mb.path.stat().st_ino
    while mb.path.stat().st_ino == inode:  # over the bracket, until one would cross a page:
        mb.append(sender="bob", text="first")  # that one rewrites the file, leaving room
    roomy = mb.path.stat().st_ino
    _, cursor = scan(mb, Cursor())
    mb.append(sender="bob", text="second")
    stranger = Mailbox(root, team, "team-lead")  # nothing known: steps back over the room
    preads.clear()
    stranger.append(sender="bob", text="third")
    stepping = len(preads)
    for n in range(5):
        other.append(sender="ann", text=f"between {n}")
    preads.clear()
    mb.append(sender="bob", text="fourth")
    assert len(preads) <= 5 < stepping, (preads, stepping)
    preads.clear()
    mb.append(sender="bob", text="fifth")  # alone: onward from its own last end
    assert len(preads) <= 5, preads
    preads.clear()
    new, cursor = scan(mb, cursor)
    assert [e.message.text for e in new] == [
        "second",
        "third",
        *(f"between {n}" for n in range(5)),
        "fourth",
        "fifth",
    ]
    texts = [m["text"] for m in json.loads(mb.path.read_bytes())[3000:] if m["text"] != "first"]
    assert texts == ["second", "third", *(f"between {n}" for n in range(5)), "fourth", "fifth"]
    assert mb.path.stat().st_ino == roomy, "every append since went into the room"


def test_an_append_after_the_file_was_written_over_in_place_finds_its_true_end(root: Path, team: str) -> None:
    """Claude Code rewrites an inbox in place (same inode): where this process's last append
    ended means nothing in the new bytes. The next append still lands after the last element,
    whatever lies at that offset now (an element, a text of spaces, nothing)."""
    mb = Mailbox(root, team, "team-lead")
    mb.create()
    pile = [inbox_file.encode_entry(mailbox.new_message("bob", f"r{n} " + "y" * 300)) for n in range(300)]
    mb.path.write_bytes(inbox_file.format_array(pile))
    mb.append(sender="bob", text="mine")
    inode = mb.path.stat().st_ino
    entry = {"from": "ann", "text": "", "timestamp": "2026-11-27T00:00:00.000Z", "read": True}
    for rewritten in (
        [entry | {"text": "short"}],
        [entry | {"text": f"c{n} " + "z" * 500} for n in range(400)],
        [entry | {"text": "a"}, entry | {"text": " " * 200_000}],
    ):
        with open(mb.path, "r+b") as f:  # as Claude Code writes: truncate, then the whole array
            f.truncate(0)
            f.write(json.dumps(rewritten, indent=2).encode())
        assert mb.path.stat().st_ino == inode
        mb.append(sender="bob", text="after")
        texts = [m["text"] for m in json.loads(mb.path.read_bytes())]
        assert texts == [*(m["text"] for m in rewritten), "after"]


def test_the_quick_strips_of_blanks_answer_as_the_exact_ones() -> None:
    # Every string of up to 6 bytes over JSON's whitespace, the two ASCII whitespace bytes
    # JSON does not allow (which the built-in strip takes too), and two others.
    alphabet = [b" ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c", b"}", b"a"]
    for length in range(7):
        for parts in itertools.product(alphabet, repeat=length):
            data = b"".join(parts)
            for blank in (inbox_end.BLANK, b"\n"):
                assert inbox_end.rstrip_blank(data, blank) == data.rstrip(blank), (data, blank)
                assert inbox_end.is_blank(data, blank) == (not data.strip(blank)), (data, blank)
