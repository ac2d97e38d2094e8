"""A host's copy of an engine team in Claude Code's layout under its root, kept both ways, so
that a ``claude`` teammate on this host (which reads and writes only files) and inspection
tools (``ps --root``) see the team.

- Engine → files: the config becomes ``config.json``; each task ``tasks/{team}/{id}.json``
  (and ``.highwatermark``); each inbox's messages are appended to ``inboxes/{agent}.json``
  and their read flags follow the engine's read state.
- Files → engine: an inbox entry the engine has not seen (what Claude Code wrote) is
  published under its ``msg_id`` (2.1.38 writes none: then an id made from the entry's
  content, the same on both sides), and its recipient is rung; an entry Claude Code marked
  read (2.1.38) or pruned (2.1.330) is marked read in the engine; a task file Claude Code
  changed is written back by compare-and-set (if the engine's copy changed meanwhile, the
  engine wins and the file is rewritten).

Every file write takes the locks every writer there honours (:mod:`ipc.locks`, Claude Code's
``mkdir`` lock in a Claude Code root). Nothing is echoed: an entry is known by its id on
both sides, and a file this mirror wrote is recognised by its identity (inode, mtime, size).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import msgspec

from ipc.config import TeamConfigStore
from ipc.engine.config_store import KEY as CONFIG_KEY
from ipc.engine.mailbox import EngineMailbox
from ipc.engine.tasks import HWM, task_key
from ipc.engine.team import EngineTeam, Stale
from ipc.errors import AgentTeamsError
from ipc.inbox_file import NotAnInbox, parse
from ipc.locks import locked
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.preserve import read_object
from ipc.storage import FileKey, atomic_write, ensure_dir, file_key, read_bytes
from ipc.task_window import task_ids

log = logging.getLogger("agentteams.mirror")


def entry_id(agent: str, raw: bytes) -> str:
    """An inbox entry's identity on both sides: its ``msg_id``, else (Claude Code 2.1.38
    writes none) a digest of who sent what when to whom."""
    obj = read_object(raw) or {}
    found = obj.get("msg_id")
    if isinstance(found, str) and found:
        return found
    basis = "\0".join(str(obj.get(k, "")) for k in ("from", "timestamp", "text"))
    return "cc-" + hashlib.sha256(f"{agent}\0{basis}".encode()).hexdigest()[:32]


class Mirror:
    def __init__(self, paths: TeamPaths, engine: EngineTeam, mailbox: Any, ring: Any) -> None:
        """``mailbox(name)`` gives the engine inbox of a member; ``ring(name)`` its doorbell."""
        self.paths = paths
        self.engine = engine
        self.mailbox = mailbox
        self.ring = ring
        self.files = TeamConfigStore.at(paths)
        self.written: dict[str, FileKey | None] = {}  # file → identity after our last write
        self.synced: dict[str, int] = {}  # engine key → revision last copied into its file
        self.in_file: dict[str, set[str]] = {}  # inbox → ids the file was seen to hold
        self.history: dict[str, dict[str, int]] = {}  # inbox → id → stream sequence, ever held

    # ------------------------------------------------------------ one pass

    def step(self) -> None:
        """Copy what changed since the last pass, both ways."""
        members = self._config()
        self._tasks()
        for name in members:
            try:
                self._inbox(name)
            except AgentTeamsError as exc:
                log.warning("mirror: %s's inbox: %s", name, exc.message)

    def _changed_on_disk(self, path: Any) -> bool:
        return file_key(path) != self.written.get(str(path))

    def _write(self, path: Any, data: bytes, *, also: Any = None) -> None:
        with locked(path if also is None else also, root=self.paths.root) as guard:
            if also is not None:
                guard.also(path)
            atomic_write(path, data)
        self.written[str(path)] = file_key(path)

    # ------------------------------------------------------------ config

    def _config(self) -> list[str]:
        entry = self.engine.get(CONFIG_KEY)
        if entry is None:
            return []
        if self.synced.get(CONFIG_KEY) != entry.rev or self._changed_on_disk(self.paths.config):
            ensure_dir(self.paths.inboxes)
            self._write(self.paths.config, entry.data)
            self.synced[CONFIG_KEY] = entry.rev
        members = (read_object(entry.data) or {}).get("members") or []
        return [m["name"] for m in members if isinstance(m, dict) and isinstance(m.get("name"), str)]

    # ------------------------------------------------------------ tasks

    def _tasks(self) -> None:
        ensure_dir(self.paths.tasks_dir)
        keys = set(self.engine.keys("task."))
        for key in sorted(keys):
            task_id = key[5:]
            entry = self.engine.get(key)
            if entry is None:
                continue
            path = self.paths.task(task_id)
            if self.synced.get(key) == entry.rev and not self._changed_on_disk(path):
                continue
            if self.synced.get(key) == entry.rev:  # the file changed, the engine did not: up
                data = read_bytes(path)
                if data is not None and read_object(data) is not None and data != entry.data:
                    try:
                        rev = self.engine.write(key, data, entry.rev)
                        self.synced[key] = rev
                        self.written[str(path)] = file_key(path)
                        continue
                    except Stale:
                        pass  # the engine moved on: its copy wins, the file is rewritten
            self._write(path, entry.data, also=self.paths.tasks_lock)
            self.synced[key] = entry.rev
        for number in task_ids(self.paths.tasks_dir):  # gone from the engine: gone here
            key = task_key(str(number))
            if key not in keys and key in self.synced:
                with locked(self.paths.tasks_lock, root=self.paths.root) as guard:
                    guard.also(self.paths.task(str(number)))
                    self.paths.task(str(number)).unlink(missing_ok=True)
                del self.synced[key]
        hwm = self.engine.get(HWM)
        if hwm is not None and self.synced.get(HWM) != hwm.rev:
            self._write(self.paths.highwatermark, hwm.data, also=self.paths.tasks_lock)
            self.synced[HWM] = hwm.rev

    # ------------------------------------------------------------ inboxes

    def _inbox(self, name: str) -> None:
        box: EngineMailbox = self.mailbox(name)
        path = self.paths.inbox(name)
        state, _ = box._state()
        box._started(state)
        engine = {entry_id(name, raw): (seq, raw, seq in set(state.read)) for seq, raw in box.feed.snapshot()}
        engine = {k: v for k, v in engine.items() if v[0] > state.floor or v[2]}
        feed_key = f"feed.{name}"
        if self.synced.get(feed_key) == hash((box.feed.top, state.floor, tuple(state.read))) and not (
            self._changed_on_disk(path)
        ):
            return
        file = Mailbox.at(self.paths, name)
        raws = _entries(read_bytes(path))
        seen = {entry_id(name, raw): (raw, _is_read(raw)) for raw in raws}
        before = self.in_file.get(name, set())
        history = self.history.get(name)
        if history is None:  # what an earlier run of this mirror already copied
            history = self.history[name] = {entry_id(name, raw): seq for seq, raw in box.feed.history()}
        # Files → engine: what Claude Code wrote; what it read or pruned.
        read_already = []  # published here and read in the file (a courier's hand-off)
        for ident, (raw, read) in seen.items():
            if ident not in engine and ident not in before and ident not in history:
                obj = read_object(raw) or {}
                obj["read"] = False
                history[ident], _dup = box.publish(msgspec.json.encode(obj), ident)
                if read:
                    read_already.append(history[ident])
                self.ring(name)
        taken = read_already + [
            seq
            for ident, (seq, _, read) in engine.items()
            if not read
            and seq > state.floor
            and ((ident in seen and seen[ident][1]) or (ident in before and ident not in seen))
        ]
        if taken:
            box._take_seqs(taken)
        # Engine → files: what arrived; what was read.
        fresh = [
            raw
            for ident, (seq, raw, read) in sorted(engine.items(), key=lambda kv: kv[1][0])
            if ident not in seen and ident not in before and seq > state.floor and not read
        ]
        for raw in fresh:
            file.append_raw(raw)
        history.update({ident: seq for ident, (seq, _, _) in engine.items()})
        done = set(state.read)
        read_ids = {ident for ident, seq in history.items() if seq <= state.floor or seq in done}
        if any(ident in read_ids and not read for ident, (_, read) in seen.items()):
            file.take_where(lambda m: entry_id(name, msgspec.json.encode(m)) in read_ids)
        self.in_file[name] = set(seen) | {entry_id(name, raw) for raw in fresh}
        self.written[str(path)] = file_key(path)
        state, _ = box._state()
        if read_already:  # its take may precede the entry's arrival in the feed: look again
            self.synced.pop(feed_key, None)
        else:
            self.synced[feed_key] = hash((box.feed.top, state.floor, tuple(state.read)))


def _entries(data: bytes | None) -> list[bytes]:
    if not data:
        return []
    try:
        return [bytes(r) for r in parse(data).raws]
    except NotAnInbox:
        return []  # caught mid-write: the next pass reads it whole


def _is_read(raw: bytes) -> bool:
    obj = read_object(raw) or {}
    return obj.get("read") is True
