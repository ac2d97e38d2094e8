from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from ipc import Mailbox, inbox_archive, mailbox
from ipc.inbox_scan import Cursor, archive_scanned, flip_in_place, identity, scan
from ipc.schemas import InboxMessage


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


def test_scan_decodes_only_what_arrived_after_the_cursor(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lead-inbox check: a long unread history costs nothing per look."""
    mb = Mailbox(root, team, "team-lead")
    for n in range(500):
        mb.append(sender="bob", text=f"report {n}")
    first, cursor = scan(mb, Cursor())
    assert [e.position for e in first] == list(range(500))
    decoded: list[bytes] = []
    real = mailbox.decode_message

    def counted(raw: bytes) -> InboxMessage | None:
        decoded.append(bytes(raw))
        return real(raw)

    monkeypatch.setattr(mailbox, "decode_message", counted)
    mb.append(sender="carol", text="new one")
    new, cursor = scan(mb, cursor)
    assert [(e.position, e.message.text) for e in new] == [(500, "new one")]
    assert len(decoded) == 1
    again, _ = scan(mb, cursor)
    assert again == []

    # Taken in place: only that flag flips, the file stays whole and the cursor still holds.
    assert flip_in_place(mb, new)
    assert mb.read()[-1].read and mb.read()[-1].text == "new one"
    assert [m.text for m in mb.unread()][-1] == "report 499" and len(mb.unread()) == 500
    mb.append(sender="carol", text="after the flip")
    newer, cursor = scan(mb, cursor)
    assert [(e.position, e.message.text) for e in newer] == [(501, "after the flip")]


def test_scan_after_a_rewrite_returns_only_what_came_after_and_a_moved_entry_is_not_flipped(
    root: Path, team: str
) -> None:
    mb = Mailbox(root, team, "team-lead")
    for text in ("a", "b", "c"):
        mb.append(sender="bob", text=text)
    entries, cursor = scan(mb, Cursor())
    # A peer prunes "a" (as Claude Code 2.1.330 prunes delivered messages): "b" and "c" move.
    kept = [m for m in json.loads(mb.path.read_bytes()) if m["text"] != "a"]
    mb.path.with_name("tmp").write_text(json.dumps(kept, indent=2))
    mb.path.with_name("tmp").replace(mb.path)
    mb.append(sender="bob", text="d")
    again, _ = scan(mb, cursor)  # a reader with no anchor: everything, from the start
    assert [(e.position, e.message.text) for e in again] == [(0, "b"), (1, "c"), (2, "d")]
    new, cursor = scan(mb, replace(cursor, last=identity(entries[2].message)))  # it left "c" unread
    assert [(e.position, e.message.text) for e in new] == [(2, "d")]
    # Found by its bytes alone (the id given is not its own): the peer's rewrite kept them.
    new, cursor = scan(mb, replace(cursor, offset=0, last="not its id", last_raw=entries[2].raw))
    assert [(e.position, e.message.text) for e in new] == [(2, "d")]
    # The stale scan of "c" no longer sits at its offset: not flipped there (nothing written).
    before = mb.path.read_bytes()
    assert not flip_in_place(mb, [entries[2]]) and mb.path.read_bytes() == before
    # A file whose last looked-at entry is gone is new from its start.
    mb.path.with_name("tmp").write_text(json.dumps([kept[0]], indent=2))
    mb.path.with_name("tmp").replace(mb.path)
    fresh, _ = scan(mb, cursor)
    assert [(e.position, e.message.text) for e in fresh] == [(0, "b")]


def test_an_append_that_rewrites_the_inbox_does_not_make_its_unread_entries_new(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer whose append would cross a page rewrites the file (a new inode): the reader
    that left reports unread for a person must not see, judge, nor even decode them again."""
    mb = Mailbox(root, team, "team-lead")
    mb.append(sender="bob", text="report 0")
    (first,), cursor = scan(mb, Cursor())
    cursor = replace(cursor, last=identity(first.message), last_raw=first.raw)  # left unread, for a person
    decoded: list[bytes] = []
    real = mailbox.decode_message

    def counted(raw: bytes) -> InboxMessage | None:
        decoded.append(bytes(raw))
        return real(raw)

    monkeypatch.setattr(mailbox, "decode_message", counted)
    rewritten, n = False, 0
    while not rewritten:
        n += 1
        inode = os.stat(mb.path).st_ino
        mb.append(sender="bob", text=f"report {n}")
        rewritten = os.stat(mb.path).st_ino != inode
        decoded.clear()
        (new,), cursor = scan(mb, cursor)
        assert new.message.text == f"report {n}" and len(decoded) == 1
        cursor = replace(cursor, last=identity(new.message), last_raw=new.raw)
    assert n > 1 and len(mb.unread()) == n + 1


@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_archive_scanned_streams_read_messages_out_and_carries_the_cursor(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(inbox_archive, "CHUNK", chunk)  # 64: every element spans chunks
    mb = Mailbox(root, team, "team-lead")
    for n in range(6):
        mb.append(sender="bob", text=f"idle {n}" if n % 2 else f"report {n}")
    entries, cursor = scan(mb, Cursor())
    idle = [e for e in entries if e.message.text.startswith("idle")]
    assert flip_in_place(mb, idle[:2])
    assert mb.path.read_bytes().count(b'"read": true ') == 2
    mb.append(sender="carol", text="after the scan")
    carried = archive_scanned(mb, idle[2:], cursor)
    assert carried is not None
    assert [m.text for m in mb.read()] == ["report 0", "report 2", "report 4", "after the scan"]
    assert sorted(m.text for m in mb.history()) == sorted(
        [e.message.text for e in entries] + ["after the scan"]
    )
    assert all(m.read for m in mb.history() if m.text.startswith("idle"))
    new, _ = scan(mb, carried)  # only what the scan had not seen
    assert [(e.position, e.message.text) for e in new] == [(3, "after the scan")]
    json.loads(mb.path.read_bytes())  # whole


def test_archive_scanned_falls_back_for_a_file_in_another_format(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "team-lead")
    for text in ("a", "b"):
        mb.append(sender="bob", text=text)
    entries, cursor = scan(mb, Cursor())
    compact = mb.path.read_bytes().replace(b"\n", b"").replace(b"  ", b"")
    mb.path.write_bytes(compact)  # a peer's one-line JSON, rewritten in place
    os.utime(mb.path)
    assert archive_scanned(mb, entries[:1], cursor) is None  # marked by content instead
    assert [m.text for m in mb.unread()] == ["b"]


def test_archive_scanned_keeps_an_entry_that_is_not_a_message(root: Path, team: str) -> None:
    mb = Mailbox(root, team, "team-lead")
    mb.append(sender="bob", text="idle")
    mb.append_raw(b'{"note": "a peer\'s entry"}')
    mb.append(sender="bob", text="report")
    entries, cursor = scan(mb, Cursor())
    assert archive_scanned(mb, [e for e in entries if e.message.text == "idle"], cursor) is not None
    assert b"a peer's entry" in mb.path.read_bytes() and [m.text for m in mb.unread()] == ["report"]


def test_a_take_from_an_inbox_left_with_nothing_unread_takes_no_lock_and_one_with_a_message_does(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipc import lock_settings, locks
    from ipc.errors import LockTimeout

    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="already handed over")
    mb.mark_all_read()  # this reader left nothing unread, and the file has not changed since
    monkeypatch.setattr(lock_settings, "_lock_timeout", 0.2)
    with locks.locked(mb.path, root=mb.paths.root):  # a writer (or Claude Code) holds the inbox
        assert mb.take(lambda unread: 0) == []  # answered from a stat, without waiting
    mb.append(sender="bob", text="new")
    with locks.locked(mb.path, root=mb.paths.root), pytest.raises(LockTimeout):
        mb.take(lambda unread: 0)  # something unread: taken only under the lock
    assert [m.text for m in mb.take(lambda unread: 0)] == ["new"]


def test_an_inbox_found_with_nothing_unread_is_read_again_once_it_changes(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipc.storage import atomic_write

    def first(unread: list[tuple[int, InboxMessage]]) -> int:
        return 0

    mb = Mailbox(root, team, "alice")
    assert mb.take(first) == []  # no file yet
    mb.append(sender="bob", text="one")
    assert [m.text for m in mb.take(first)] == ["one"]
    assert mb.take(first) == []  # nothing left unread: the next look is a stat
    mb.append(sender="bob", text="two")  # the file grows
    assert [m.text for m in mb.take(first)] == ["two"]
    assert mb.take(first) == []
    data = mb.path.read_bytes()
    unread_again = data.replace(b'"read": true ', b'"read": false')
    assert len(unread_again) == len(data)
    atomic_write(mb.path, unread_again)  # rewritten whole: same size, another inode
    assert sorted(m.text for m in mb.take(first, limit=2)) == ["one", "two"]
    assert mb.take(first) == []
    # Flipped back in place (which no writer does): trusted unchanged for QUIET_SECONDS only.
    monkeypatch.setattr(mailbox, "QUIET_SECONDS", 0.0)
    assert mb.take(first) == []
    with open(mb.path, "r+b") as f:
        f.write(unread_again)
    assert sorted(m.text for m in mb.take(first, limit=2)) == ["one", "two"]


def test_an_in_place_write_never_crosses_a_page_so_a_kill_cannot_tear_it(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill -9 stops a write only between pages: every write in place (an append in the
    room before the bracket or over it, a flip) stays inside one page; one that could not is
    a rewrite (a new inode), so Claude Code never reads a torn inbox."""
    from ipc.storage import within_a_page

    writes: list[tuple[int, int]] = []
    real = vars(mailbox)["write_at"]  # the name mailbox writes through

    def recorded(fd: int, path: Path, offset: int, data: bytes) -> None:
        writes.append((offset, len(data)))
        real(fd, path, offset, data)

    monkeypatch.setattr(mailbox, "write_at", recorded)
    mb = Mailbox(root, team, "alice")
    mb.append(sender="bob", text="first")
    kinds = set()
    for n in range(40):
        inode, size = mb.path.stat().st_ino, mb.path.stat().st_size
        mb.append(sender="bob", text=f"message {n} " + "x" * (250 + 37 * n % 200))
        kinds.add(mb.path.stat().st_ino == inode)
        assert mb.path.stat().st_size > size  # an append always grows the file (a look relies on it)
    for message in mb.unread():
        inode = mb.path.stat().st_ino
        assert mb.mark_read_matching(message) is not None
        kinds.add(mb.path.stat().st_ino == inode)
    assert writes and all(within_a_page(*w) for w in writes), [w for w in writes if not within_a_page(*w)]
    assert kinds == {True, False}  # both paths were taken: the test looked at both
    assert mb.unread() == [] and len(mb.read()) == 41
    assert json.loads(mb.path.read_bytes())  # whatever room is left, the file is plain JSON


def test_a_rewrite_leaves_room_so_appends_to_a_long_inbox_rewrite_it_seldom(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append that would cross a page rewrites the file; the rewrite leaves room before
    the bracket (an eighth of a file past 32 KiB), which the next appends
    fill in place, each inside a page, the file growing by a byte past the bracket: a long
    unread pile is rewritten once per that much appended. The scan and the streaming
    archive pass read such a file as any other."""
    from ipc.storage import within_a_page

    mb = Mailbox(root, team, "team-lead")
    for n in range(400):
        mb.append(sender="bob", text=f"report {n} " + "y" * 300)
    entries, cursor = scan(mb, Cursor())
    writes: list[tuple[int, int]] = []
    real = vars(mailbox)["write_at"]  # the name mailbox writes through

    def recorded(fd: int, path: Path, offset: int, data: bytes) -> None:
        writes.append((offset, len(data)))
        real(fd, path, offset, data)

    monkeypatch.setattr(mailbox, "write_at", recorded)
    rewrites = 0
    for n in range(100):
        inode, size = mb.path.stat().st_ino, mb.path.stat().st_size
        mb.append(sender="bob", text=f"more {n} " + "y" * 300)
        rewrites += mb.path.stat().st_ino != inode
        assert mb.path.stat().st_size > size  # an append always grows the file (a look relies on it)
    assert rewrites <= 3  # 450 bytes each, 45 KB into rooms of 22 KB and more; without: one per page
    assert len(writes) > 150 and all(within_a_page(*w) for w in writes)
    texts = [m.text.split()[0] + m.text.split()[1] for m in mb.unread()]
    assert texts == [f"report{n}" for n in range(400)] + [f"more{n}" for n in range(100)]
    assert json.loads(mb.path.read_bytes())[-1]["text"] == mb.unread()[-1].text
    decoded: list[bytes] = []
    real_decode = mailbox.decode_message

    def counted(raw: bytes) -> InboxMessage | None:
        decoded.append(bytes(raw))
        return real_decode(raw)

    monkeypatch.setattr(mailbox, "decode_message", counted)
    new, cursor = scan(mb, cursor)  # the rewrites kept the bytes it passed: only the new are decoded
    assert [e.message.text.split()[1] for e in new] == [str(n) for n in range(100)] and len(decoded) == 100
    carried = archive_scanned(mb, entries[:390], cursor)  # 390 reports read: out to the archive
    assert carried is not None and len(mb.read()) == 110 and len(mb.history()) == 500
    assert [m.text.split()[1] for m in mb.unread()[:11]] == ["390", *map(str, range(391, 400)), "0"]


def test_a_look_at_an_emptied_inbox_misses_nothing_appended_after_it(root: Path, team: str) -> None:
    """The archive pass leaves ``[]`` when nothing is left for a person; a look then, and the
    next message (with no comma before it) is still new to the next look, at its position,
    and the pass after marks that one read, not another."""
    mb = Mailbox(root, team, "team-lead")
    mb.append(sender="bob", text="one")
    entries, cursor = scan(mb, Cursor())
    carried = archive_scanned(mb, entries, cursor)
    assert carried is not None and mb.read() == [] and len(mb.history()) == 1
    nothing, cursor = scan(mb, carried)
    assert nothing == []
    mb.append(sender="bob", text="two")
    two, cursor = scan(mb, cursor)
    assert [(e.position, e.message.text) for e in two] == [(0, "two")]
    mb.append(sender="bob", text="three")
    three, cursor = scan(mb, cursor)
    assert [(e.position, e.message.text) for e in three] == [(1, "three")]
    assert archive_scanned(mb, three, cursor) is not None
    assert [m.text for m in mb.unread()] == ["two"]  # three was taken; two waits for a person


def test_a_flag_across_a_page_boundary_is_flipped_by_the_streaming_pass_not_in_place(
    root: Path, team: str
) -> None:
    """A kill could tear a write across two pages: such a flag is left to the archive pass,
    which rewrites the file a chunk at a time (the lead desk's path), not flipped in place."""
    mb = Mailbox(root, team, "team-lead")
    entry = {"from": "bob", "text": "", "timestamp": "2026-11-27T00:00:00.000Z", "read": False}
    pad = 0
    while True:  # the second entry's "false" starting two bytes before the page boundary
        data = json.dumps([{**entry, "text": "x" * pad}, {**entry, "text": "idle"}], indent=2)
        at = data.rindex("false")
        if at >= 4094:
            break
        pad += 4094 - at
    assert at == 4094
    mb.path.write_text(data)
    entries, cursor = scan(mb, Cursor())
    assert not flip_in_place(mb, entries[1:]) and mb.path.read_text() == data
    assert archive_scanned(mb, entries[1:], cursor) is not None
    assert [m.text for m in mb.read()] == ["x" * pad]
    assert sorted((m.text, m.read) for m in mb.history()) == [("idle", True), ("x" * pad, False)]
