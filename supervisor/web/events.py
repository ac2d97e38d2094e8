"""``GET /api/v1/teams/{team}/events``: what changes in a team, as Server-Sent Events.

Driven by the wake the agents' doors use, not a timer: the kernel tells us (inotify, as a
waiting MCP session hears an inbox written by a writer that cannot ring) when an inbox,
a task file, the team's config or its events log is written, and the event goes out then.
Every write of the team's state is an atomic rename, so each one is heard once it is whole.

One :class:`Hub` per team while someone listens: it watches three directories in the
server's event loop (the descriptors sit in the loop's poll set beside the sockets) and
hands each change to every listener. Events:

- ``message``: a new message in an inbox (:class:`~ipc.operations.TeamMessage`, readable);
- ``inbox``: an inbox was written (read flags too): ``{"name", "unread"}``;
- ``task``: task files were written or removed: ``{"ids"}``;
- ``transcript``: agents' transcripts grew (a turn, a tool call, a result): ``{"names"}``;
- ``member``: a member's state changed: the config was written (a start, an exit, a join),
  the events log grew, or a message says so (idle, shutdown approved): ``{"why"}``;
- ``resync``: the kernel lost events; look at everything again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec

from ipc import TeamConfigStore
from ipc import operations as io
from ipc.errors import AgentTeamsError
from ipc.fswatch import OVERFLOW, FileWatch
from ipc.mailbox import Mailbox
from ipc.paths import TeamPaths
from ipc.readable import looked_at
from ipc.schemas import LEAD_NAME
from ipc.storage import ensure_dir
from supervisor.client import readers

KEEPALIVE = 15.0  # seconds: a comment line, so that proxies and browsers keep the stream open
STATE_KINDS = frozenset({"idle_notification", "shutdown_approved", "teammate_terminated"})
Frame = tuple[str, Any]  # an event's name and its data


def _key(m: Any) -> tuple[str, str, str]:
    return (m.from_, m.timestamp, m.text)


class Hub:
    def __init__(self, paths: TeamPaths) -> None:
        self.paths = paths
        self.store = TeamConfigStore(paths.root, paths.team)  # the keys each message is checked with
        self.listeners: set[asyncio.Queue[list[Frame] | None]] = set()
        self.seen: dict[str, set[tuple[str, str, str]]] = {}  # inbox -> messages already told
        self.pending: set[tuple[str, str]] = set()  # (which watch, name) not yet looked at
        self.dirty = asyncio.Event()
        self.watches: dict[str, FileWatch] = {}
        self.pump: asyncio.Task[None] | None = None

    async def start(self) -> None:
        transcripts = self.paths.transcript(LEAD_NAME).parent
        for where in (self.paths.inboxes, self.paths.tasks_dir, transcripts):
            ensure_dir(where)
        self.watches = {
            "inbox": FileWatch(self.paths.inboxes, None),
            "task": FileWatch(self.paths.tasks_dir, None, removals=True),
            "team": FileWatch(self.paths.team_dir, ["config.json", "events.jsonl"]),
            "transcript": FileWatch(transcripts, None),
        }
        loop = asyncio.get_running_loop()
        for kind, watch in self.watches.items():
            loop.add_reader(watch.fd, self._heard, kind, watch)
        await anyio.to_thread.run_sync(self._remember_all)
        self.pump = asyncio.create_task(self._pump())

    def _remember_all(self) -> None:
        for path in self.paths.inboxes.glob("*.json"):
            self._new_messages(path.stem, baseline=True)

    def _heard(self, kind: str, watch: FileWatch) -> None:
        self.pending.update((kind, name) for name in watch.changes())
        self.dirty.set()

    async def _pump(self) -> None:
        while True:
            await self.dirty.wait()
            self.dirty.clear()
            heard, self.pending = self.pending, set()
            frames = await anyio.to_thread.run_sync(self._frames, heard)
            if not frames:
                continue  # a temporary file, a lock: nothing anyone would see
            for queue in self.listeners:
                queue.put_nowait(frames)

    def _frames(self, heard: set[tuple[str, str]]) -> list[Frame]:
        """What the writes heard mean, in events (read in a worker thread: files)."""
        if any(name == OVERFLOW for _, name in heard):
            self._remember_all()
            return [("resync", {})]
        frames: list[Frame] = []
        ids = sorted(
            (n.removesuffix(".json") for k, n in heard if k == "task" and n.endswith(".json")),
            key=lambda i: (len(i), i),
        )
        if ids:
            frames.append(("task", {"ids": ids}))
        said = sorted(
            n.removesuffix(".jsonl") for k, n in heard if k == "transcript" and n.endswith(".jsonl")
        )
        if said:
            frames.append(("transcript", {"names": said}))
        why = sorted(n.removesuffix(".json").removesuffix(".jsonl") for k, n in heard if k == "team")
        for name in sorted(n.removesuffix(".json") for k, n in heard if k == "inbox" and n.endswith(".json")):
            new, unread = self._new_messages(name)
            frames += [("message", message) for message in new]
            frames.append(("inbox", {"name": name, "unread": unread}))
            why += sorted({m.event.kind for m in new if m.event.kind in STATE_KINDS})
        if why:
            frames.append(("member", {"why": why}))
        return frames

    def _new_messages(self, name: str, baseline: bool = False) -> tuple[list[io.TeamMessage], int]:
        """The messages of ``name``'s inbox not told yet, and how many are unread.
        ``baseline``: what is there now is the past, told to no one."""
        try:
            messages = Mailbox.at(self.paths, name).read()
        except AgentTeamsError:
            return [], 0  # half a file another writer left: its next write is heard
        before = self.seen.get(name, set())
        self.seen[name] = {_key(m) for m in messages}
        new = [] if baseline else [m for m in messages if _key(m) not in before]
        reader = readers.verifier(self.store, name)
        told = [io.TeamMessage(to=name, read=m.read, event=looked_at(m, reader)) for m in new]
        return told, sum(1 for m in messages if not m.read)

    async def close(self) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.pump
        loop = asyncio.get_running_loop()
        for watch in self.watches.values():
            loop.remove_reader(watch.fd)
            watch.close()


class Hubs:
    """One hub per team that someone listens to; gone with its last listener."""

    def __init__(self) -> None:
        self.hubs: dict[str, Hub] = {}
        self.lock = asyncio.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False

    def stop(self) -> None:
        """End every stream (the server is stopping): callable from a signal handler."""
        self.stopping = True
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._end_streams)

    def _end_streams(self) -> None:
        for hub in self.hubs.values():
            for queue in hub.listeners:
                queue.put_nowait(None)  # the stream's end

    async def listen(self, paths: TeamPaths) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[list[Frame] | None] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        if self.stopping:
            return
        async with self.lock:
            hub = self.hubs.get(paths.team)
            if hub is None:
                hub = Hub(paths)
                await hub.start()
                self.hubs[paths.team] = hub
            hub.listeners.add(queue)
        try:
            yield frame("hello", {"team": paths.team})
            while True:
                try:
                    frames = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                if frames is None:
                    return
                yield b"".join(frame(name, data) for name, data in frames)
        finally:
            async with self.lock:
                hub.listeners.discard(queue)
                if not hub.listeners and self.hubs.get(paths.team) is hub:
                    del self.hubs[paths.team]
                    await hub.close()

    async def close(self) -> None:
        async with self.lock:
            for hub in self.hubs.values():
                await hub.close()
            self.hubs.clear()


def frame(name: str, data: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + msgspec.json.encode(data) + b"\n\n"
