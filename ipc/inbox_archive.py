"""The archiving pass over an inbox, a chunk at a time.

An inbox that nobody reads (the lead's, with no person looking) grows without bound. Moving
its read messages to the archive must not cost memory in proportion to it: this pass reads
the file in chunks, splits it at element boundaries (the pretty format of
:mod:`ipc.inbox_file`: ``\\n  },\\n  {``, spaces perhaps before the comma, only occurs
between elements, since every nested line is indented further and strings escape
newlines), flips the flags it was asked to, appends read elements to the archive and writes
unread ones to a temp file that then replaces the inbox. Memory: one chunk and one element. A crash before the rename leaves the inbox as it
was (and perhaps archive lines twice: never a lost message).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ipc import inbox_end, inbox_file
from ipc.storage import append_line, atomic_write_from

CHUNK = 1 << 18  # small: the pass must not show in the supervisor's RSS
_START = re.compile(rb"\[ *\n  \{")
_BOUNDARY = re.compile(rb"\n  \}[ \n]*,\n  \{")
_END = re.compile(rb"\n  \}\s*\]\s*\Z")  # the room a rewrite leaves before the bracket included


class NotPretty(ValueError):
    """The file is not in the two-space format this pass can split without parsing it."""


@dataclass(frozen=True)
class Rewritten:
    """Where the first ``seen`` entries of the old file ended up: ``kept`` of them remain,
    ending at byte ``offset`` of the new file, whose last bytes before it are ``mark``."""

    inode: int
    kept: int
    offset: int
    mark: bytes


def elements(fd: int) -> Iterator[bytes]:
    """Each element of the inbox open at ``fd``, in order (raises NotPretty). Read up to its
    last element; the room after it is checked to be blanks, not gathered into the buffer."""
    ends = inbox_end.content_end(fd, os.fstat(fd).st_size)
    if ends is None:
        raise NotPretty("the inbox does not end with a closing bracket")
    last, bracket = ends
    for at in range(last, bracket, CHUNK):
        if not inbox_end.is_blank(os.pread(fd, min(CHUNK, bracket - at), at)):
            raise NotPretty("the inbox holds more than blanks after what was taken for its last element")
    buf = os.pread(fd, min(CHUNK, last), 0)
    done = len(buf)
    if buf.strip() == b"[":
        return  # empty
    opening = _START.match(buf)  # spaces after the bracket: a first element moved for its flag
    if opening is None:
        raise NotPretty("the inbox does not start as a two-space JSON array")
    buf = buf[opening.end() - 3 :]
    while True:
        start = 0
        # Spaces may stand before the comma: an append that would have crossed a page
        # starts at the next one (see inbox_file.append_in_place).
        while (found := _BOUNDARY.search(buf, start)) is not None:
            yield buf[start : found.start() + 4]
            start = found.end() - 3
        buf = buf[start:]
        if done == last:
            break
        chunk = os.pread(fd, min(CHUNK, last - done), done)
        if not chunk:
            raise NotPretty("the inbox shrank while it was read")
        buf += chunk
        done += len(chunk)
    end = _END.search(buf + b"\n]\n")
    if end is None:
        raise NotPretty("the inbox does not end as a two-space JSON array")
    yield buf[: end.start() + 4]


def archive_read(path: Path, archive: Path, flips: set[int], seen: int) -> Rewritten:
    """Rewrite the inbox at ``path`` (the caller holds its lock) keeping its unread entries;
    read ones, and those at ``flips`` (marked read here), go to ``archive``."""
    # The new file and the archive's lines, each one buffer written as it fills: not a list
    # of element-sized pieces, which filled the reader's small-object arenas at every pass.
    out = bytearray()
    moved = bytearray()
    kept = kept_seen = offset = size = pending = moving = 0
    tail = mark = b""

    def flush_archive() -> None:
        nonlocal moving
        if moved:
            append_line(archive, bytes(moved))
            moved.clear()
            moving = 0

    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with atomic_write_from(path) as write:
            for position, element in enumerate(elements(fd)):
                read = inbox_file.read_flag(element)  # None: not a message object, kept as a rewrite keeps it
                if read is False and position in flips:
                    at = inbox_file.false_at(element)
                    if at >= 0:
                        element = element[:at] + inbox_file.FLIP + element[at + len(inbox_file.FLIP) :]
                        read = True
                if read:
                    line = msgspec.json.format(element, indent=0)
                    if moved:
                        moved += b"\n"
                    moved += line
                    moving += len(line)
                    if moving > CHUNK:
                        flush_archive()
                else:
                    opening = b"" if kept else b"["
                    piece = opening + inbox_file.flag_in_a_page(
                        size + len(opening), (b",\n" if kept else b"\n") + element
                    )
                    out += piece
                    size += len(piece)
                    pending += len(piece)
                    tail = (tail + piece[-64:])[-64:]
                    kept += 1
                    if pending > CHUNK:
                        write(bytes(out))
                        out.clear()
                        pending = 0
                if position == seen - 1:
                    kept_seen, offset, mark = kept, size, tail
            flush_archive()  # the archive first: a crash from here on duplicates, never loses
            out += b"\n]\n" if kept else b"[]\n"
            write(bytes(out))
    finally:
        os.close(fd)
    if kept_seen == 0:
        offset, mark = 0, b""
    return Rewritten(inode=os.stat(path).st_ino, kept=kept_seen, offset=offset, mark=mark)
