"""An agent's log as ``logs TEAM NAME`` shows it: its own file, or, for an in-process
teammate (a thread of the team's host process, which has one log for all of them), the
host's lines tagged with its name."""

from __future__ import annotations

import re
from pathlib import Path

from ipc.paths import TeamPaths

_LINE = re.compile(rb"^\d{4}-\d\d-\d\d [\d:,]+ (\S+) ")  # the host's format: time, agent, logger


def read(paths: TeamPaths, name: str) -> tuple[Path, bytes]:
    """The log's path and its bytes; FileNotFoundError when the agent has none."""
    path = paths.log(name)
    try:
        return path, path.read_bytes()
    except FileNotFoundError:
        host = paths.host_log()
        mine = _lines_of(host.read_bytes(), name.encode())
        if not mine:
            raise
        return host, mine


def _lines_of(data: bytes, name: bytes) -> bytes:
    """``name``'s lines, with the lines that carry on one of them (a traceback's)."""
    kept, theirs = [], False
    for line in data.splitlines(keepends=True):
        tagged = _LINE.match(line)
        if tagged is not None:
            theirs = tagged.group(1) == name
        if theirs:
            kept.append(line)
    return b"".join(kept)
