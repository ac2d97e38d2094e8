"""Reading an inbox past a cursor, and handing over what was read, for a reader that keeps
looking at one inbox (the supervisor at the lead's): a look reads and decodes only the bytes
after the cursor, flags flip in place, and the archiving pass streams, so neither a look's
cost nor the reader's memory follows how much piles up unread in the file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ipc import inbox_archive, inbox_end, inbox_file
from ipc.boundary import os_errors
from ipc.inbox_file import NotAnInbox
from ipc.locks import locked
from ipc.mailbox import Mailbox
from ipc.schemas import InboxMessage
from ipc.storage import read_bytes, within_a_page, write_at


@dataclass(frozen=True)
class Scanned:
    """An entry found by :meth:`Mailbox.scan`: its position, the message, and where its
    bytes (``raw``) start in the file."""

    position: int
    message: InboxMessage
    start: int
    raw: bytes


@dataclass(frozen=True)
class Cursor:
    """How far a reader has looked into an inbox: entries before ``count`` (ending at byte
    ``offset``, whose last bytes were ``mark``) need not be decoded again."""

    inode: int = 0
    count: int = 0
    offset: int = 0
    mark: bytes = b""
    # The reader's anchor (see identity), which it sets itself: after a rewrite (a new inode,
    # or bytes changed in place), unread entries up to it are not new. A reader that takes
    # what it judges (marks it read) anchors on the last entry it left unread.
    last: str = ""
    last_raw: bytes = b""  # its bytes as the reader saw them, to find it without decoding


def identity(message: InboxMessage) -> str:
    """What an entry is known by across rewrites of its file (which keep the entries' order
    and may change their bytes): its ``msg_id``, else who sent it when, and what."""
    if isinstance(message.msg_id, str) and message.msg_id:
        return message.msg_id
    return f"{message.from_}\0{message.timestamp}\0{message.text}"


def scan(mailbox: Mailbox, cursor: Cursor) -> tuple[list[Scanned], Cursor]:
    """Entries that arrived after ``cursor``, and the new cursor.

    Only the bytes after the cursor are read and decoded, as long as the file only grew
    (appends and flips keep offsets), so a long unread history costs nothing per look;
    after a rewrite (new inode, other bytes) it reads the file again and decodes what comes
    after the reader's anchor (:attr:`Cursor.last`).
    """
    try:
        fd = os.open(mailbox.path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return [], Cursor()
    try:
        info = os.fstat(fd)
        ends = inbox_end.content_end(fd, info.st_size, cursor.offset if cursor.inode == info.st_ino else 0)
        if ends is None:
            return [], cursor  # caught mid-write (or empty): the next scan sees it whole
        # The same file, or a rewrite that kept every byte the cursor passed (an append that
        # left room copies the file up to its last element): the mark, checked below, says.
        same = 0 < cursor.offset <= ends[0]
        origin = cursor.offset - len(cursor.mark) if same else 0
        # Up to the last element: the room before the bracket (megabytes in a long pile) is
        # not read, so neither is the bracket, put back here for the parse.
        buf = os.pread(fd, ends[0] - origin, origin) + b"\n]\n"
    finally:
        os.close(fd)
    if same and _unflipped(buf[: len(cursor.mark)]) != _unflipped(cursor.mark):
        same, origin, buf = False, 0, read_bytes(mailbox.path) or b""
    stripped = buf.rstrip()
    if not stripped.endswith(b"]"):
        return [], cursor  # caught mid-write (or empty): the next scan sees it whole
    body_end = len(stripped[:-1].rstrip())  # in buf
    start = len(cursor.mark) if same else 0
    rest = buf[start:].lstrip()
    skip = origin + len(buf) - len(rest)  # file offset of rest[0]
    if same:
        rest = b"[" + rest[1:] if rest.startswith(b",") else b"[]"
    try:
        snap = inbox_file.parse(rest)
    except NotAnInbox:
        return [], cursor
    base = cursor.count if same else 0
    # Rewritten (a writer whose append would cross a page, an archiving pass, Claude Code):
    # rewrites keep the entries' order, so what the reader left unread is still there, up
    # to its anchor; decoding and judging it again would cost a signature check per entry.
    first = _past_anchor(mailbox, snap, cursor) if not same and cursor.last else 0
    new: list[Scanned] = []
    at = max(0, snap.offset_of(first)) if first < len(snap.raws) else 0
    for i, message in mailbox._messages(snap, range(first, len(snap.raws))):
        raw = bytes(snap.raws[i])
        at = rest.find(raw, at)
        new.append(Scanned(base + i, message, skip + at, raw))
        at += len(raw)
    count = base + len(snap.raws)
    if count == 0:
        # Nothing in it: the next look reads it from the start. A cursor just past the opening
        # bracket would take the first append, which no comma leads, for nothing new. Nor can
        # the anchor be in it: all that comes is new.
        return new, Cursor(info.st_ino)
    mark = buf[max(0, body_end - 64) : body_end]
    cursor = Cursor(info.st_ino, count, origin + body_end, mark, cursor.last, cursor.last_raw)
    return new, cursor


def _past_anchor(mailbox: Mailbox, snap: inbox_file.Snapshot, cursor: Cursor) -> int:
    """The index just past the reader's anchor in a rewritten file, or 0 (gone: all is new).
    Found by its bytes where the rewrite kept them (ours do), looking from the end, where
    it usually is; else by decoding every entry."""
    want = _unflipped(cursor.last_raw)
    for i in range(len(snap.raws) - 1, -1, -1) if want else ():
        if len(snap.raws[i]) == len(want) and _unflipped(bytes(snap.raws[i])) == want:
            return i + 1
    found = [i for i, message in mailbox._messages(snap) if identity(message) == cursor.last]
    return found[-1] + 1 if found else 0


def archive_scanned(mailbox: Mailbox, entries: Sequence[Scanned], cursor: Cursor) -> Cursor | None:
    """Mark scanned entries read and move every read message to the archive, in one
    pass a chunk at a time (memory does not follow the inbox's size). Returns ``cursor``
    (the scan's) carried over to the rewritten file, or None if the file had changed
    under the scan (then marked by content; scan it again from the start, past ``last``)."""
    with locked(mailbox.path, root=mailbox.paths.root):
        try:
            current = os.stat(mailbox.path).st_ino
        except FileNotFoundError:
            current = -1
        if current == cursor.inode:
            try:
                done = inbox_archive.archive_read(
                    mailbox.path,
                    mailbox.paths.inbox_archive(mailbox.agent),
                    {e.position for e in entries},
                    cursor.count,
                )
            except inbox_archive.NotPretty:
                pass
            else:
                return Cursor(done.inode, done.kept, done.offset, done.mark, cursor.last, cursor.last_raw)
    mailbox.mark_positions([e.position for e in entries], [e.message for e in entries])
    return None


def flip_in_place(mailbox: Mailbox, entries: Sequence[Scanned]) -> bool:
    """Mark scanned entries read by flipping their flags in place, reading only their bytes;
    False (nothing written) when one moved or its flag lies across a page boundary, where a
    kill could tear the flip: then the caller's streaming pass flips them in a rewrite."""
    if not entries:
        return True
    with locked(mailbox.path, root=mailbox.paths.root):
        with os_errors(f"cannot open {mailbox.path}"):
            fd = os.open(mailbox.path, os.O_RDWR | os.O_CLOEXEC)
        try:
            flags = [_flag_offset(fd, e) for e in entries]
            if not all(f >= 0 and within_a_page(f, len(inbox_file.FLIP)) for f in flags):
                return False
            for offset in flags:
                write_at(fd, mailbox.path, offset, inbox_file.FLIP)
            return True
        finally:
            os.close(fd)


# ------------------------------------------------------------ writing (under the lock)


def _unflipped(data: bytes) -> bytes:
    """``data`` with read flags flipped in place set back: a flip keeps every offset."""
    return data.replace(b"true ", b"false")


def _flag_offset(fd: int, entry: Scanned) -> int:
    """File offset of ``entry``'s ``false`` if the entry is still at its scanned place with
    exactly one top-level read flag, else -1."""
    at = inbox_file.false_at(entry.raw)
    if at < 0 or os.pread(fd, len(entry.raw), entry.start) != entry.raw:
        return -1
    return entry.start + at
