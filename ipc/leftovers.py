"""Temp files a killed writer left behind, and their removal.

A rewrite goes through ``.{name}.{pid}.tmp`` beside its target (:func:`temp_path`), renamed
over the target when whole. A writer SIGKILLed between making that file and renaming it
leaves it there, as big as the part it wrote (a pile of unread reports: megabytes), and
nothing else would ever remove it. So the next writer of the same target, holding the
target's lock, removes the temps of that target whose pid is gone (:func:`remove_dead_temps`),
in a team's directories only.

Only our own name for that same target is touched: Claude Code 2.1.330 writes
``{name}.tmp-{pid}``, agent-team-mail ``{stem}.tmp`` (tests/test_peer_writers.py), and a
temp of another target is another lock's business. A live pid's temp is left alone even if
that pid is a newcomer that reused a dead writer's number: it may be a writer at work.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

from ipc.osproc import alive
from ipc.paths import child_path

LIST_EVERY = 10.0  # seconds between listings of one directory by one process
_TEMP = re.compile(r"^\.(.+)\.([0-9]+)\.tmp$")  # greedy: the pid is the last number
# directory -> (when this process listed it, the temps of writers then gone, by target name)
_listed: dict[Path, tuple[float, dict[str, list[tuple[str, int]]]]] = {}


def temp_path(path: Path) -> Path:
    """Where this process writes the next version of ``path`` before renaming it."""
    return child_path(path.parent, f".{path.name}.{os.getpid()}.tmp")  # one per task: not interned


def remove_dead_temps(path: Path) -> None:
    """Remove the temps of ``path`` left by writers that are gone (caller holds ``path``'s
    lock, so no writer of ``path`` that plays by it is half-way through one). The directory
    is listed at most once per :data:`LIST_EVERY` seconds per process, not per write (a
    directory can hold thousands of task files): a temp left since the last listing waits
    for the next. Each one found is checked again before it is removed: its pid may have
    been given to a new writer since."""
    if not _in_team_state(path):
        return
    directory = path.parent
    now = time.monotonic()
    listed = _listed.get(directory)
    if listed is None or now - listed[0] >= LIST_EVERY:
        if len(_listed) >= 256:  # a long-lived process that has written in many roots
            _listed.clear()
        listed = _listed[directory] = (now, _dead_temps(directory))
    for name, pid in listed[1].pop(path.name, ()):
        if not alive(pid):
            with contextlib.suppress(OSError):  # gone already: another writer removed it
                os.unlink(directory / name)


def _in_team_state(path: Path) -> bool:
    """A team's file (``teams/{team}/…``, ``teams/{team}/inboxes/…``, ``tasks/{team}/…``): the
    same writer also writes the user's own files (Claude Code's settings, ``~/.claude.json``),
    whose directories are not ours to clean, whatever the names in them."""
    team_dir = path.parent.parent if path.parent.name == "inboxes" else path.parent
    return team_dir.parent.name in ("teams", "tasks")


def _dead_temps(directory: Path) -> dict[str, list[tuple[str, int]]]:
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    found: dict[str, list[tuple[str, int]]] = {}
    me = os.getpid()
    for name in names:
        match = _TEMP.match(name)
        if match is None:
            continue
        pid = int(match.group(2))
        if pid != me and not alive(pid):
            found.setdefault(match.group(1), []).append((name, pid))
    return found
