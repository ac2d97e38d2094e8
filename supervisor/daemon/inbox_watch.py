"""Doorbells for messages that arrive without one: Claude Code teammates write inboxes and
ring nothing (they poll every 500 ms). While a team has one, the supervisor looks at the
other agents' inbox files every 500 ms, as Claude Code would, and rings the doorbell of
each whose file changed, so our teammates (and a lead agent) hear at once what a Claude
Code teammate sent, not at their slow fallback poll."""

from __future__ import annotations

from collections.abc import Callable

from ipc.launch import POLL_INTERVAL
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME
from ipc.storage import FileKey, file_key
from supervisor.daemon.children import Children
from supervisor.daemon.reactor import Reactor
from supervisor.daemon.router import Router


class InboxWatch:
    def __init__(
        self,
        reactor: Reactor,
        paths: TeamPaths,
        children: Children,
        router: Router,
        check_lead_inbox: Callable[[], None],
    ) -> None:
        self.reactor = reactor
        self.paths = paths
        self.children = children
        self.router = router
        self.check_lead_inbox = check_lead_inbox  # the supervisor reads the lead's inbox itself too
        self.seen: dict[str, FileKey | None] = {}
        self.running = False

    def claude_teammate_started(self) -> None:
        if not self.running:
            self.running = True
            self.reactor.call_later(POLL_INTERVAL, self._look)

    def _watched(self) -> list[str]:
        """Our agents that listen for a doorbell (in whatever backend), and the lead."""
        names = [c.name for c in self.children.by_name.values() if c.alive and not c.spec.runs_claude]
        return [*names, LEAD_NAME]

    def _look(self) -> None:
        if not any(c.alive and c.spec.runs_claude for c in self.children.by_name.values()):
            self.running = False
            self.seen.clear()
            return
        for name in self._watched():
            key = file_key(self.paths.inbox(name))
            if name in self.seen and key != self.seen[name]:
                self.router.wake(name)
                if name == LEAD_NAME:
                    self.check_lead_inbox()
            self.seen[name] = key
        self.reactor.call_later(POLL_INTERVAL, self._look)
