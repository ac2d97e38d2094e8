"""The teams under a root: every ``teams/*/config.json`` that parses, and a line for each
that does not."""

from __future__ import annotations

import os

import msgspec

from ipc.boundary import decode_errors
from ipc.errors import CorruptFile
from ipc.paths import resolve_root
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
            continue
        try:
            with decode_errors(entry / "config.json", "team config"):
                found.append(_decoder.decode(data))
        except CorruptFile as exc:
            problems.append(exc.message)
    return found, problems
