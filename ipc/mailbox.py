"""One agent's inbox: ``teams/{team}/inboxes/{agent}.json``, a JSON array of messages.

Every mutation is lock → read → change → atomic replace. Reads take no lock: the file is
only ever replaced whole, so a reader sees one complete version.

Entries are kept as raw JSON between decode and encode, so an entry that does not decode
is skipped and reported when reading but written back byte for byte, never dropped. Read
messages past a threshold are moved to ``archive/{agent}.jsonl`` so an append costs the
same however long the history grows.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
from msgspec import UNSET, UnsetType

from ipc.clock import now_iso
from ipc.config import TeamConfigStore
from ipc.errors import CorruptFile, InvalidInput, NotFound
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.schemas import InboxMessage
from ipc.storage import (
    append_line,
    atomic_write,
    locked,
    quarantine,
    read_bytes,
    read_jsonl,
    refuse_claude_root,
)

log = logging.getLogger("agentteams.mailbox")

MAX_TEXT_BYTES = 1024 * 1024
_raw_list = msgspec.json.Decoder(list[msgspec.Raw])
_message = msgspec.json.Decoder(InboxMessage)
_encoder = msgspec.json.Encoder()


def archive_threshold() -> int:
    """Read messages kept in the inbox before older ones move to the archive."""
    return int(os.environ.get("AGENTTEAMS_INBOX_ARCHIVE_AFTER", "200"))


class _Entries:
    """The inbox as stored: raw entries, decoded only when someone needs the messages, so an
    append to a long inbox costs a JSON scan, not a decode of every message."""

    def __init__(self, path: Path, raw: list[msgspec.Raw], data: bytes = b"") -> None:
        self.path = path
        self.raw = raw
        self.data = data  # the file as read, for cheap byte-level checks
        self._good: list[tuple[int, InboxMessage]] | None = None
        self._skipped: list[int] = []

    def _decode(self) -> None:
        self._good, self._skipped = [], []
        for i, item in enumerate(self.raw):
            try:
                self._good.append((i, _message.decode(item)))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                self._skipped.append(i)
                log.warning("%s: entry %d is not a message (%s); skipped, kept in the file", self.path, i, exc)

    @property
    def good(self) -> list[tuple[int, InboxMessage]]:
        """(raw index, message) of every entry that decodes."""
        if self._good is None:
            self._decode()
        assert self._good is not None
        return self._good

    @property
    def skipped(self) -> list[int]:
        self.good  # noqa: B018 - decoding fills the list
        return self._skipped

    def messages(self) -> list[InboxMessage]:
        return [m for _, m in self.good]

    def append(self, message: InboxMessage) -> None:
        self.raw.append(msgspec.Raw(_encoder.encode(message)))
        if self._good is not None:
            self._good.append((len(self.raw) - 1, message))

    def set_raw(self, raw_index: int, message: InboxMessage) -> None:
        """Replace the entry at ``raw_index`` of the file without decoding the others."""
        self.raw[raw_index] = msgspec.Raw(_encoder.encode(message))
        if self._good is not None:
            self._good = [(i, message if i == raw_index else m) for i, m in self._good]

    def replace(self, position: int, message: InboxMessage) -> None:
        """Replace the message at ``position`` of :attr:`good`."""
        raw_index, _ = self.good[position]
        self.raw[raw_index] = msgspec.Raw(_encoder.encode(message))
        self.good[position] = (raw_index, message)

    def keep_only(self, keep: list[int]) -> None:
        """Keep the raw entries at the given indices (in order)."""
        remap = {old: new for new, old in enumerate(keep)}
        self.raw = [self.raw[i] for i in keep]
        if self._good is not None:
            self._good = [(remap[i], m) for i, m in self._good if i in remap]
            self._skipped = [remap[i] for i in self._skipped if i in remap]

    def clear(self) -> None:
        self.raw, self._good, self._skipped = [], [], []


def _parse(path: Path, data: bytes) -> _Entries:
    try:
        raw = _raw_list.decode(data) if data.strip() else []
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptFile(path, f"not a JSON array of messages ({exc})") from exc
    return _Entries(path, raw, data)


# `"read": true` as a member of the top-level object: a comma or brace before it, no text
# around it, so a message whose text merely contains those words is never skipped.
_READ_TRUE = re.compile(rb'[{,]\s*"read"\s*:\s*true\s*[,}]')


def _read_markers(data: bytes) -> int:
    """How many entries may be read, counted in the bytes without decoding. It can count
    too many (the words inside a message text), which only costs a decode."""
    return data.count(b'"read": true') + data.count(b'"read":true')


class Mailbox:
    """The inbox of ``agent`` in ``team``. Usable from any process, no supervisor needed."""

    def __init__(self, root: str | os.PathLike[str] | None, team: str, agent: str) -> None:
        self.paths = TeamPaths(root, team)
        self.agent = normalise_agent_name(agent)
        self.path = self.paths.inbox(self.agent)

    # ------------------------------------------------------------ reading (no lock)

    def exists(self) -> bool:
        return self.path.exists()

    def _load(self) -> _Entries:
        data = read_bytes(self.path)
        return _Entries(self.path, []) if data is None else _parse(self.path, data)

    def read(self) -> list[InboxMessage]:
        """Every message in the inbox, oldest first; undecodable entries are skipped."""
        return self._load().messages()

    def unread(self) -> list[InboxMessage]:
        return [m for _, m in self.unread_entries()]

    def unread_entries(self) -> list[tuple[int, InboxMessage]]:
        """(position in the file, message) of every unread message. Entries whose bytes say
        ``"read": true`` are not decoded at all, so waking on a long history stays cheap."""
        entries = self._load()
        found = []
        for i, item in enumerate(entries.raw):
            if _READ_TRUE.search(bytes(item)):
                continue
            try:
                message = _message.decode(item)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # reported by read(); never blocks the rest
            if not message.read:
                found.append((i, message))
        return found

    def skipped(self) -> list[int]:
        """Raw positions of entries that do not decode as messages (kept in the file)."""
        return self._load().skipped

    def history(self) -> list[InboxMessage]:
        """Archived messages followed by the inbox: everything ever delivered here."""
        return read_jsonl(self.paths.inbox_archive(self.agent), InboxMessage) + self.read()

    # ------------------------------------------------------------ writing (under the lock)

    def _mutate(self, change: Callable[[_Entries], bool]) -> None:
        """Run ``change`` on the entries under the lock; write back if it returns True."""
        refuse_claude_root(self.paths.root)
        with locked(self.path):
            data = read_bytes(self.path)
            try:
                entries = _Entries(self.path, []) if data is None else _parse(self.path, data)
            except CorruptFile as exc:
                # Keep the bad bytes beside the inbox and start afresh: one torn file must
                # not stop the team. A person can inspect the quarantined copy.
                kept = quarantine(self.path)
                log.error("%s; moved to %s, inbox restarted empty", exc.message, kept)
                entries = _Entries(self.path, [])
            if change(entries):
                self._archive_if_long(entries)
                atomic_write(self.path, msgspec.json.format(_encoder.encode(entries.raw), indent=2) + b"\n")

    def _archive_if_long(self, entries: _Entries) -> None:
        threshold = archive_threshold()
        if len(entries.raw) <= threshold or _read_markers(entries.data) <= threshold:
            return  # cheap checks first: no decode on the common path
        read_positions = {i for i, m in entries.good if m.read}
        if len(read_positions) <= threshold:
            return
        # Archive first, then rewrite the inbox: a crash between the two can duplicate a
        # line in the archive but can never lose a message.
        lines = b"".join(_encoder.encode(m) + b"\n" for i, m in entries.good if i in read_positions)
        append_line(self.paths.inbox_archive(self.agent), lines.rstrip(b"\n"))
        entries.keep_only([i for i in range(len(entries.raw)) if i not in read_positions])

    def create(self) -> None:
        """Create an empty inbox if there is none."""
        self._mutate(lambda entries: not self.path.exists())

    def append_message(self, message: InboxMessage) -> InboxMessage:
        if len(message.text.encode()) > MAX_TEXT_BYTES:
            raise InvalidInput(
                f"message to {self.agent} is {len(message.text.encode())} bytes; the limit is {MAX_TEXT_BYTES}"
            )

        def add(entries: _Entries) -> bool:
            entries.append(message)
            return True

        self._mutate(add)
        return message

    def append(
        self,
        sender: str,
        text: str,
        summary: str | UnsetType | None = UNSET,
        color: str | UnsetType | None = UNSET,
        *,
        member_checked: bool = False,
    ) -> InboxMessage:
        """Append an unread message and return it as stored. Requires the team to exist and
        ``agent`` to be a member (``member_checked``: the caller has just verified it): an
        inbox is never created for a stranger."""
        if not member_checked:
            TeamConfigStore(self.paths.root, self.paths.team).require_member(self.agent)
        message = InboxMessage(
            from_=sender,
            text=text,
            timestamp=now_iso(),
            read=False,
            summary=UNSET if summary is None else summary,
            color=UNSET if color is None else color,
        )
        return self.append_message(message)

    def _mark(self, entries: _Entries, positions: Sequence[int]) -> list[InboxMessage]:
        marked: list[InboxMessage] = []
        for pos in positions:
            message = entries.good[pos][1]
            if message.read:
                continue
            updated = msgspec.structs.replace(message, read=True)
            entries.replace(pos, updated)
            marked.append(updated)
        return marked

    def mark_read(self, index: int) -> InboxMessage:
        """Mark the message at ``index`` of :meth:`read` as read."""
        result: list[InboxMessage] = []

        def change(entries: _Entries) -> bool:
            if not 0 <= index < len(entries.good):
                raise NotFound(f"{self.agent}'s inbox has {len(entries.good)} messages; no index {index}")
            result.extend(self._mark(entries, [index]) or [entries.good[index][1]])
            return True

        self._mutate(change)
        return result[0]

    def mark_read_where(self, predicate: Callable[[InboxMessage], bool]) -> list[InboxMessage]:
        """Mark every unread message that satisfies ``predicate``; returns them."""
        marked: list[InboxMessage] = []

        def change(entries: _Entries) -> bool:
            positions = [p for p, (_, m) in enumerate(entries.good) if not m.read and predicate(m)]
            marked.extend(self._mark(entries, positions))
            return bool(marked)

        self._mutate(change)
        return marked

    def mark_read_matching(self, message: InboxMessage, position: int | None = None) -> InboxMessage | None:
        """Mark the first unread message equal to ``message`` (as returned by :meth:`read`).
        ``position`` (from :meth:`unread_entries`) is tried first, so a long history is not
        decoded; if the file moved on since, every entry is searched."""
        found: list[InboxMessage] = []

        def change(entries: _Entries) -> bool:
            if position is not None and position < len(entries.raw):
                try:
                    at_position = _message.decode(entries.raw[position])
                except (msgspec.DecodeError, msgspec.ValidationError):
                    at_position = None
                if at_position == message:
                    found.append(msgspec.structs.replace(message, read=True))
                    entries.set_raw(position, found[0])
                    return True
            for position_, (_, candidate) in enumerate(entries.good):
                if candidate == message:
                    found.extend(self._mark(entries, [position_]))
                    return bool(found)
            return False

        self._mutate(change)
        return found[0] if found else None

    def mark_all_read(self) -> list[InboxMessage]:
        return self.mark_read_where(lambda _: True)

    def take(self, select: Callable[[list[InboxMessage]], int | None]) -> InboxMessage | None:
        """Atomically pick one message and mark it read: the hand-off to an agent's loop.

        ``select`` sees every message (read ones too, so indices are stable) and returns the
        index of the one to take, or None.
        """
        taken: list[InboxMessage] = []

        def change(entries: _Entries) -> bool:
            choice = select(entries.messages())
            if choice is None:
                return False
            taken.extend(self._mark(entries, [choice]))
            return bool(taken)

        self._mutate(change)
        return taken[0] if taken else None

    def clear(self) -> None:
        """Empty the inbox (the archive is left alone)."""

        def change(entries: _Entries) -> bool:
            entries.clear()
            return True

        self._mutate(change)
