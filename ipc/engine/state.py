"""The engine-backed stores of one team, built together for :class:`~ipc.team_state.TeamState`:
config, messenger (its mailboxes and doorbell) and task list over one
:class:`~ipc.engine.team.EngineTeam`."""

from __future__ import annotations

from ipc.engine.config_store import EngineConfigStore
from ipc.engine.mailbox import EngineMailbox
from ipc.engine.marker import Link
from ipc.engine.tasks import EngineTaskList
from ipc.engine.team import EngineTeam, engine_team
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths
from ipc.tasks import ReadyHook


class EngineDoorbell:
    """Rings an agent on its core subject, wherever it runs; a ring is fire and forget,
    flushed by :meth:`close` (a process about to exit still delivers it)."""

    def __init__(self, engine: EngineTeam) -> None:
        self.engine = engine

    def wake(self, agent: str) -> bool:
        self.engine.ring(agent)
        return True

    def close(self) -> None:
        self.engine.flush()


class EngineMessenger(Messenger):
    def __init__(self, store: EngineConfigStore, engine: EngineTeam, doorbell: EngineDoorbell) -> None:
        self._bind(store, doorbell)
        self.engine = engine

    def mailbox(self, name: str) -> Mailbox:
        box = self._boxes.get(name)
        if box is None:
            box = self._boxes[name] = EngineMailbox(self.paths, name, self.engine, self.store)
        return box


def build(
    paths: TeamPaths, link: Link, on_ready: ReadyHook | None
) -> tuple[EngineConfigStore, EngineMessenger, EngineTaskList, EngineTeam, EngineDoorbell]:
    engine = engine_team(link.url, paths.team)
    config = EngineConfigStore(paths, engine)
    doorbell = EngineDoorbell(engine)
    messenger = EngineMessenger(config, engine, doorbell)
    tasks = EngineTaskList(paths, engine, on_ready=on_ready, messenger=messenger)
    return config, messenger, tasks, engine, doorbell
