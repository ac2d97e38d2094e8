"""One agent's inbox in the engine: the messages are the subject ``at.{team}.inbox.{agent}``
of the team's inbox stream, each published with its ``msg_id`` as ``Nats-Msg-Id`` (a
retried publish is not a second message); which of them are read is the key
``read.{agent}`` of the team's KV bucket: a floor (every message of this inbox up to that
stream sequence is read) and the read sequences above it.

Taking (the hand-off to an agent) is one compare-and-set on that key: two takers racing for
one message (an agent and a door, two hosts) cannot both have it, and every other reader,
on any host, sees the same read flags at once. (A JetStream consumer's ack would hide the
messages one reader has fetched from every other reader until it acks or gives them back;
a read state that is a key is exact for everyone.)

The same methods as :class:`~ipc.mailbox.Mailbox`; a position is a stream sequence.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import msgspec
from msgspec import UNSET, UnsetType

from ipc import inbox_file
from ipc.config import TeamConfigStore
from ipc.engine.feed import InboxFeed
from ipc.engine.team import EngineTeam, Stale
from ipc.errors import Conflict, NotFound
from ipc.mailbox import Mailbox, decode_message, new_message, new_msg_id
from ipc.paths import TeamPaths
from ipc.preserve import read_object
from ipc.schemas import InboxMessage


class ReadState(msgspec.Struct, forbid_unknown_fields=False):
    floor: int = 0
    read: list[int] = []
    # The ids of the latest takes: a taker whose write was stored but not acknowledged, and
    # then built on by another, finds its own id here and hands its messages over after all.
    takes: list[str] = []


TAKES_KEPT = 32


_state_decoder = msgspec.json.Decoder(ReadState)


def entry_msg_id(raw: bytes) -> str:
    """The entry's ``msg_id`` if it has one (else a fresh one: a publish needs an id)."""
    obj = read_object(raw) or {}
    found = obj.get("msg_id")
    return found if isinstance(found, str) and found else new_msg_id()


class EngineMailbox(Mailbox):
    def __init__(self, paths: TeamPaths, agent: str, engine: EngineTeam, store: TeamConfigStore) -> None:
        self._bind(paths, agent)
        self.engine = engine
        self.store = store
        self.key = f"read.{self.agent}"
        self.subject = engine.inbox_subject(self.agent)
        self.feed: InboxFeed = engine.feeds.get(self.agent) or engine.feeds.setdefault(
            self.agent, InboxFeed(engine, self.agent)
        )

    # ------------------------------------------------------------ the read state

    def _state(self, fresh: bool = False) -> tuple[ReadState, int]:
        """The read state and the revision it was read at."""
        entry, rev = self.engine.lookup(self.key, fresh=fresh)
        if entry is None:
            return ReadState(), rev
        try:
            return self.engine.decoded(self.key, entry, _state_decoder.decode), rev
        except (msgspec.DecodeError, msgspec.ValidationError):
            return ReadState(), rev  # damaged: everything counts as unread, nothing is lost

    def _started(self, state: ReadState) -> None:
        if not self.feed.start_seq:
            self.feed.start(state.floor + 1)
            self.feed.sync()

    def _view(self, *, sync: bool = True) -> list[tuple[int, bytes, bool]]:
        """(sequence, entry, read) of every message above the floor, oldest first."""
        state, _ = self._state()
        self._started(state)
        if sync:
            self.feed.sync()
            state, _ = self._state()
        read = set(state.read)
        return [(seq, raw, seq in read) for seq, raw in self.feed.snapshot() if seq > state.floor]

    def _decoded(self, raw: bytes, read: bool, seq: int) -> InboxMessage | None:
        message = decode_message(raw)
        if message is None:
            self._report(msgspec.Raw(raw), seq)
            return None
        return msgspec.structs.replace(message, read=read) if message.read != read else message

    # ------------------------------------------------------------ reading

    def exists(self) -> bool:
        return self.store.config_member(self.agent) is not None or bool(self.feed.last_seq())

    def read(self) -> list[InboxMessage]:
        return [m for _, m in self._history()]

    def _history(self) -> list[tuple[int, InboxMessage]]:
        state, _ = self._state(fresh=True)
        read = set(state.read)
        found = []
        for seq, raw in self.feed.history():
            message = self._decoded(raw, seq <= state.floor or seq in read, seq)
            if message is not None:
                found.append((seq, message))
        return found

    def history(self) -> list[InboxMessage]:
        return self.read()

    def unread(self) -> list[InboxMessage]:
        return [m for _, m in self.unread_entries()]

    def unread_entries(self, after: int = 0) -> list[tuple[int, InboxMessage]]:
        """(sequence, message) of every unread message above sequence ``after``: only those
        are decoded (the lead's desk looks past what it judged, however many wait)."""
        found = []
        for seq, raw, read in self._view():
            message = None if read or seq <= after else self._decoded(raw, False, seq)
            if message is not None:
                found.append((seq, message))
        return found

    def has_unread(self) -> bool:
        return any(not read for _, _, read in self._view())

    def skipped(self) -> list[int]:
        return [seq for seq, raw in self.feed.history() if decode_message(raw) is None]

    # ------------------------------------------------------------ writing

    def create(self) -> None:
        """Nothing to create: an inbox is a subject, there once a message is."""

    def append_message(self, message: InboxMessage) -> InboxMessage:
        self.check_size(message)
        if not isinstance(message.msg_id, str) or not message.msg_id:
            message = msgspec.structs.replace(message, msg_id=new_msg_id())
        self.append_raw(inbox_file.encode_entry(message))
        return message

    def append_once(self, message: InboxMessage) -> InboxMessage:
        """A retried append is one message: the publish carries its ``msg_id``, which the
        stream's duplicate window recognises."""
        return self.append_message(message)

    def append_handed(self, message: InboxMessage, hand: Callable[[InboxMessage], bool]) -> InboxMessage:
        """Offer ``message`` to ``hand`` first; one it delivered some other way is stored and
        then taken at once, so it is read for every reader. There is no lock across the two
        steps as a file has: a mirror copying this inbox in between could see it unread for
        that moment."""
        message = msgspec.structs.replace(message, read=False)
        handed = hand(message)
        stored = self.append_message(message)
        if handed:
            self.take_where(lambda m: m.msg_id == stored.msg_id, limit=1)
            return msgspec.structs.replace(stored, read=True)
        return stored

    def append_raw(self, entry: bytes) -> None:
        self.publish(entry, entry_msg_id(entry))

    def publish(self, entry: bytes, msg_id: str) -> tuple[int, bool]:
        """Publish ``entry`` under ``msg_id``; (stream sequence, was it a duplicate)."""
        return self.engine.publish(self.subject, entry, msg_id, f"sending to {self.agent}")

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
        if not member_checked:
            self.store.require_member(self.agent)
        message = new_message(sender, text, summary, color, v2=v2, paths=self.paths)
        return self.append_message(message)

    # ------------------------------------------------------------ taking

    def take(
        self,
        choose: Callable[[list[tuple[int, InboxMessage]]], int | None],
        *,
        limit: int = 1,
    ) -> list[InboxMessage]:
        """Pick unread messages and mark them read in one compare-and-set of the read state;
        a taker that loses the race looks again at what is left."""
        for _ in range(64):
            state, rev = self._state()
            self._started(state)
            read = set(state.read)
            unread: list[tuple[int, InboxMessage]] = []
            for seq, raw in self.feed.snapshot():
                if seq > state.floor and seq not in read:
                    message = self._decoded(raw, False, seq)
                    if message is not None:
                        unread.append((seq, message))
            taken: list[InboxMessage] = []
            picks: list[int] = []
            remaining = list(unread)
            while remaining and len(picks) < limit:
                choice = choose(remaining)
                if choice is None:
                    break
                seq, message = remaining.pop(choice)
                picks.append(seq)
                taken.append(msgspec.structs.replace(message, read=True))
            if not picks:
                return []
            left = [seq for seq, _ in remaining]
            floor = max(state.floor, (min(left) - 1) if left else self.feed.top)
            take_id = os.urandom(8).hex()
            new = ReadState(
                floor=floor,
                read=sorted(s for s in read.union(picks) if s > floor),
                takes=[*state.takes, take_id][-TAKES_KEPT:],
            )
            try:
                self.engine.write(self.key, msgspec.json.encode(new), rev)
            except Stale:
                now, _ = self._state(fresh=True)
                if take_id not in now.takes:
                    continue
            self.feed.prune(floor)
            return taken
        raise Conflict(f"{self.agent}'s inbox kept changing under us; try again")

    def take_where(
        self, predicate: Callable[[InboxMessage], bool], limit: int = 1_000_000
    ) -> list[InboxMessage]:
        def first(unread: list[tuple[int, InboxMessage]]) -> int | None:
            return next((i for i, (_, m) in enumerate(unread) if predicate(m)), None)

        return self.take(first, limit=limit)

    def _take_seqs(self, seqs: Sequence[int]) -> list[InboxMessage]:
        wanted = list(seqs)

        def pick(unread: list[tuple[int, InboxMessage]]) -> int | None:
            while wanted:
                seq = wanted.pop(0)
                found = next((i for i, (s, _) in enumerate(unread) if s == seq), None)
                if found is not None:
                    return found
            return None

        return self.take(pick, limit=len(wanted))

    def mark_read(self, index: int) -> InboxMessage:
        messages = self._history()
        if not 0 <= index < len(messages):
            raise NotFound(f"{self.agent}'s inbox has {len(messages)} messages; no index {index}")
        seq, message = messages[index]
        if not message.read:
            self._take_seqs([seq])
        return msgspec.structs.replace(message, read=True)

    def mark_read_where(self, predicate: Callable[[InboxMessage], bool]) -> list[InboxMessage]:
        return self.take_where(predicate)

    def mark_read_matching(self, message: InboxMessage, position: int | None = None) -> InboxMessage | None:
        def same(unread: list[tuple[int, InboxMessage]]) -> int | None:
            unread_plain = [(s, msgspec.structs.replace(m, read=message.read)) for s, m in unread]
            exact = next((i for i, (s, m) in enumerate(unread_plain) if s == position and m == message), None)
            if exact is not None:
                return exact
            return next((i for i, (_, m) in enumerate(unread_plain) if m == message), None)

        taken = self.take(same)
        return taken[0] if taken else None

    def mark_positions(self, positions: Sequence[int], expect: Sequence[InboxMessage]) -> list[InboxMessage]:
        return self._take_seqs(positions)

    def mark_all_read(self) -> list[InboxMessage]:
        return self.take_where(lambda _: True)

    def clear(self) -> None:
        """Mark everything read (the engine keeps the history)."""
        self.mark_all_read()
