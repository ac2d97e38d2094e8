"""One team's state, as every process holds it: the config, the task list, the messenger and
its mailboxes, the events log, over one :class:`~ipc.paths.TeamPaths`. Built here, once, for
the client side, the daemon and each agent, so that every write that should wake someone
goes through the one path that writes and then rings.

A team is files (and ZeroMQ doorbells) unless its root remembers an engine for it, or
``--engine`` names one for a team this root has no files of (:mod:`ipc.engine.marker`):
then the same stores are the engine-backed ones (:mod:`ipc.engine`), chosen here and nowhere
else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ipc import trust
from ipc.config import TeamConfigStore
from ipc.engine import marker
from ipc.locks import is_claude_root
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths
from ipc.schemas import TeammateTerminated
from ipc.storage import read_jsonl
from ipc.tasks import ReadyHook, TaskList
from ipc.wake import Doorbell

if TYPE_CHECKING:
    from ipc.engine.state import EngineDoorbell
    from ipc.engine.team import EngineTeam


class TeamState:
    """The stores of one team. ``doorbell`` rings whoever a write is for (none: nobody is
    woken and the fallback poll finds the change); ``on_ready`` hears of tasks a change made
    claimable."""

    def __init__(
        self,
        paths: TeamPaths,
        *,
        doorbell: Doorbell | None = None,
        on_ready: ReadyHook | None = None,
    ) -> None:
        self.paths = paths
        self.link = marker.read(paths)
        self.engine: EngineTeam | None = None
        if self.link is None:
            self.config = TeamConfigStore.at(paths)
            self.messenger = Messenger.at(paths, waker=doorbell, store=self.config)
            self.tasks = TaskList.at(paths, on_ready=on_ready, messenger=self.messenger)
            self._engine_doorbell: EngineDoorbell | None = None
        else:
            from ipc.engine.state import build

            self.config, self.messenger, self.tasks, self.engine, self._engine_doorbell = build(
                paths, self.link, on_ready
            )

    @property
    def team(self) -> str:
        return self.paths.team

    def mailbox(self, name: str) -> Mailbox:
        return self.messenger.mailbox(name)

    @property
    def host(self) -> str:
        """This host's name in an engine team ("" in a team of files)."""
        return self.link.host if self.link is not None else ""

    def close(self) -> None:
        """Let go: rings still in flight on the engine go out first."""
        if self._engine_doorbell is not None:
            self._engine_doorbell.close()

    def events(self) -> list[TeammateTerminated]:
        """Events for the lead (``teammate_terminated``), oldest first."""
        return read_jsonl(self.paths.events, TeammateTerminated)


def _make_lead_key(paths: TeamPaths) -> None:
    """ipc.config's hook, aware of the engine: a team there, also from a root that has not
    joined it (--engine), keeps its config (and the lead's key other hosts read) in the engine."""
    if is_claude_root(paths.root):
        return
    config = TeamState(paths).config if marker.read(paths) is not None else TeamConfigStore.at(paths)
    config.ensure_lead_key(replace_lost=False)


trust.keyring.make_lead = _make_lead_key
