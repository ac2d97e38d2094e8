"""The team config, ``teams/{team}/config.json``: every read-modify-write under its lock.

Unlike Claude Code, which writes config.json without a lock, concurrent spawns here never
lose a member.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from ipc.clock import now_ms
from ipc.errors import Conflict, CorruptFile, InvalidInput, NotFound, StorageError
from ipc.paths import TeamPaths, agent_id, color_for, normalise_agent_name
from ipc.schemas import BACKEND_TYPE, LEAD_AGENT_TYPE, LEAD_NAME, Member, TeamConfig, dump_json
from ipc.storage import atomic_write, ensure_dir, locked, read_bytes, refuse_claude_root

_decoder = msgspec.json.Decoder(TeamConfig)
T = TypeVar("T")

# Member fields a caller may change with update_member (agentId and name identify it).
_UPDATABLE = {
    "agent_type", "model", "prompt", "color", "plan_mode_required", "tmux_pane_id", "cwd",
    "subscriptions", "backend_type", "is_active",
}


def _decode(path: Path, data: bytes) -> TeamConfig:
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptFile(path, f"not a valid team config ({exc})") from exc


class TeamConfigStore:
    def __init__(self, root: str | os.PathLike[str] | None, team: str) -> None:
        self.paths = TeamPaths(root, team)
        self.team = self.paths.team
        self.path = self.paths.config
        self._join_counter = self.paths.team_dir / ".joined"

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> TeamConfig:
        data = read_bytes(self.path)
        if data is None:
            raise NotFound(f"team {self.team!r} does not exist under {self.paths.root}; create it with 'agentteams team create {self.team}'")
        return _decode(self.path, data)

    def config_member(self, name: str) -> Member | None:
        """The member called ``name``, or None (also when the team has no readable config)."""
        try:
            return self.read().member(normalise_agent_name(name))
        except (NotFound, CorruptFile):
            return None

    def require_member(self, name: str) -> Member:
        config = self.read()
        member = config.member(normalise_agent_name(name))
        if member is None:
            known = ", ".join(m.name for m in config.members)
            raise NotFound(f"{name!r} is not a member of team {self.team!r}; members: {known}")
        return member

    def _mutate(self, change: Callable[[TeamConfig], T]) -> T:
        refuse_claude_root(self.paths.root)
        with locked(self.path):
            config = self.read()
            result = change(config)
            atomic_write(self.path, dump_json(config))
            return result

    def create(
        self,
        description: str = "",
        *,
        lead_model: str = "offline",
        cwd: str | None = None,
        lead_session_id: str | None = None,
    ) -> TeamConfig:
        """Create the team with its lead member; refuses an existing team."""
        refuse_claude_root(self.paths.root)
        ensure_dir(self.paths.team_dir)
        ensure_dir(self.paths.inboxes)
        ensure_dir(self.paths.tasks_dir)
        with locked(self.path):
            if self.path.exists():
                raise Conflict(f"team {self.team!r} already exists; pick another name or delete it first")
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
            atomic_write(self.path, dump_json(config))
            atomic_write(self.paths.tasks_lock, b"")
            return config

    def add_member(
        self,
        name: str,
        *,
        agent_type: str = "general-purpose",
        model: str = "offline",
        prompt: str = "",
        plan_mode_required: bool = False,
        cwd: str | None = None,
    ) -> Member:
        """Add a teammate. A taken name gets ``-2``, ``-3``…; the color follows join order."""
        base = normalise_agent_name(name)
        if base == LEAD_NAME:
            raise InvalidInput(f"{LEAD_NAME!r} is the lead's name; give the teammate another name")

        def add(config: TeamConfig) -> Member:
            taken = {m.name for m in config.members}
            unique, n = base, 1
            while unique in taken:
                n += 1
                unique = f"{base}-{n}"
            member = Member(
                agent_id=agent_id(unique, self.team),
                name=unique,
                agent_type=agent_type,
                model=model,
                prompt=prompt,
                color=color_for(self._next_join_index()),
                plan_mode_required=plan_mode_required,
                joined_at=now_ms(),
                tmux_pane_id="",
                cwd=cwd or os.getcwd(),
                subscriptions=[],
                backend_type=BACKEND_TYPE,
                is_active=False,
            )
            config.members.append(member)
            return member

        return self._mutate(add)

    def _next_join_index(self) -> int:
        # Called under the config lock. Join order survives removals, as in Claude Code.
        data = read_bytes(self._join_counter)
        index = int(data or b"0")
        atomic_write(self._join_counter, str(index + 1).encode())
        return index

    def update_member(self, name: str, **changes: Any) -> Member:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise InvalidInput(f"cannot update member field(s) {sorted(unknown)}; allowed: {sorted(_UPDATABLE)}")
        target = normalise_agent_name(name)

        def update(config: TeamConfig) -> Member:
            for i, member in enumerate(config.members):
                if member.name == target:
                    config.members[i] = msgspec.structs.replace(member, **changes)
                    return config.members[i]
            known = ", ".join(m.name for m in config.members)
            raise NotFound(f"{name!r} is not a member of team {self.team!r}; members: {known}")

        return self._mutate(update)

    def remove_member(self, name: str) -> Member | None:
        """Remove a terminated teammate; returns it, or None if it was not there."""
        target = normalise_agent_name(name)
        if target == LEAD_NAME:
            raise InvalidInput("the lead cannot be removed from its team; delete the team instead")

        def remove(config: TeamConfig) -> Member | None:
            for i, member in enumerate(config.members):
                if member.name == target:
                    return config.members.pop(i)
            return None

        return self._mutate(remove)

    def delete(self) -> None:
        """Remove ``teams/{team}`` and ``tasks/{team}``; refused while teammates remain."""
        refuse_claude_root(self.paths.root)
        with locked(self.path):
            config = self.read()
            remaining = [m.name for m in config.teammates()]
            if remaining:
                raise Conflict(
                    f"team {self.team!r} still has {len(remaining)} teammate(s): {', '.join(remaining)}; "
                    "shut them down first or use --force"
                )
            try:
                if self.paths.tasks_dir.exists():
                    shutil.rmtree(self.paths.tasks_dir)
                # Config last, so a crash mid-delete leaves a team that can be deleted again.
                for child in sorted(self.paths.team_dir.iterdir()):
                    if child.name in (self.path.name, self.path.name + ".lock"):
                        continue
                    if child.is_dir():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
                self.path.unlink()
            except OSError as exc:
                raise StorageError(f"could not delete team {self.team!r}: {exc}") from exc
        shutil.rmtree(self.paths.team_dir, ignore_errors=True)


def list_teams(root: str | os.PathLike[str] | None) -> list[TeamConfig]:
    """Every team under ``root`` whose config parses, by name."""
    from ipc.paths import resolve_root

    teams_dir = resolve_root(root) / "teams"
    found: list[TeamConfig] = []
    if not teams_dir.is_dir():
        return found
    for entry in sorted(teams_dir.iterdir()):
        data = read_bytes(entry / "config.json") if entry.is_dir() else None
        if data is None:
            continue
        try:
            found.append(_decode(entry / "config.json", data))
        except CorruptFile:
            continue
    return found


__all__ = ["TeamConfigStore", "list_teams", "UNSET"]
