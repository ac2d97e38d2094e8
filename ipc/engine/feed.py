"""One inbox as a process sees it: the messages of its subject from the read floor on,
delivered in order by an ordered consumer and kept in memory, so that looking at an inbox
and taking from it cost no round trip. A message that arrives also pokes the inbox's
doorbell in this process (:meth:`EngineTeam.poke`): an agent woken by its ring before the
message reached it is woken again by the message itself.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ipc.engine.team import EngineTeam


class InboxFeed:
    def __init__(self, team: EngineTeam, agent: str) -> None:
        self.team = team
        self.agent = agent
        self.subject = team.inbox_subject(agent)
        self.messages: dict[int, bytes] = {}  # stream sequence → the entry as published
        self.top = 0  # the highest sequence delivered
        self.start_seq = 0  # 0: not started
        self._cond = threading.Condition()

    def start(self, from_seq: int) -> None:
        """Deliver from ``from_seq`` on (once; a later call asking for older messages
        gets them by :meth:`history` instead)."""
        with self._cond:
            if self.start_seq:
                return
            self.start_seq = max(1, from_seq)
        from nats.js import api

        async def sub() -> None:
            await self.team.conn.js.subscribe(
                self.subject,
                stream=self.team.inbox_stream,
                cb=self._on_message,
                ordered_consumer=True,
                idle_heartbeat=1.0,
                inactive_threshold=3600,
                config=api.ConsumerConfig(
                    deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self.start_seq
                ),
            )

        try:
            self.team.conn.retry(sub, f"reading {self.agent}'s inbox")
        except Exception:
            with self._cond:
                self.start_seq = 0
            raise

    async def _on_message(self, msg: Any) -> None:
        seq = int(msg.metadata.sequence.stream)
        with self._cond:
            if seq > self.top:
                self.messages[seq] = bytes(msg.data)
                self.top = seq
            self._cond.notify_all()
        self.team.poke(self.agent)

    def last_seq(self) -> int:
        """The sequence of the newest message on this inbox's subject in the server (0: none)."""
        import nats.js.errors

        async def last() -> int:
            try:
                msg = await self.team.conn.js.get_msg(
                    self.team.inbox_stream, subject=self.subject, direct=True
                )
            except nats.js.errors.NotFoundError:
                return 0
            return int(msg.seq or 0)

        return self.team.conn.retry(last, f"reading {self.agent}'s inbox")

    def sync(self, timeout: float = 5.0) -> None:
        """Wait until every message the server holds for this inbox has been delivered."""
        last = self.last_seq()
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.top < last and last >= self.start_seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def snapshot(self) -> list[tuple[int, bytes]]:
        with self._cond:
            return sorted(self.messages.items())

    def prune(self, floor: int) -> None:
        """Forget messages at or below ``floor`` (read: they are history now)."""
        with self._cond:
            for seq in [s for s in self.messages if s <= floor]:
                del self.messages[seq]

    def history(self) -> list[tuple[int, bytes]]:
        """Every message ever published to this inbox, oldest first (reads the stream)."""
        from nats.js import api

        found: list[tuple[int, bytes]] = []
        last = self.last_seq()
        if not last:
            return found
        done = threading.Event()

        async def cb(msg: Any) -> None:
            seq = int(msg.metadata.sequence.stream)
            found.append((seq, bytes(msg.data)))
            if seq >= last:
                done.set()

        async def sub() -> Any:
            return await self.team.conn.js.subscribe(
                self.subject,
                stream=self.team.inbox_stream,
                cb=cb,
                ordered_consumer=True,
                deliver_policy=api.DeliverPolicy.ALL,
                inactive_threshold=60,
            )

        subscription = self.team.conn.retry(sub, f"reading {self.agent}'s inbox")
        done.wait(30)
        self.team.conn.run(subscription.unsubscribe(), 5)
        return [(s, d) for s, d in found if s <= last]
