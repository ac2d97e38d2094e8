"""What an agent definition adds to its agent's system prompt, as Claude Code adds it: the
agent's memory directory (``memory: user|project|local``) with its ``MEMORY.md``, and the
skills it preloads (``skills: [name]``, each a ``SKILL.md``)."""

from __future__ import annotations

import logging
from pathlib import Path

from ipc.agents import AgentDefinition

log = logging.getLogger("agentteams.agents")
MEMORY_LINES = 200  # of MEMORY.md, as Claude Code reads it into the prompt


def memory_dir(definition: AgentDefinition, cwd: Path) -> Path | None:
    """The agent's memory directory for its scope (None without ``memory``)."""
    if definition.memory is None:
        return None
    base = {
        "user": Path.home() / ".claude" / "agent-memory",
        "project": cwd / ".claude" / "agent-memory",
        "local": cwd / ".claude" / "agent-memory-local",
    }[definition.memory]
    return base / definition.name


def memory_context(definition: AgentDefinition, cwd: Path) -> str:
    folder = memory_dir(definition, cwd)
    if folder is None:
        return ""
    text = ""
    try:
        text = "\n".join((folder / "MEMORY.md").read_text(errors="replace").splitlines()[:MEMORY_LINES])
    except OSError:
        pass
    shown = f"Its MEMORY.md now:\n\n{text}" if text.strip() else "It has no MEMORY.md yet."
    return (
        f"# Agent memory\nYou have a persistent memory directory at {folder} ({definition.memory} scope), "
        "kept across sessions. Read it when it may help, and keep MEMORY.md there up to date with what you "
        f"learn that is worth remembering (short, organised notes). {shown}"
    )


def skill_file(name: str, cwd: Path) -> Path | None:
    for base in (cwd / ".claude" / "skills", Path.home() / ".claude" / "skills"):
        path = base / name / "SKILL.md"
        if path.is_file():
            return path
    return None


def skills_context(definition: AgentDefinition, cwd: Path) -> str:
    parts = []
    for name in definition.skills:
        path = skill_file(name, cwd)
        if path is None:
            log.warning("%s: skill %r not found in .claude/skills or ~/.claude/skills", definition.name, name)
            continue
        try:
            parts.append(f"## Skill: {name} ({path})\n\n{path.read_text(errors='replace').strip()}")
        except OSError as exc:
            log.warning("%s: cannot read %s (%s)", definition.name, path, exc)
    return "# Preloaded skills\n\n" + "\n\n".join(parts) if parts else ""
