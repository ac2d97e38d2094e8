"""The team config as the ``config`` key of the team's KV bucket: the same JSON as
``config.json``, every change a compare-and-set on the key's revision, so concurrent spawns
on several hosts never lose a member. Member rules (names, colours, updates) are
:class:`~ipc.config.TeamConfigStore`'s own; only where the config lives differs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import TypeVar

import msgspec

from ipc.boundary import decode_errors
from ipc.clock import now_ms
from ipc.config import TeamConfigStore, encode_config, join_index
from ipc.engine.team import EngineTeam, Entry
from ipc.errors import Conflict, NotFound
from ipc.paths import TeamPaths, agent_id
from ipc.preserve import read_object
from ipc.schemas import LEAD_AGENT_TYPE, LEAD_NAME, Member, TeamConfig, dump_json

T = TypeVar("T")
KEY = "config"
_decoder = msgspec.json.Decoder(TeamConfig)


class EngineConfigStore(TeamConfigStore):
    def __init__(self, paths: TeamPaths, engine: EngineTeam) -> None:
        self._bind(paths)
        self.engine = engine
        self.path = paths.config  # where this host's mirror keeps a copy

    def _missing(self) -> NotFound:
        return self.engine.missing()

    def _decode(self, entry: Entry) -> TeamConfig:
        with decode_errors(f"{self.engine.shown} {self.engine.bucket}/{KEY}", "team config"):
            return self.engine.decoded(KEY, entry, _decoder.decode)

    def exists(self) -> bool:
        try:
            return self.engine.get(KEY) is not None
        except NotFound:
            return False

    def read(self) -> TeamConfig:
        entry = self.engine.get(KEY) or self.engine.get(KEY, fresh=True)
        if entry is None:
            raise self._missing()
        return self._decode(entry)

    def require_member(self, name: str) -> Member:
        try:
            return super().require_member(name)
        except NotFound:
            self.engine.get(KEY, fresh=True)  # perhaps it joined a moment ago on another host
            return super().require_member(name)

    def _mutate(self, change: Callable[[TeamConfig], T]) -> T:
        result: list[T] = []

        def apply(entry: Entry | None) -> bytes | None:
            if entry is None:
                raise self._missing()
            config = _decoder.decode(entry.data)  # a fresh copy: change() edits it in place
            result[:] = [change(config)]
            return encode_config(config, read_object(entry.data))

        self.engine.update(KEY, apply, f"changing team {self.team!r}")
        return result[0]

    def _next_join_index(self, config: TeamConfig) -> int:
        index: list[int] = []

        def bump(entry: Entry | None) -> bytes:
            counted = int(entry.data) if entry is not None and entry.data.strip().isdigit() else 0
            current = join_index(config, counted)
            index[:] = [current]
            return str(current + 1).encode()

        self.engine.update("joined", bump, "counting members")
        return index[0]

    def create(
        self,
        description: str = "",
        *,
        lead_model: str = "offline",
        cwd: str | None = None,
        lead_session_id: str | None = None,
    ) -> TeamConfig:
        """Create the team in the engine with its lead member; refuses an existing team."""
        self.engine.create_streams()
        created = now_ms()
        lead_id = agent_id(LEAD_NAME, self.team)
        config = TeamConfig(
            name=self.team,
            description=description,
            created_at=created,
            lead_agent_id=lead_id,
            lead_session_id=lead_session_id or str(uuid.uuid4()),
            members=[
                Member(
                    agent_id=lead_id,
                    name=LEAD_NAME,
                    agent_type=LEAD_AGENT_TYPE,
                    model=lead_model,
                    joined_at=created,
                    tmux_pane_id="",
                    cwd=cwd or os.getcwd(),
                    subscriptions=[],
                )
            ],
        )

        def make(entry: Entry | None) -> bytes:
            if entry is not None:
                raise Conflict(
                    f"team {self.team!r} already exists in the engine at {self.engine.shown}; "
                    "pick another name or delete it first"
                )
            return dump_json(config)

        self.engine.update(KEY, make, f"creating team {self.team!r}")
        return config

    def delete(self, *, force: bool = False) -> None:
        """Remove the team from the engine (its bucket and inbox stream); refused while
        teammates remain unless ``force``."""
        remaining = [m.name for m in self.read().teammates()]
        if remaining and not force:
            raise Conflict(
                f"team {self.team!r} still has {len(remaining)} teammate(s): {', '.join(remaining)}; "
                "shut them down first while the team is up, or delete them with it: --force"
            )
        self.engine.destroy()
