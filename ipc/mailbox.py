"""One agent's inbox: ``teams/{team}/inboxes/{agent}.json``, a JSON array of messages.

Writes hold the inbox's locks (:mod:`ipc.locks`). The two hot-path writes are done in place
(:mod:`ipc.inbox_file`): an append touches only the array's tail, a hand-off flips one
``read`` flag. Everything that moves bytes (archiving, repairs, other writers' formats) is
temp file + rename. Reads take no lock; a reader that catches a write half-done retries
under the lock, where a file torn by a crash is repaired before anyone acts on it.

Entries are kept as raw JSON: an entry that does not decode is skipped and reported but
kept byte for byte, and so are the fields of other writers. Read messages past a threshold
move to ``archive/{agent}.jsonl``, so the history never slows the hot path.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
from msgspec import UNSET, UnsetType

from ipc import inbox_file, trust
from ipc.boundary import os_errors
from ipc.clock import now_iso, now_ms
from ipc.config import TeamConfigStore
from ipc.errors import InvalidInput, NotFound, StorageError
from ipc.inbox_file import NotAnInbox, Snapshot
from ipc.inbox_file import decode_message as decode_message
from ipc.locks import is_claude_root
from ipc.locks import locked as locked
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.schemas import InboxMessage
from ipc.settings import env
from ipc.storage import (
    FileKey,
    append_line,
    atomic_write,
    ensure_dir,
    file_key,
    read_bytes,
    read_jsonl,
    within_a_page,
    write_at,
)

log = logging.getLogger("agentteams.mailbox")

MAX_TEXT_BYTES = 1024 * 1024
QUIET_SECONDS = 1.0  # how long an unchanged inbox is trusted to hold nothing unread (see _look)
_reported: set[tuple[str, bytes]] = set()  # (path, entry bytes) already warned about
_known_dirs: set[Path] = set()  # inbox directories seen to exist (the hot path skips the check)


def archive_threshold() -> int:
    """Read messages kept in the inbox before older ones move to the archive."""
    return int(env("AGENTTEAMS_INBOX_ARCHIVE_AFTER", "200"))


def new_msg_id() -> str:
    """A random UUID (version 4) as text, as 2.1.330 writes ``msg_id``; cheaper than
    :func:`uuid.uuid4` on the hot path."""
    h = bytearray(os.urandom(16))
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def new_message(
    sender: str,
    text: str,
    summary: str | UnsetType | None = UNSET,
    color: str | UnsetType | None = UNSET,
    *,
    v2: bool = False,
    paths: TeamPaths | None = None,
) -> InboxMessage:
    """An unread message, stamped now with a fresh ``msg_id``; ``v2`` adds Claude Code
    2.1.330's ``msgV`` and ``type``. Signed (:mod:`ipc.trust`) when this process holds the
    sender's key in the team of ``paths``."""
    message = InboxMessage(
        from_=sender,
        text=text,
        timestamp=now_iso(),
        read=False,
        summary=UNSET if summary is None else summary,
        color=UNSET if color is None else color,
        msg_id=new_msg_id(),
    )
    if v2:
        message.msg_v, message.type = 1, "message"
    return trust.sign_as(paths, message) if paths is not None else message


class Mailbox:
    """The inbox of ``agent`` in ``team``. Usable from any process, no supervisor needed."""

    def __init__(self, root: str | os.PathLike[str] | None, team: str, agent: str) -> None:
        self._bind(TeamPaths(root, team), agent)

    @classmethod
    def at(cls, paths: TeamPaths, agent: str) -> Mailbox:
        """The inbox of ``agent`` in the team of ``paths``."""
        box = cls.__new__(cls)
        box._bind(paths, agent)
        return box

    def _bind(self, paths: TeamPaths, agent: str) -> None:
        self.paths = paths
        self.agent = normalise_agent_name(agent)
        self.path = self.paths.inbox(self.agent)
        self._quiet: tuple[FileKey | None, float] = (None, 0.0)  # see take
        self._end: tuple[int, int] = (0, 0)  # (inode, offset): where this object's last append ended (a hint)
        self._store: TeamConfigStore | None = None  # the team's config, for appends not checked by the caller

    # ------------------------------------------------------------ reading (no lock)

    def exists(self) -> bool:
        return self.path.exists()

    def _snapshot(self) -> Snapshot:
        """The inbox now. A file caught mid-write (or torn) is read again under the lock."""
        data = read_bytes(self.path)
        if data is None:
            return Snapshot(b"", [], [])
        try:
            return inbox_file.parse(data)
        except NotAnInbox:
            return self._locked_snapshot()

    def _locked_snapshot(self) -> Snapshot:
        """The inbox once a writer under way is done; one still torn (its writer killed) as
        what parses: a look changes nothing, the next writer repairs it (keeping a copy)."""
        try:
            with locked(self.path, root=self.paths.root):
                data = read_bytes(self.path) or b"[]"
        except StorageError:  # a read-only root (another user's, or ~/.claude read-only)
            data = read_bytes(self.path) or b"[]"
        return inbox_file.parse(inbox_file.repair(data) or b"[]")

    def read(self) -> list[InboxMessage]:
        """Every message in the inbox, oldest first; undecodable entries are skipped."""
        return [m for _, m in self._messages(self._snapshot())]

    def _messages(self, snap: Snapshot, only: Sequence[int] | None = None) -> list[tuple[int, InboxMessage]]:
        found = []
        for i in range(len(snap.raws)) if only is None else only:
            message = decode_message(snap.raws[i]) if snap.reads[i] is not None else None
            if message is None:
                self._report(snap.raws[i], i)
                continue
            found.append((i, message))
        return found

    def _report(self, raw: msgspec.Raw, index: int) -> None:
        key = (str(self.path), bytes(raw)[:256])
        if key not in _reported:
            _reported.add(key)
            log.warning("%s: entry %d is not a message; skipped, kept in the file", self.path, index)

    def unread(self) -> list[InboxMessage]:
        return [m for _, m in self.unread_entries()]

    def unread_entries(self, after: int = -1) -> list[tuple[int, InboxMessage]]:
        """(position in the file, message) of every unread message past position ``after``.
        Only those are decoded, so a long read history costs one C-level scan."""
        snap = self._snapshot()
        return self._messages(snap, [i for i in snap.unread() if i > after])

    def has_unread(self) -> bool:
        return bool(self._snapshot().unread())

    def skipped(self) -> list[int]:
        """Raw positions of entries that do not decode as messages (kept in the file)."""
        snap = self._snapshot()
        return [i for i, raw in enumerate(snap.raws) if snap.reads[i] is None or decode_message(raw) is None]

    def history(self) -> list[InboxMessage]:
        """Archived messages followed by the inbox: everything ever delivered here."""
        return read_jsonl(self.paths.inbox_archive(self.agent), InboxMessage) + self.read()

    def _load_locked(self, seen: Snapshot | None = None) -> Snapshot:
        """The inbox as it stands (caller holds the lock); a file torn by a crash is
        repaired first, and a copy of anything that could not be kept goes beside it.
        ``seen``: a snapshot read moments ago, used again if the bytes are the same."""
        data = read_bytes(self.path)
        if data is None:
            return Snapshot(b"", [], [])
        if seen is not None and data == seen.data:
            return seen
        try:
            return inbox_file.parse(data)
        except NotAnInbox:
            pass
        repaired = inbox_file.repair(data)
        if repaired is None or len(repaired) != len(data):
            # Bytes are dropped (at best a half-written last element): keep them for a person.
            copy = self.path.with_name(f"{self.path.name}.corrupt-{now_ms()}")
            atomic_write(copy, data)
            if repaired is not None and inbox_file.only_tail_cut(data, repaired):
                log.warning(
                    "%s: a torn last write (a writer was killed) was cut; the original is kept as %s",
                    self.path,
                    copy.name,
                )
            else:
                log.error(
                    "%s was damaged; recovered what parses, the original is kept as %s", self.path, copy.name
                )
        atomic_write(self.path, repaired or b"[]\n")
        return inbox_file.parse(repaired or b"[]\n")

    def _rewrite(self, raws: list[msgspec.Raw] | list[bytes]) -> None:
        atomic_write(self.path, inbox_file.format_array(raws))

    def create(self) -> None:
        """Create an empty inbox if there is none."""
        if self.path.exists():
            return
        with locked(self.path, root=self.paths.root):
            if not self.path.exists():
                atomic_write(self.path, b"[]\n")

    def append_message(self, message: InboxMessage) -> InboxMessage:
        """Append ``message`` as stored; acknowledged (durable per the durability setting)
        when this returns."""
        self.check_size(message)
        self.append_raw(inbox_file.encode_entry(message))
        return message

    def check_size(self, message: InboxMessage) -> None:
        # The summary counts too: a short text with a 10 MB summary went past the limit.
        size = len(message.text.encode()) + len(message.summary_text.encode())
        if size > MAX_TEXT_BYTES:
            raise InvalidInput(f"message to {self.agent} is {size} bytes; the limit is {MAX_TEXT_BYTES}")

    def append_raw(self, entry: bytes) -> None:
        if self.path.parent not in _known_dirs:
            ensure_dir(self.path.parent)
            _known_dirs.add(self.path.parent)
        block = inbox_file.element(entry)  # formatted before the lock: the lock is held for less
        with locked(self.path, root=self.paths.root):
            self._append_locked(entry, block)

    def append_handed(self, message: InboxMessage, hand: Callable[[InboxMessage], bool]) -> InboxMessage:
        """Append ``message`` after offering it to ``hand`` under the inbox's lock: if ``hand``
        delivers it some other way (returns True) it is stored read, so no reader of the file
        (Claude Code's poll among them) ever sees it unread and delivers it a second time."""
        self.check_size(message)
        ensure_dir(self.path.parent)
        with locked(self.path, root=self.paths.root):
            stored = msgspec.structs.replace(message, read=hand(message))
            self._append_locked(inbox_file.encode_entry(stored))
        return stored

    def append_once(self, message: InboxMessage) -> InboxMessage:
        """Append ``message`` unless an entry with its ``msg_id`` is there already (a retry
        whose first attempt may have landed); returns what is stored."""
        self.check_size(message)
        ensure_dir(self.path.parent)
        with locked(self.path, root=self.paths.root):
            for _, stored in self._messages(self._load_locked()):
                if stored.msg_id == message.msg_id:
                    return stored
            self._append_locked(inbox_file.encode_entry(message))
        return message

    def _append_locked(self, entry: bytes, block: bytes = b"") -> None:
        """Append one encoded entry (caller holds the lock): in place (in the room before the
        bracket, or over it) when the write stays inside one page, so a kill cannot tear it;
        else one rewrite, with room past ``inbox_file.ROOM_FROM``. ``block``: ``entry`` as an element."""
        block = block or inbox_file.element(entry)
        with os_errors(f"cannot open {self.path}"):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            info = os.fstat(fd)
            size = info.st_size
            after = self._end[1] if self._end[0] == info.st_ino else 0
            plan = inbox_file.append_in_place(fd, size, block, after) if size else None
            if plan is not None and within_a_page(plan.offset, len(plan.data)):
                write_at(fd, self.path, plan.offset, plan.data)
                if plan.in_room:  # a newline past the end: an append always grows the file (see take)
                    write_at(fd, self.path, size, b"\n")
                self._end = (info.st_ino, plan.offset + len(plan.block))
                return
            if plan is not None and size >= inbox_file.ROOM_FROM:
                inbox_file.rewrite_with_room(fd, self.path, size, plan)
                self._end = (os.stat(self.path).st_ino, plan.offset + len(plan.block))
                return
        finally:
            os.close(fd)
        snap = self._load_locked() if size else Snapshot(b"", [], [])
        self._rewrite([*map(bytes, snap.raws), entry])

    def append(
        self,
        sender: str,
        text: str,
        summary: str | UnsetType | None = UNSET,
        color: str | UnsetType | None = UNSET,
        *,
        member_checked: bool = False,
        v2: bool = False,
    ) -> InboxMessage:
        """Append an unread message and return it as stored. Requires the team to exist and
        ``agent`` to be a member (``member_checked``: the caller has just verified it): an
        inbox is never created for a stranger. ``v2`` writes Claude Code 2.1.330's shape."""
        if not member_checked:
            if self._store is None:  # kept: its read is decoded again only when the file changed
                self._store = TeamConfigStore.at(self.paths)
            self._store.require_member(self.agent)
        return self.append_message(new_message(sender, text, summary, color, v2=v2, paths=self.paths))

    # ------------------------------------------------------------ taking (the hand-off)

    def take(
        self,
        choose: Callable[[list[tuple[int, InboxMessage]]], int | None],
        *,
        limit: int = 1,
    ) -> list[InboxMessage]:
        """Atomically pick unread messages and mark them read: the hand-off to an agent.

        ``choose`` sees the unread (position, message) pairs and returns the index into that
        list of the one to take next, or None; up to ``limit`` are taken in one locked pass.
        Returns them as stored (read). An inbox unchanged since this object last left nothing
        unread in it costs a stat (a look for work after a task's ring, a fallback poll).
        """
        key = file_key(self.path)
        if key is None or (key == self._quiet[0] and time.monotonic() < self._quiet[1]):
            return []
        seen = None
        if is_claude_root(self.paths.root):  # looked at first: nothing unread never holds up claude
            seen = self._snapshot()
            if not seen.unread():
                self._quiet = (key, time.monotonic() + QUIET_SECONDS)  # as of before the read
                return []
        taken: list[InboxMessage] = []
        with locked(self.path, root=self.paths.root):
            snap = self._load_locked(seen)
            unread = self._messages(snap, snap.unread())
            picks: list[int] = []
            while unread and len(picks) < limit:
                choice = choose(unread)
                if choice is None:
                    break
                position, message = unread.pop(choice)
                picks.append(position)
                taken.append(msgspec.structs.replace(message, read=True))
            now = self._mark(snap, picks) if picks else None
            if not unread:  # nothing left unread: trusted while the file stays as it is now, for
                # QUIET_SECONDS: an append grows it, a rewrite is a new inode, a flip marks read
                self._quiet = (now or file_key(self.path), time.monotonic() + QUIET_SECONDS)
        return taken

    def take_where(
        self, predicate: Callable[[InboxMessage], bool], limit: int = 1_000_000
    ) -> list[InboxMessage]:
        """Take every unread message that satisfies ``predicate`` (up to ``limit``)."""

        def first(unread: list[tuple[int, InboxMessage]]) -> int | None:
            return next((i for i, (_, m) in enumerate(unread) if predicate(m)), None)

        return self.take(first, limit=limit)

    def _mark(self, snap: Snapshot, positions: Sequence[int]) -> FileKey | None:
        """Mark entries read (caller holds the lock): in place when every flag can be flipped
        and no archiving is due (then returns the file's key as it now is), else one rewrite."""
        offsets = [inbox_file.read_flag_offset(snap, p) for p in positions]
        in_place = all(o >= 0 and within_a_page(o, len(inbox_file.FLIP)) for o in offsets)
        if in_place and snap.read_count() + len(positions) <= archive_threshold():
            with os_errors(f"cannot open {self.path}"):
                fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
            try:
                for offset in sorted(offsets):
                    write_at(fd, self.path, offset, inbox_file.FLIP)
                info = os.fstat(fd)
            finally:
                os.close(fd)
            return (info.st_ino, info.st_mtime_ns, info.st_size)
        raws: list[bytes] = [bytes(r) for r in snap.raws]
        reads = list(snap.reads)
        for p in positions:
            raws[p] = inbox_file.with_read(raws[p])
            reads[p] = True
        self._write_archiving(raws, reads)
        return None

    def _write_archiving(self, raws: list[bytes], reads: list[bool | None]) -> None:
        """Rewrite the inbox; past the threshold, read messages move to the archive first
        (a crash between the two can duplicate an archive line, never lose a message)."""
        if sum(1 for r in reads if r is True) > archive_threshold():
            moved = [raw for raw, r in zip(raws, reads, strict=True) if r is True]
            lines = b"\n".join(msgspec.json.format(m, indent=0) for m in moved)  # one line each
            append_line(self.paths.inbox_archive(self.agent), lines)
            raws = [raw for raw, r in zip(raws, reads, strict=True) if r is not True]
        self._rewrite(raws)

    def mark_read(self, index: int) -> InboxMessage:
        """Mark the message at ``index`` of :meth:`read` as read."""
        with locked(self.path, root=self.paths.root):
            snap = self._load_locked()
            messages = self._messages(snap)
            if not 0 <= index < len(messages):
                raise NotFound(f"{self.agent}'s inbox has {len(messages)} messages; no index {index}")
            position, message = messages[index]
            if not message.read:
                self._mark(snap, [position])
            return msgspec.structs.replace(message, read=True)

    def mark_read_where(self, predicate: Callable[[InboxMessage], bool]) -> list[InboxMessage]:
        """Mark every unread message that satisfies ``predicate``; returns them."""
        return self.take_where(predicate)

    def mark_read_matching(self, message: InboxMessage, position: int | None = None) -> InboxMessage | None:
        """Mark the first unread message equal to ``message`` (as returned by :meth:`read`)."""

        taken = self.take(lambda unread: _find(unread, position, message))
        return taken[0] if taken else None

    def mark_positions(self, positions: Sequence[int], expect: Sequence[InboxMessage]) -> list[InboxMessage]:
        """Mark the entries at ``positions`` read if they still hold ``expect`` (as scanned);
        those that moved are looked for by content. Returns what was marked."""
        wanted = list(zip(positions, expect, strict=True))

        def pick(unread: list[tuple[int, InboxMessage]]) -> int | None:
            while wanted:
                found = _find(unread, *wanted.pop(0))
                if found is not None:
                    return found
            return None

        return self.take(pick, limit=len(wanted))

    def mark_all_read(self) -> list[InboxMessage]:
        return self.take_where(lambda _: True)

    def clear(self) -> None:
        """Empty the inbox (the archive is left alone)."""
        with locked(self.path, root=self.paths.root):
            atomic_write(self.path, b"[]\n")


def _find(unread: list[tuple[int, InboxMessage]], position: int | None, message: InboxMessage) -> int | None:
    """The index in ``unread`` of ``message`` at ``position``, else of the first equal to it."""
    exact = next((i for i, (p, m) in enumerate(unread) if p == position and m == message), None)
    return exact if exact is not None else next((i for i, (_, m) in enumerate(unread) if m == message), None)
