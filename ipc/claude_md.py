"""Claude Code's memory files (CLAUDE.md), found and worded as Claude Code loads them into
every session: the user's ``~/.claude/CLAUDE.md``, then from the file system's root down to
the working directory each folder's ``CLAUDE.md``, ``.claude/CLAUDE.md`` and
``CLAUDE.local.md`` (nearer ones later, so they read as the more specific). ``@path``
lines import another file (relative to the file that names it, ``~/`` from the home), five
levels deep at most, each file once.

Rules: every ``*.md`` under ``~/.claude/rules/`` (after the user's CLAUDE.md) and under each
folder's ``.claude/rules/`` (after its ``.claude/CLAUDE.md``), subfolders too, in name order.
A rule without ``paths:`` in its frontmatter is an instruction like CLAUDE.md; one with
``paths:`` (globs) applies only to work on matching files: Claude Code loads it when such a
file is read, which an agent here is not told of, so it is listed (its path and its globs)
for the agent to read when its work touches such files.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

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
CONDITIONAL = (
    "Rules that apply only when working with files matching their paths; "
    "read a rule before working with such files:"
)


@dataclass(frozen=True)
class Memory:
    path: Path
    kind: str  # USER, PROJECT or LOCAL
    text: str
    paths: tuple[str, ...] = ()  # a rule's globs: it applies only to work on matching files


def _rule_paths(path: Path, text: str) -> tuple[str, tuple[str, ...]]:
    """A rule's body and its ``paths:`` globs (none: it always applies)."""
    if not text.startswith("---"):
        return text, ()
    front, sep, body = text[3:].partition("\n---")
    try:
        meta = (yaml.safe_load(front) or {}) if sep else None
    except yaml.YAMLError:
        meta = None
    if not isinstance(meta, dict):
        log.warning("%s: its frontmatter cannot be read; the whole file applies everywhere", path)
        return text, ()
    globs = meta.get("paths") or []
    if isinstance(globs, str):  # "src/**/*.ts, lib/**" as well as a YAML list
        globs = [g.strip() for g in globs.split(",")]
    if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
        log.warning("%s: 'paths' is not a list of globs; the rule applies everywhere", path)
        globs = []
    return body, tuple(g.strip() for g in globs if g.strip())


def _read(path: Path, kind: str, seen: set[Path], depth: int = 0, rule: bool = False) -> list[Memory]:
    try:
        resolved = path.resolve()
        if resolved in seen or not resolved.is_file():
            return []
        text = resolved.read_text(errors="replace")
    except OSError as exc:
        log.warning("%s: cannot read (%s); left out", path, exc)
        return []
    seen.add(resolved)
    globs: tuple[str, ...] = ()
    if rule:
        text, globs = _rule_paths(path, text)
    found = [Memory(path, kind, text.strip(), globs)]
    if globs or depth >= MAX_IMPORT_DEPTH:  # a conditional rule's imports come with reading it
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


def _rules(folder: Path, kind: str, seen: set[Path]) -> list[Memory]:
    found: list[Memory] = []
    for path in sorted(folder.rglob("*.md")) if folder.is_dir() else []:
        found += _read(path, kind, seen, rule=True)
    return found


def memory_files(cwd: Path) -> list[Memory]:
    seen: set[Path] = set()
    home = Path.home() / ".claude"
    found = [*_read(home / "CLAUDE.md", USER, seen), *_rules(home / "rules", USER, seen)]
    cwd = cwd.resolve()
    for folder in [*reversed(cwd.parents), cwd]:
        found += _read(folder / "CLAUDE.md", PROJECT, seen)
        found += _read(folder / ".claude" / "CLAUDE.md", PROJECT, seen)
        found += _rules(folder / ".claude" / "rules", PROJECT, seen)
        found += _read(folder / "CLAUDE.local.md", LOCAL, seen)
    return [m for m in found if m.text]


def claude_md_context(cwd: Path) -> str:
    """The memory files as Claude Code words them for the model ('' if there are none), then
    the rules that apply to some files only, one line each."""
    memories = memory_files(cwd)
    always = [m for m in memories if not m.paths]
    scoped = [m for m in memories if m.paths]
    if not memories:
        return ""
    parts = [INTRO, *(f"Contents of {m.path} ({m.kind}):\n\n{m.text}" for m in always)]
    if scoped:
        parts.append("\n".join([CONDITIONAL, *(f"- {m.path}: {', '.join(m.paths)}" for m in scoped)]))
    return "# claudeMd\n" + "\n\n".join(parts)
