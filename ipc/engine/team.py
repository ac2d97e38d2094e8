"""One team in the engine, as one process sees it: its KV bucket (config, tasks, read
states, hosts) kept in memory by a watcher, compare-and-set writes, its inbox stream, and
its doorbell subjects.

- KV bucket ``at-{team}``: ``config``, ``task.{id}``, ``tasks.hwm``, ``read.{agent}``,
  ``joined``, ``host.{name}``. Every write is a compare-and-set on the key's revision,
  carrying a ``Nats-Msg-Id``: a write retried after a lost acknowledgement is recognised as
  ours, not taken for someone else's.
- Stream ``at-{team}-inbox``: subject ``at.{team}.inbox.{agent}`` per inbox; a message is
  published with its ``msg_id`` as ``Nats-Msg-Id``, so a retried publish is dropped as a
  duplicate by JetStream.
- Core subjects (no storage): ``at.{team}.wake.{agent}`` (doorbells), ``at.{team}.ready``
  (tasks made claimable), ``at.{team}.ctl.{host}`` (a host's supervisor).

Reads come from the watcher's copy (microseconds, no round trip); a write that finds the
copy stale fails its compare-and-set, reads the key from the server and tries again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ipc.engine import connection
from ipc.engine.connection import REQUEST_TIMEOUT, Connection, connect
from ipc.engine.doorbells import RING_PATIENCE, Doorbells
from ipc.engine.url import EngineUrl
from ipc.errors import AgentTeamsError, Conflict, NotFound, StorageError

log = logging.getLogger("agentteams.engine")
T = TypeVar("T")
DUPLICATE_WINDOW = 120.0  # seconds JetStream remembers a Nats-Msg-Id
CAS_TRIES = 64


@dataclass(frozen=True)
class Entry:
    rev: int
    data: bytes


class Stale(Exception):
    """A compare-and-set found another revision than the one it was given."""


class EngineTeam:
    def __init__(self, conn: Connection, team: str) -> None:
        self.conn = conn
        self.team = team
        self.bucket = f"at-{team}"
        self.kv_stream = f"KV_{self.bucket}"
        self.kv_prefix = f"$KV.{self.bucket}."
        self.inbox_stream = f"at-{team}-inbox"
        self._entries: dict[str, Entry | None] = {}  # None: deleted (a tombstone)
        self._revs: dict[str, int] = {}  # the revision each key was last seen at
        self._decoded: dict[str, tuple[int, Any]] = {}
        self._seen = 0  # highest revision known here: delivered by the watcher or written
        self._cond = threading.Condition()
        self._watching = False
        self.doorbells = Doorbells()  # of the agents listening in this process
        self.feeds: dict[str, Any] = {}  # inbox feeds of this process (ipc.engine.feed)

    # ------------------------------------------------------------ names

    def inbox_subject(self, agent: str) -> str:
        return f"at.{self.team}.inbox.{agent}"

    def wake_subject(self, agent: str) -> str:
        return f"at.{self.team}.wake.{agent}"

    @property
    def ready_subject(self) -> str:
        return f"at.{self.team}.ready"

    def control_subject(self, host: str) -> str:
        return f"at.{self.team}.ctl.{host}"

    @property
    def shown(self) -> str:
        return self.conn.url.shown

    # ------------------------------------------------------------ the team's streams

    def exists(self) -> bool:
        import nats.js.errors

        async def info() -> bool:
            try:
                await self.conn.js.stream_info(self.kv_stream)
                return True
            except nats.js.errors.NotFoundError:
                return False

        return self.conn.retry(info, f"looking up team {self.team!r}")

    def missing(self) -> NotFound:
        return NotFound(
            f"team {self.team!r} does not exist in the engine at {self.shown}; "
            f"create it with 'agentteams team create {self.team} --engine {self.shown}'"
        )

    def create_streams(self) -> None:
        """The KV bucket and the inbox stream (kept if they exist: create is idempotent)."""
        from nats.js import api

        async def make() -> None:
            js = self.conn.js
            await js.add_stream(
                api.StreamConfig(
                    name=self.kv_stream,
                    subjects=[f"{self.kv_prefix}>"],
                    max_msgs_per_subject=1,
                    discard=api.DiscardPolicy.NEW,
                    deny_delete=True,
                    allow_rollup_hdrs=True,
                    allow_direct=True,
                    storage=api.StorageType.FILE,
                    duplicate_window=DUPLICATE_WINDOW,
                    num_replicas=1,
                )
            )
            await js.add_stream(
                api.StreamConfig(
                    name=self.inbox_stream,
                    subjects=[f"at.{self.team}.inbox.*"],
                    allow_direct=True,
                    storage=api.StorageType.FILE,
                    duplicate_window=DUPLICATE_WINDOW,
                    num_replicas=1,
                )
            )

        self.conn.retry(make, f"creating team {self.team!r}")

    def destroy(self) -> None:
        import nats.js.errors

        async def drop() -> None:
            for stream in (self.inbox_stream, self.kv_stream):
                try:
                    await self.conn.js.delete_stream(stream)
                except nats.js.errors.NotFoundError:
                    pass

        self.conn.retry(drop, f"deleting team {self.team!r}")
        with self._cond:
            self._entries.clear()
            self._decoded.clear()

    # ------------------------------------------------------------ the KV copy

    def _watch(self) -> None:
        """Start the watcher once; return when its copy has caught up with the bucket."""
        with self._cond:
            if self._watching:
                return
            self._watching = True
        import nats.js.errors
        from nats.js import api

        async def start() -> int:
            js = self.conn.js
            try:
                info = await js.stream_info(self.kv_stream)
            except nats.js.errors.NotFoundError:
                raise self.missing() from None
            await js.subscribe(
                f"{self.kv_prefix}>",
                stream=self.kv_stream,
                cb=self._on_kv,
                ordered_consumer=True,
                deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
                idle_heartbeat=1.0,
                inactive_threshold=3600,
            )
            return int(info.state.last_seq)

        try:
            last = self.conn.retry(start, f"reading team {self.team!r}")
        except Exception:
            with self._cond:
                self._watching = False
            raise
        self._wait_seen(last)

    async def _on_kv(self, msg: Any) -> None:
        key = msg.subject[len(self.kv_prefix) :]
        seq = int(msg.metadata.sequence.stream)
        op = (msg.headers or {}).get("KV-Operation")
        self._store(key, seq, None if op in ("DEL", "PURGE") else bytes(msg.data), delivered=True)

    def _store(self, key: str, rev: int, data: bytes | None, *, delivered: bool = False) -> None:
        with self._cond:
            if rev >= self._revs.get(key, 0):
                self._revs[key] = rev
                self._entries[key] = None if data is None else Entry(rev, data)
            self._seen = max(self._seen, rev)
            self._cond.notify_all()
        if delivered:  # the watcher's copy holds every revision up to here
            self.doorbells.caught_up(rev)

    def _wait_seen(self, seq: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._seen < seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("engine: the copy of %s is behind (%d < %d)", self.team, self._seen, seq)
                    return
                self._cond.wait(left)

    def sync(self) -> None:
        """Wait until the copy holds every write the server had stored when called."""
        self._watch()

        async def last() -> int:
            return int((await self.conn.js.stream_info(self.kv_stream)).state.last_seq)

        self._wait_seen(self.conn.retry(last, f"reading team {self.team!r}"))

    def get(self, key: str, *, fresh: bool = False) -> Entry | None:
        """The key's value (None: absent); ``fresh`` asks the server, not the copy."""
        return self.lookup(key, fresh=fresh)[0]

    def lookup(self, key: str, *, fresh: bool = False) -> tuple[Entry | None, int]:
        """The key's value and the revision to compare-and-set against, read together (an
        absent key's revision is that of its deletion, or 0)."""
        self._watch()
        if fresh:
            self._fetch(key)
        with self._cond:
            return self._entries.get(key), self._revs.get(key, 0)

    def _fetch(self, key: str) -> None:
        import nats.js.errors

        async def get() -> tuple[int, bytes | None]:
            try:
                msg = await self.conn.js.get_msg(self.kv_stream, subject=self.kv_prefix + key, direct=True)
            except nats.js.errors.NotFoundError:
                return 0, None
            op = (msg.headers or {}).get("KV-Operation")
            return int(msg.seq or 0), None if op in ("DEL", "PURGE") else bytes(msg.data or b"")

        rev, data = self.conn.retry(get, f"reading {key} of team {self.team!r}")
        if rev:
            self._store(key, rev, data)

    def keys(self, prefix: str) -> list[str]:
        self._watch()
        with self._cond:
            return [k for k, v in self._entries.items() if v is not None and k.startswith(prefix)]

    def decoded(self, key: str, entry: Entry, decode: Callable[[bytes], T]) -> T:
        """``decode(entry.data)``, remembered per revision."""
        cached = self._decoded.get(key)
        if cached is not None and cached[0] == entry.rev:
            value: T = cached[1]
            return value
        value = decode(entry.data)
        self._decoded[key] = (entry.rev, value)
        return value

    def write(self, key: str, data: bytes | None, last: int) -> int:
        """Set (``data`` None: delete) ``key`` if its revision is still ``last`` (0: it must
        not exist); Stale if not. Returns the new revision."""
        import nats.js.errors

        msg_id = os.urandom(12).hex()
        tries = 0

        async def put() -> int:
            nonlocal tries
            tries += 1
            headers = {"Nats-Msg-Id": msg_id, "Nats-Expected-Last-Subject-Sequence": str(last)}
            if data is None:
                headers["KV-Operation"] = "DEL"
            try:
                ack = await self.conn.js.publish(
                    self.kv_prefix + key, data or b"", headers=headers, timeout=REQUEST_TIMEOUT
                )
                return int(ack.seq)
            except nats.js.errors.APIError as exc:
                if exc.err_code not in (10071, 10164):
                    raise StorageError(f"the engine refused a write to {key}: {exc.description}") from None
                if tries > 1:  # perhaps our own earlier try, stored but not acknowledged
                    current = await self.conn.js.get_msg(
                        self.kv_stream, subject=self.kv_prefix + key, direct=True
                    )
                    if (current.headers or {}).get("Nats-Msg-Id") == msg_id:
                        return int(current.seq or 0)
                raise Stale(key) from None

        rev = self.conn.retry(put, f"writing {key} of team {self.team!r}")
        self._store(key, rev, data)
        return rev

    def update(self, key: str, change: Callable[[Entry | None], bytes | None], what: str) -> Entry | None:
        """Read-modify-write ``key`` by compare-and-set until it holds: ``change`` gets the
        current entry and returns the new bytes (None: delete; the same bytes: no write)."""
        entry, last = self.lookup(key)
        for _ in range(CAS_TRIES):
            data = change(entry)
            if entry is not None and data == entry.data:
                return entry
            if entry is None and data is None:
                return None
            try:
                rev = self.write(key, data, last)
            except Stale:
                entry, last = self.lookup(key, fresh=True)
                continue
            return None if data is None else Entry(rev, data)
        raise Conflict(f"{what}: {key} kept changing under us ({CAS_TRIES} tries); try again")

    # ------------------------------------------------------------ messages

    def publish(self, subject: str, data: bytes, msg_id: str, what: str) -> tuple[int, bool]:
        """Publish into the inbox stream; (sequence, duplicate). Retried with the same id."""

        async def pub() -> tuple[int, bool]:
            ack = await self.conn.js.publish(
                subject, data, headers={"Nats-Msg-Id": msg_id}, timeout=REQUEST_TIMEOUT
            )
            return int(ack.seq), bool(ack.duplicate)

        return self.conn.retry(pub, what)

    def ring(self, agent: str) -> None:
        """A doorbell on a core subject: fire and forget (flushed by :meth:`flush`). It
        carries the revision this process has seen, so the rung agent looks only once its
        own copy holds what the ringer wrote (a core message can overtake the watcher's)."""
        self.signal(self.wake_subject(agent), str(self._seen).encode())

    def signal(self, subject: str, data: bytes) -> None:
        nc = self.conn.nc

        def send() -> None:
            if not nc.is_closed:
                asyncio.ensure_future(nc.publish(subject, data))

        self.conn.bridge.call_soon(send)

    def flush(self, timeout: float = 2.0) -> None:
        """Wait until what was signalled has gone out (a process about to exit)."""
        try:
            self.conn.run(self.conn.nc.flush(timeout), timeout + 1)
        except AgentTeamsError:
            pass  # the server is away: a ring is only a doorbell

    def subscribe(self, subject: str, handler: Callable[[Any], None]) -> None:
        """``handler(msg)`` on the engine's loop for each message on a core subject."""

        async def cb(msg: Any) -> None:
            try:
                handler(msg)
            except Exception:
                log.exception("engine: handler for %s failed", subject)

        async def sub() -> None:
            await self.conn.nc.subscribe(subject, cb=cb)
            # A round trip: once it returns the server holds the subscription, so a ring sent
            # after this call (from any host) cannot pass it by.
            await self.conn.nc.flush()

        self.conn.retry(sub, f"listening on {subject}")

    def serve(self, subject: str, answer: Callable[[bytes], bytes]) -> None:
        """Answer requests on ``subject`` with ``answer(data)``, run on a worker thread (it
        may block) so the engine's loop goes on meanwhile."""

        async def cb(msg: Any) -> None:
            loop = asyncio.get_running_loop()
            try:
                reply = await loop.run_in_executor(None, answer, bytes(msg.data))
            except Exception:
                log.exception("engine: answering on %s failed", subject)
                return
            await msg.respond(reply)

        async def sub() -> None:
            await self.conn.nc.subscribe(subject, cb=cb)

        self.conn.retry(sub, f"serving {subject}")

    def listen(self, agent: str, poke: Callable[[], None]) -> None:
        """Call ``poke`` (on the engine's loop) whenever ``agent`` is rung, or a message
        reaches its inbox."""
        if self.doorbells.add(agent, poke):
            self.subscribe(self.wake_subject(agent), lambda msg: self._rung(agent, bytes(msg.data)))

    def _rung(self, agent: str, data: bytes) -> None:
        if self.doorbells.rung(agent, data, self._watching):
            later = asyncio.get_running_loop().call_later
            later(RING_PATIENCE, self.doorbells.overdue, agent)

    def poke(self, agent: str) -> None:
        self.doorbells.poke(agent)


_teams: dict[tuple[int, str, str], EngineTeam] = {}
_lock = threading.Lock()


def engine_team(url: str | EngineUrl, team: str) -> EngineTeam:
    """This process's view of ``team`` in the engine at ``url``."""
    conn = connect(url)
    key = (os.getpid(), conn.url.url, team)
    with _lock:
        found = _teams.get(key)
        if found is None:
            found = _teams[key] = EngineTeam(conn, team)
        return found


def close_all() -> None:
    """Close this process's connections and forget its teams (tests, and a process done
    with its teams)."""
    with _lock:
        _teams.clear()
    connection.close_all()


def _forget_after_fork() -> None:
    global _lock
    _teams.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
