"""Claude Code's settings files, merged as Claude Code merges them: the user's
``~/.claude/settings.json``, the project's ``{cwd}/.claude/settings.json`` (or the file
``AGENTTEAMS_SETTINGS`` names, in its place) and the project's own
``{cwd}/.claude/settings.local.json``, later ones on top.

What agents read of them: ``permissions.allow`` / ``deny`` / ``ask`` (every file's rules
count: lists are joined, and a deny anywhere wins), ``permissions.defaultMode`` (the latest
file's), ``permissions.additionalDirectories`` (joined) and ``hooks`` (every file's hooks
run). A file that cannot be read is logged and left out; so is a rule that is not one.
An approval's permission update whose destination is one of the files is written into it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipc.locks import locked
from ipc.permission_rules import BEHAVIORS, Rule, RuleSet, parse_rules
from ipc.storage import atomic_write

log = logging.getLogger("agentteams.settings")


def settings_files(cwd: Path) -> list[Path]:
    explicit = os.environ.get("AGENTTEAMS_SETTINGS")
    project = Path(explicit) if explicit else cwd / ".claude" / "settings.json"
    return [Path.home() / ".claude" / "settings.json", project, cwd / ".claude" / "settings.local.json"]


@dataclass
class Settings:
    rules: RuleSet = field(default_factory=RuleSet)
    default_mode: str = ""
    directories: list[str] = field(default_factory=list)
    hooks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # event -> matcher groups


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.error("%s: cannot read settings (%s); left out", path, exc)
        return {}
    if not isinstance(data, dict):
        log.error("%s: settings must be a JSON object; left out", path)
        return {}
    return data


def _rules(path: Path, permissions: dict[str, Any], behavior: str) -> list[Rule]:
    found = []
    values = permissions.get(behavior, [])
    for value in values if isinstance(values, list) else []:
        try:
            found.extend(parse_rules([value], f"{path}: permissions.{behavior}"))
        except ValueError as exc:
            log.error("%s; the rule is left out", exc)
    return found


DESTINATIONS = ("userSettings", "projectSettings", "localSettings")


def destination_file(destination: str, cwd: Path) -> Path | None:
    """The settings file a permission update's ``destination`` names (None: the session)."""
    files = dict(zip(DESTINATIONS, settings_files(cwd), strict=True))
    return files.get(destination)


def add_permissions(path: Path, lock: Path, *, rules: dict[str, list[str]], directories: list[str]) -> None:
    """Add rules (by behaviour) and directories to the ``permissions`` of the settings file at
    ``path``, as Claude Code's "don't ask again" does, keeping everything else in it. A file
    that cannot be read is left alone (logged): it is the user's."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with locked(lock, root=lock.parent):
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError) as exc:
            log.error(
                "%s: cannot read settings (%s); the permission update holds for this session only", path, exc
            )
            return
        if not isinstance(data, dict) or not isinstance(data.setdefault("permissions", {}), dict):
            log.error(
                "%s: not settings as Claude Code writes them; the update holds for this session only", path
            )
            return
        permissions = data["permissions"]
        for key, values in [*rules.items(), ("additionalDirectories", directories)]:
            if not values:
                continue
            current = permissions.get(key) if isinstance(permissions.get(key), list) else []
            permissions[key] = [*current, *(v for v in values if v not in current)]
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, (json.dumps(data, indent=2) + "\n").encode())


def load(cwd: Path) -> Settings:
    merged = Settings()
    for path in settings_files(cwd):
        data = _read(path)
        permissions = data.get("permissions")
        if isinstance(permissions, dict):
            for behavior in BEHAVIORS:
                merged.rules.add(behavior, _rules(path, permissions, behavior))
            mode = permissions.get("defaultMode")
            if isinstance(mode, str) and mode:
                merged.default_mode = mode
            dirs = permissions.get("additionalDirectories")
            if isinstance(dirs, list):
                merged.directories += [str(d) for d in dirs if isinstance(d, str)]
        hooks = data.get("hooks")
        if isinstance(hooks, dict):
            for event, groups in hooks.items():
                if isinstance(groups, list):
                    merged.hooks.setdefault(event, []).extend(g for g in groups if isinstance(g, dict))
    return merged
