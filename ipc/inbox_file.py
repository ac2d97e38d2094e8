"""The inbox file: a JSON array of message objects, edited in place on the hot path.

Claude Code writes these files with ``JSON.stringify(messages, null, 2)``; so do we. In that
format an element starts at ``\\n  {`` (two spaces, at no other depth) and its top-level
``read`` flag is ``\\n    "read": false``. That lets the two hot-path writes touch only a few
bytes, under the file's lock:

- append: ``,\\n  {new}\\n]\\n`` written over the array's closing bracket, after checking that
  the last element is whole; or, where a rewrite left room (spaces) before the bracket,
  ``,\\n  {new}`` into it (see :func:`append_in_place`);
- mark read: ``false`` becomes ``true `` (same length) in place.

Past 32 KiB our files differ from that only in whitespace: the room a rewrite leaves before
the bracket (:func:`rewrite_with_room`), and a few spaces before a comma that keep each read
flag inside one page (:func:`flag_in_a_page`).

A kill in the middle of either hot-path write leaves a tail that does not parse. Readers
never act on such a file (they retry under the lock), and the next locked writer repairs it
with :func:`repair`: a half-flipped flag is set back to ``false`` (the message was not
handed over) and a half-written last element is cut (it was never acknowledged). Anything
else, and every rewrite that moves bytes, goes through temp file + rename.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ipc.errors import StorageError
from ipc.inbox_end import COPY_CHUNK, content_end
from ipc.preserve import read_object
from ipc.schemas import InboxMessage
from ipc.storage import PAGE, atomic_write_from, within_a_page

ELEMENT_START = b"\n  {"
ROOM_FROM = 32 * 1024  # an inbox this long is rewritten for an append with room: below, a rewrite is cheap
READ_FALSE = b'\n    "read": false'
_FLIP = b"true "  # same length as b"false": JSON allows the trailing space


class _Head(msgspec.Struct):
    """The one top-level field of an entry the hot path needs."""

    read: bool = False


_message = msgspec.json.Decoder(InboxMessage)
_raw_list = msgspec.json.Decoder(list[msgspec.Raw])
_heads = msgspec.json.Decoder(list[_Head])
_head = msgspec.json.Decoder(_Head)
_encoder = msgspec.json.Encoder()


class NotAnInbox(ValueError):
    """The bytes are not a JSON array (torn, or not an inbox at all)."""


@dataclass
class Snapshot:
    """An inbox as read: its bytes, raw entries, and each entry's read flag (None for an
    entry that is not a message object: skipped, kept, reported)."""

    data: bytes
    raws: list[msgspec.Raw]
    reads: list[bool | None]

    def unread(self) -> list[int]:
        return [i for i, flag in enumerate(self.reads) if flag is False]

    def read_count(self) -> int:
        return sum(1 for flag in self.reads if flag is True)

    def offset_of(self, index: int) -> int:
        """Byte offset of entry ``index`` in :attr:`data` (-1 if it cannot be found)."""
        # Entries are in order and separated by at least one byte, so the sum of the
        # lengths before ``index`` is a lower bound for its offset.
        lower = sum(map(len, itertools.islice(self.raws, index))) + index
        return self.data.find(self.raws[index], lower)


def parse(data: bytes) -> Snapshot:
    """Raises NotAnInbox if ``data`` is not a JSON array."""
    if not data.strip():
        return Snapshot(data, [], [])
    try:
        raws = _raw_list.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise NotAnInbox(str(exc)) from exc
    try:
        reads: list[bool | None] = [h.read for h in _heads.decode(data)]
    except (msgspec.DecodeError, msgspec.ValidationError):
        reads = [read_flag(raw) for raw in raws]  # one bad entry: look at each on its own
    return Snapshot(data, raws, reads)


class _ContentEntry(msgspec.Struct):
    """An entry that names its text ``content`` (agent-team-mail accepts that as an alias)."""

    content: str


_content = msgspec.json.Decoder(_ContentEntry)


def decode_message(raw: msgspec.Raw | bytes) -> InboxMessage | None:
    try:
        return _message.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    try:  # the alias: the same entry with ``text`` taken from ``content`` (the file is not changed)
        text = _content.decode(raw).content
        fields = msgspec.json.decode(raw)
        return msgspec.convert({**fields, "text": text}, InboxMessage)
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError):
        return None


def read_flag(raw: msgspec.Raw | bytes) -> bool | None:
    """An entry's top-level ``read`` flag, or None if the entry is not a message object."""
    try:
        return _head.decode(raw).read
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def element(raw: bytes) -> bytes:
    """One entry formatted as an element of the array (two-space indent, no newline)."""
    return msgspec.json.format(b"[" + raw + b"]", indent=2)[2:-2]


def format_array(raws: list[msgspec.Raw] | list[bytes]) -> bytes:
    if not raws:
        return b"[]\n"
    out = bytearray(b"[")
    for i, raw in enumerate(raws):
        out += flag_in_a_page(len(out), (b",\n" if i else b"\n") + element(bytes(raw)))
    out += b"\n]\n"
    return bytes(out)


def encode_entry(obj: object) -> bytes:
    return _encoder.encode(obj)


# ---------------------------------------------------------------- in-place append


def _prefix_after(body: bytes, whole: bool) -> bytes | None:
    """What goes before a new element appended after ``body`` (the array up to its last
    element, ``whole``: from the file's start), or None when the last element cannot be
    vouched for: torn, another format, or too short a chunk to see where it starts."""
    if body.endswith(b"["):
        return b"\n" if whole and body.strip() == b"[" else None
    if not body.endswith(b"}"):
        return None
    start = body.rfind(ELEMENT_START)
    if start < 0 or (start == 0 and not whole):
        return None
    before = body[:start].rstrip()
    if not before.endswith((b",", b"[")):
        return None
    try:
        _head.decode(body[start + 3 :])  # the last element must be one whole object
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return b",\n"


@dataclass(frozen=True)
class Placement:
    """Where an append writes: ``block`` (the new element and the comma before it) at
    ``offset``, then ``tail``: nothing when in the room before the closing bracket, which
    stays where it is (the file does not grow), else the bracket written past it."""

    offset: int
    block: bytes
    tail: bytes = b""

    @property
    def data(self) -> bytes:
        return self.block + self.tail

    @property
    def in_room(self) -> bool:
        return not self.tail


def append_in_place(fd: int, size: int, entry_block: bytes, after: int = 0) -> Placement | None:
    """Where to write ``entry_block`` (an :func:`element`) to append it to the open inbox of
    ``size`` bytes, or None if the tail is not sound (rewrite the file instead).

    In the room a rewrite left before the closing bracket when it fits there inside one page
    (at the next page's start if it would cross one: the spaces before it stay, as JSON
    allows), so that a kill cannot tear it; else over the bracket, the file growing (the
    caller writes that in place only if it stays inside one page). ``after``: as for
    :func:`content_end`."""
    found = content_end(fd, size, after)
    if found is None:
        return None
    end, bracket = found
    chunk = min(end, 4096)
    while True:
        prefix = _prefix_after(os.pread(fd, chunk, end - chunk), whole=chunk == end)
        if prefix is not None or chunk == end:
            break
        chunk = min(end, chunk * 16)
    if prefix is None:
        return None
    for start in (end, -(-end // PAGE) * PAGE):
        block = flag_in_a_page(start, prefix + entry_block)
        if within_a_page(start, len(block)) and start + len(block) < bracket:
            return Placement(start, block)
    block = flag_in_a_page(end, prefix + entry_block)
    gap = b" " * max(0, bracket - (end + len(block) + 1))  # the new bracket lands on or past the old
    return Placement(end, block, b"\n" + gap + b"]\n")


def flag_in_a_page(start: int, block: bytes) -> bytes:
    """``block`` (an element and what leads it) as written at ``start``, led by the few
    spaces (JSON allows them before the comma) that move its read flag to the next page if
    it would lie across a boundary. Such a flag cannot be flipped in place (a kill could
    tear it), so taking that message would cost a pass over the whole file: one message in
    about a thousand, a pass every few seconds for the supervisor at a long pile in the
    lead's inbox. Every writer of ours lays entries out so past :data:`ROOM_FROM` (before it,
    a rewrite is cheap, and the file keeps Claude Code's format byte for byte)."""
    at = false_at(block)
    if at < 0 or start + at < ROOM_FROM or within_a_page(start + at, len(FLIP)):
        return block
    return b" " * (PAGE - (start + at) % PAGE) + block


def rewrite_with_room(fd: int, path: Path, size: int, plan: Placement) -> None:
    """Rewrite the inbox open at ``fd`` (``size`` bytes; the caller holds the lock) as it is
    up to its last element, copied a chunk at a time (neither parsed nor held whole: a pile
    of unread reports can be megabytes), then the new element and room for the next appends,
    an eighth of the file of spaces before the bracket: a pile is then rewritten once per an
    eighth of its length appended, so a rewrite costs each append about eight times its own
    bytes however long the pile grows (a fixed room made that grow with the pile: an hour's
    soak copied its 50 MB lead inbox every few seconds). The room is read only at its ends
    (:mod:`ipc.inbox_end`). The bytes before the new element stay where they were, so a
    reader's cursor holds."""
    with atomic_write_from(path) as write:
        done = 0
        while done < plan.offset:
            piece = os.pread(fd, min(COPY_CHUNK, plan.offset - done), done)
            if not piece:
                raise StorageError(f"{path} shrank under its lock while it was copied")
            write(piece)
            done += len(piece)
        write(plan.block + b"\n")
        room = size // 8
        for at in range(0, room, COPY_CHUNK):  # a chunk at a time: megabytes of spaces
            write(b" " * min(COPY_CHUNK, room - at))
        write(b"]\n")


def read_flag_offset(snapshot: Snapshot, index: int) -> int:
    """Offset of the ``false`` of entry ``index``'s top-level read flag, or -1 if it cannot
    be flipped in place (another format, or no ``read`` field)."""
    start = snapshot.offset_of(index)
    if start < 0:
        return -1
    at = false_at(bytes(snapshot.raws[index]))
    return -1 if at < 0 else start + at


def false_at(raw: bytes) -> int:
    """Offset within the entry ``raw`` of the ``false`` of its one top-level read flag, or -1
    if it cannot be flipped in place (another format, no such flag, or more than one)."""
    at = raw.find(READ_FALSE)
    if at < 0 or raw.find(READ_FALSE, at + 1) >= 0:
        return -1
    return at + len(READ_FALSE) - len(b"false")


# ---------------------------------------------------------------- repair

_TORN_FLAG = re.compile(rb'("read"\s*:\s*)([a-z ]{5})(?=\s*[,}])')


def repair(data: bytes) -> bytes | None:
    """A whole array recovered from a file torn by a crash, or None if nothing is.

    A flag caught half-flipped goes back to ``false``: its message was not yet handed over.
    A last element caught half-written is cut: its append was never acknowledged.
    """

    def fix(match: re.Match[bytes]) -> bytes:
        word = match.group(2)
        return match.group(0) if word in (b"true ", b"false") else match.group(1) + b"false"

    fixed = _TORN_FLAG.sub(fix, data)
    if _decodes(fixed):
        return fixed
    # Cut after the last element that closes (pretty format first, then any '}').
    for marker in (b"\n  }", b"}"):
        end = len(fixed)
        for _ in range(64):
            end = fixed.rfind(marker, 0, end)
            if end < 0:
                break
            candidate = fixed[: end + len(marker)] + b"\n]\n"
            if _decodes(candidate):
                return candidate
    start = fixed.lstrip()
    return b"[]\n" if start.startswith(b"[") else None


def only_tail_cut(data: bytes, repaired: bytes) -> bool:
    """True if ``repaired`` differs from ``data`` only by a half-written last element (or a
    half-flipped flag): nothing acknowledged was dropped."""
    if len(repaired) == len(data) and _TORN_FLAG.sub(b"", repaired) == _TORN_FLAG.sub(b"", data):
        return True
    kept = repaired.rstrip()[:-1].rstrip()  # without the closing bracket
    if not data.startswith(kept):
        return False
    return data[len(kept) :].count(ELEMENT_START) <= 1


def _decodes(data: bytes) -> bool:
    try:
        _raw_list.decode(data)
        return True
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False


FLIP = _FLIP


def with_read(raw: bytes) -> bytes:
    """The entry with ``read: true``, every other field kept as it was."""
    obj: dict[str, Any] | None = read_object(raw)
    if obj is None:
        return raw
    obj["read"] = True
    return msgspec.json.encode(obj)
