"""The teams under a root: every ``teams/*/config.json`` that parses, every team on an
engine this root remembers (``teams/*/engine.json``: its config read from the engine until
this host joins and mirrors it), and a line for each that cannot be read."""

from __future__ import annotations

import os

import msgspec

from ipc.boundary import decode_errors
from ipc.engine.marker import MARKER
from ipc.errors import AgentTeamsError, CorruptFile
from ipc.paths import TeamPaths, resolve_root
from ipc.schemas import TeamConfig
from ipc.storage import read_bytes

_decoder = msgspec.json.Decoder(TeamConfig)


def list_teams(root: str | os.PathLike[str] | None) -> list[TeamConfig]:
    """Every team under ``root`` whose config parses, by name (see :func:`scan_teams`)."""
    return scan_teams(root)[0]


def scan_teams(root: str | os.PathLike[str] | None) -> tuple[list[TeamConfig], list[str]]:
    """Every team under ``root`` whose config parses, by name; and a one-line problem for
    each team directory whose config does not (never silently omitted)."""
    teams_dir = resolve_root(root) / "teams"
    found: list[TeamConfig] = []
    problems: list[str] = []
    if not teams_dir.is_dir():
        return found, problems
    for entry in sorted(teams_dir.iterdir()):
        data = read_bytes(entry / "config.json") if entry.is_dir() else None
        if data is None:
            if entry.is_dir() and (entry / MARKER).exists():
                _from_engine(root, entry.name, found, problems)
            continue
        try:
            with decode_errors(entry / "config.json", "team config"):
                found.append(_decoder.decode(data))
        except CorruptFile as exc:
            problems.append(exc.message)
    return found, problems


def _from_engine(
    root: str | os.PathLike[str] | None, name: str, found: list[TeamConfig], problems: list[str]
) -> None:
    """A team this root made in the engine, or was told of, before this host joined it (no
    mirror of its files yet): its config, from the engine."""
    from ipc.team_state import TeamState  # the engine's stores, loaded only for such a team

    try:
        state = TeamState(TeamPaths(root, name))
        try:
            found.append(state.config.read())
        finally:
            state.close()
    except CorruptFile as exc:  # a damaged marker names itself
        problems.append(exc.message)
    except AgentTeamsError as exc:  # an engine away, a team no longer there
        problems.append(f"team {name}: {exc.message}")
