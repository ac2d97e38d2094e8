"""The team config, ``teams/{team}/config.json``: every read-modify-write under its lock (Claude
Code takes none; concurrent spawns here never lose a member). A rewrite keeps every field it
does not know, top level and per member. Reads are cached against the file's identity, so the
hot path (every send checks membership) decodes the file only when it changed."""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from ipc import trust
from ipc.boundary import decode_errors, os_errors
from ipc.clock import now_ms
from ipc.errors import Conflict, CorruptFile, InvalidInput, NotFound
from ipc.locks import is_claude_root, locked
from ipc.paths import TeamPaths, agent_id, color_for, normalise_agent_name
from ipc.preserve import Merges, merged, read_object
from ipc.schemas import BACKEND_TYPE, COLORS, LEAD_AGENT_TYPE, LEAD_NAME, Member, TeamConfig, dump_json
from ipc.storage import FileKey, atomic_write, ensure_dir, file_key, read_bytes, read_settled_bytes

_decoder = msgspec.json.Decoder(TeamConfig)
T = TypeVar("T")

# Member fields a caller may change with update_member (agentId and name identify it).
_UPDATABLE = {"agent_type", "model", "prompt", "color", "plan_mode_required", "permission_mode"}
_UPDATABLE |= {"tmux_pane_id", "cwd", "subscriptions", "backend_type", "is_active", "host"}
log = logging.getLogger("agentteams.config")
TORN_WAIT = 1.0  # s a reader with no copy waits for a torn config to be whole


def _decode(path: Path, data: bytes) -> TeamConfig:
    with decode_errors(path, "team config"):
        return _decoder.decode(data)


def encode_config(config: TeamConfig, original: dict[str, Any] | None, merges: Merges | None = None) -> bytes:
    """The config as written, every other writer's fields kept (``merges``: what merged before)."""
    out = merged(original, msgspec.structs.replace(config, members=[]))  # members below, one by one
    before: dict[Any, dict[str, Any]] = {}
    if original and isinstance(original.get("members"), list):
        before = {m.get("agentId"): m for m in original["members"] if isinstance(m, dict)}
    members = [(m.agent_id, before.get(m.agent_id), m) for m in config.members]
    out["members"] = (merges or Merges()).all(members)
    return dump_json(out)


class TeamConfigStore:
    def __init__(self, root: str | os.PathLike[str] | None, team: str) -> None:
        self._bind(TeamPaths(root, team))

    @classmethod
    def at(cls, paths: TeamPaths) -> TeamConfigStore:
        store = cls.__new__(cls)
        store._bind(paths)
        return store

    def _bind(self, paths: TeamPaths) -> None:
        self.paths = paths
        self.team = self.paths.team
        self.path = self.paths.config
        self._join_counter = self.paths.team_dir / ".joined"
        self._cached: tuple[FileKey, TeamConfig] | None = None
        # The last config this process read or wrote whole: what a read returns and a
        # mutation rebuilds from when an in-place writer (Claude Code) left the file torn.
        self._last_good: TeamConfig | None = None
        self._last_good_bytes = b""  # what it was read or written from: unknown fields kept
        self._torn: FileKey | None = None  # the torn file read as that copy
        self._merges = Merges()

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> TeamConfig:
        """The config as on disk now (decoded again only if the file changed). One left torn
        by a writer that rewrites it in place (Claude Code, stalled or killed mid-write) reads
        as the copy this store read last, until a whole one replaces it; with no copy, it is
        waited for up to TORN_WAIT, then CorruptFile."""
        if self._torn is not None and self._last_good is not None and file_key(self.path) == self._torn:
            return self._last_good
        deadline = time.monotonic() + TORN_WAIT
        while True:
            try:
                return self._read()
            except CorruptFile as exc:
                if self._last_good is not None:
                    if self._torn != file_key(self.path):
                        self._torn = file_key(self.path)  # waited on once, not at every read
                        log.warning("%s; read as the copy read before, until it is rewritten", exc.message)
                    return self._last_good
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    def _read(self) -> TeamConfig:
        key = file_key(self.path)
        if key is None:
            raise NotFound(self.paths.missing())
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        found = read_settled_bytes(self.path, _decoder.decode, "team config")
        if found is None:
            raise NotFound(f"team {self.team!r} does not exist under {self.paths.root}")
        self._last_good_bytes, config = found
        self._cached = (key, config)
        self._last_good = config
        return config

    def config_member(self, name: str) -> Member | None:
        """The member called ``name``, or None (also when the team has no readable config)."""
        try:
            return self.read().member(normalise_agent_name(name))
        except (NotFound, CorruptFile, InvalidInput):
            return None

    def require_member(self, name: str) -> Member:
        config = self.read()
        member = config.member(normalise_agent_name(name))
        if member is None:
            known = ", ".join(m.name for m in config.members)
            raise NotFound(f"{name!r} is not a member of team {self.team!r}; members: {known}")
        return member

    def _mutate(self, change: Callable[[TeamConfig], T]) -> T:
        with locked(self.path, root=self.paths.root):
            try:  # a writer that rewrites in place (Claude Code) may be caught mid-write
                found = read_settled_bytes(self.path, _decoder.decode, "team config")
            except CorruptFile as exc:
                if self._last_good is None:
                    raise
                log.warning("%s; rebuilt from the copy read last", exc.message)
                data = read_bytes(self.path) or b""
                if data.strip():
                    (self.path.parent / f"{self.path.name}.corrupt-{now_ms()}").write_bytes(data)
                found = self._last_good_bytes, _decoder.decode(self._last_good_bytes)
            if found is None:
                raise NotFound(f"team {self.team!r} does not exist under {self.paths.root}")
            data, config = found
            result = change(config)
            out = encode_config(config, read_object(data) if data else None, self._merges)
            written = atomic_write(self.path, out)
            self._cached = (written, config)  # the next read, set_active's look among them, decodes nothing
            self._last_good, self._last_good_bytes = config, out
            return result

    def repair_torn(self) -> None:
        """A config torn by a killed in-place writer (Claude Code) rebuilt from the copy read last."""
        try:
            self._read()
        except CorruptFile:
            self._mutate(lambda config: None)  # the torn one is kept beside it

    def create(
        self,
        description: str = "",
        *,
        lead_model: str = "offline",
        cwd: str | None = None,
        lead_session_id: str | None = None,
    ) -> TeamConfig:
        """Create the team with its lead member; refuses an existing team."""
        ensure_dir(self.paths.team_dir)
        ensure_dir(self.paths.inboxes)
        ensure_dir(self.paths.tasks_dir)
        with locked(self.path, root=self.paths.root):
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
            if not self.paths.tasks_lock.exists():
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
        backend_type: str = BACKEND_TYPE,
        host: str = "",
        rename: bool = True,
        permission_mode: str = "",
        color: str = "",
        allowed_tools: str = "",
        disallowed_tools: str = "",
        effort: str = "",
        verify_key: str = "",
    ) -> Member:
        """Add a teammate. A taken name gets ``-2``, ``-3``… (Claude Code's rule), or with
        ``rename=False`` is refused; the color follows join order. ``host``: the host it runs
        on (a team on the engine); ``verify_key``: its public key (:mod:`ipc.trust`)."""
        base = normalise_agent_name(name)
        if base == LEAD_NAME:
            raise InvalidInput(f"{LEAD_NAME!r} is the lead's name; give the teammate another name")

        def add(config: TeamConfig) -> Member:
            taken = {m.name for m in config.members}
            if not rename:
                self._refuse_taken(base, config)
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
                color=color or color_for(self._next_join_index(config)),
                plan_mode_required=plan_mode_required,
                joined_at=now_ms(),
                tmux_pane_id="",
                cwd=cwd or os.getcwd(),
                subscriptions=[],
                backend_type=backend_type,
                is_active=False,
                host=host or UNSET,
                permission_mode=permission_mode or UNSET,
                allowed_tools=allowed_tools or UNSET,
                disallowed_tools=disallowed_tools or UNSET,
                effort=effort or UNSET,
                verify_key=verify_key or UNSET,
            )
            config.members.append(member)
            return member

        return self._mutate(add)

    def ensure_lead_key(self, *, replace_lost: bool = True) -> None:
        """Make this host's lead key pair for a team of ours if it has none (:mod:`ipc.trust`).
        The first becomes the lead's ``verifyKey``; one made because the file is gone (the
        runtime directory is cleared at boot) replaces it, or with ``replace_lost=False``
        (another host of a team across hosts, whose lead side signs with its own key) is
        added to the lead's known keys. A team whose lead is Claude Code's is left alone."""
        config = self.read()
        lead = config.member(LEAD_NAME)
        if config.writes_v2 or lead is None:
            return
        have = trust.lead_key_path(self.paths).exists()
        if have and isinstance(lead.verify_key, str):
            return
        public = trust.lead_public(self.paths) if have else trust.make_lead_key(self.paths)
        if public is None:
            return
        if not isinstance(lead.verify_key, str) or replace_lost:
            self.set_key(LEAD_NAME, public)
        else:
            self._mutate(lambda c: keep_key(c, LEAD_NAME, public))

    def check_new_member(self, name: str) -> None:
        """Conflict if ``name`` is taken (a spawn that does not ask for a suffix)."""
        self._refuse_taken(normalise_agent_name(name), self.read())

    def _refuse_taken(self, name: str, config: TeamConfig) -> None:
        if config.member(name) is not None:
            raise Conflict(
                f"{name!r} is already a member of team {self.team!r}; give another name, "
                f"or ask for '{name}-2' with --rename (rename=True in Python)"
            )

    def _next_join_index(self, config: TeamConfig) -> int:
        # Called under the config lock. Join order survives removals, as in Claude Code; in a
        # team another tool made (no counter of ours) the palette continues past the colours
        # its members already have.
        data = read_bytes(self._join_counter)
        index = join_index(config, int(data or b"0") if (data or b"0").strip().isdigit() else 0)
        atomic_write(self._join_counter, str(index + 1).encode())
        return index

    def update_member(self, name: str, **changes: Any) -> Member:
        return self.update_members({name: changes})[0]

    def update_members(self, changes: dict[str, dict[str, Any]]) -> list[Member]:
        """Several members' fields in one write; one gone is skipped (NotFound if all are)."""
        unknown = {field for fields in changes.values() for field in fields} - _UPDATABLE
        if unknown:
            raise InvalidInput(
                f"cannot update member field(s) {sorted(unknown)}; allowed: {sorted(_UPDATABLE)}"
            )
        wanted = {normalise_agent_name(name): fields for name, fields in changes.items()}

        def update(config: TeamConfig) -> list[Member]:
            for i, member in enumerate(config.members):
                if member.name in wanted:
                    config.members[i] = msgspec.structs.replace(member, **wanted[member.name])
            found = [m for m in config.members if m.name in wanted]
            if not found:
                known = ", ".join(m.name for m in config.members)
                raise NotFound(
                    f"{', '.join(changes)!r} is not a member of team {self.team!r}; members: {known}"
                )
            return found

        return self._mutate(update)

    def set_active(self, marks: dict[str, bool]) -> list[str]:
        """``isActive`` as Claude Code keeps it: true while a member works on a turn, false
        when idle. Every change in one locked write, and no write when nothing changes (an
        idle team writes nothing); the members whose mark changed."""
        wanted = {normalise_agent_name(name): active for name, active in marks.items()}
        current = self.read()
        if all(m.is_active is wanted.get(m.name, m.is_active) for m in current.members):
            return []

        def mark(config: TeamConfig) -> list[str]:
            changed = []
            for i, member in enumerate(config.members):
                active = wanted.get(member.name, member.is_active)
                if member.is_active is not active:
                    config.members[i] = msgspec.structs.replace(member, is_active=active)
                    changed.append(member.name)
            return changed

        return self._mutate(mark)

    def remove_member(self, name: str) -> Member | None:
        """Remove a terminated teammate; returns it, or None if it was not there."""
        target = normalise_agent_name(name)
        if target == LEAD_NAME:
            raise InvalidInput("the lead cannot be removed from its team; delete the team instead")

        def remove(config: TeamConfig) -> Member | None:
            for i, member in enumerate(config.members):
                if member.name == target:
                    keep_key(config, member.name, member.verify_key)
                    return config.members.pop(i)
            return None

        return self._mutate(remove)

    def set_key(self, name: str, key: str) -> None:
        """Give member ``name`` a new public key (:mod:`ipc.trust`); its previous one is
        retired, so what it signed before still verifies."""
        target = normalise_agent_name(name)

        def change(config: TeamConfig) -> None:
            for i, member in enumerate(config.members):
                if member.name == target:
                    keep_key(config, member.name, member.verify_key)
                    config.members[i] = msgspec.structs.replace(member, verify_key=key)
                    return
            raise NotFound(f"{name!r} is not a member of team {self.team!r}")

        self._mutate(change)

    def delete(self, *, force: bool = False) -> None:
        """Remove ``teams/{team}``, ``tasks/{team}`` and the runtime directory; refused while
        teammates remain (``force``: remove them too). A config that does not parse does not stop it."""
        with locked(self.path, root=self.paths.root):
            data = read_bytes(self.path)
            if data is None:
                raise NotFound(f"team {self.team!r} does not exist under {self.paths.root}")
            try:
                remaining = [m.name for m in _decode(self.path, data).teammates()]
            except CorruptFile:
                remaining = []
            if remaining and not force:
                raise Conflict(
                    f"team {self.team!r} still has {len(remaining)} teammate(s): {', '.join(remaining)}; "
                    "shut them down first while the team is up, or delete them with it: --force"
                )
            with os_errors(f"could not delete team {self.team!r}"):
                if self.paths.tasks_dir.exists():
                    shutil.rmtree(self.paths.tasks_dir)
                # Config last, so a crash mid-delete leaves a team that can be deleted again.
                for child in sorted(self.paths.team_dir.iterdir()):
                    if child.name in (self.path.name, "config.lock", "config.json.lock"):
                        continue
                    if child.is_dir():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
                self.path.unlink()
        shutil.rmtree(self.paths.team_dir, ignore_errors=True)
        # Its sockets, pid file and logs go with it (the supervisor is down by now).
        shutil.rmtree(self.paths.runtime_path(), ignore_errors=True)
        self._cached, self._last_good, self._torn = None, None, None  # no copy to fall back on
        self._last_good_bytes = b""


def keep_key(config: TeamConfig, name: str, key: object, keep: int = 8) -> None:
    """Keep ``key`` among ``name``'s known keys (the newest ``keep``): what it signed still
    verifies after the member's key changed or the member left."""
    if not isinstance(key, str):
        return
    known = dict(config.known_keys) if isinstance(config.known_keys, dict) else {}
    known[name] = [*[k for k in known.get(name, []) if k != key], key][-keep:]
    config.known_keys = known


def join_index(config: TeamConfig, counted: int) -> int:
    """The next member's place in the colour cycle: the join counter, unless the members
    already there (another tool's, which keeps no counter of ours) have gone past it."""
    mates = config.teammates()
    taken = [COLORS.index(m.color_name) for m in mates if m.color_name in COLORS]
    return max(counted, len(mates), max(taken, default=-1) + 1)


def _make_lead_key(paths: TeamPaths) -> None:
    """A lead-side process about to write as the lead makes the lead's key first, if none
    exists; not in a Claude Code root, whose teams' leads may be Claude Code's own (the
    supervisor of a team there makes it when the team is up). ipc.team_state puts the
    engine-aware version in its place."""
    if not is_claude_root(paths.root):
        TeamConfigStore.at(paths).ensure_lead_key(replace_lost=False)


trust.keyring.make_lead = _make_lead_key

__all__ = ["TeamConfigStore", "encode_config", "file_key", "UNSET"]
