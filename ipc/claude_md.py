"""Claude Code's memory files (CLAUDE.md), found and worded as Claude Code loads them into
every session: the user's ``~/.claude/CLAUDE.md``, then from the file system's root down to
the working directory each folder's ``CLAUDE.md``, ``.claude/CLAUDE.md`` and
``CLAUDE.local.md`` (nearer ones later, so they read as the more specific). ``@path``
lines import another file (relative to the file that names it, ``~/`` from the home), five
levels deep at most, each file once.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("agentteams.claude_md")

MAX_IMPORT_DEPTH = 5
_IMPORT = re.compile(r"(?:^|\s)@([^\s`@]+)")  # imported only if such a file exists
INTRO = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written."
)
USER = "user's private global instructions for all projects"
PROJECT = "project instructions, checked into the codebase"
LOCAL = "user's private project instructions, not checked in"


@dataclass(frozen=True)
class Memory:
    path: Path
    kind: str  # USER, PROJECT or LOCAL
    text: str


def _read(path: Path, kind: str, seen: set[Path], depth: int = 0) -> list[Memory]:
    try:
        resolved = path.resolve()
        if resolved in seen or not resolved.is_file():
            return []
        text = resolved.read_text(errors="replace")
    except OSError as exc:
        log.warning("%s: cannot read (%s); left out", path, exc)
        return []
    seen.add(resolved)
    found = [Memory(path, kind, text.strip())]
    if depth >= MAX_IMPORT_DEPTH:
        return found
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        for target in [] if in_code else _IMPORT.findall(line):
            imported = Path(target).expanduser()
            if not imported.is_absolute():
                imported = resolved.parent / imported
            found += _read(imported, kind, seen, depth + 1)
    return found


def memory_files(cwd: Path) -> list[Memory]:
    seen: set[Path] = set()
    found = _read(Path.home() / ".claude" / "CLAUDE.md", USER, seen)
    cwd = cwd.resolve()
    for folder in [*reversed(cwd.parents), cwd]:
        found += _read(folder / "CLAUDE.md", PROJECT, seen)
        found += _read(folder / ".claude" / "CLAUDE.md", PROJECT, seen)
        found += _read(folder / "CLAUDE.local.md", LOCAL, seen)
    return [m for m in found if m.text]


def claude_md_context(cwd: Path) -> str:
    """The memory files as Claude Code words them for the model ('' if there are none)."""
    memories = memory_files(cwd)
    if not memories:
        return ""
    parts = [INTRO, *(f"Contents of {m.path} ({m.kind}):\n\n{m.text}" for m in memories)]
    return "# claudeMd\n" + "\n\n".join(parts)
