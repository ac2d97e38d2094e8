"""Agent types: the built-in four, and custom definitions from ``.claude/agents/*.md``.

A definition is Markdown with YAML frontmatter, as Claude Code reads it: ``name``,
``description``, ``tools`` (a comma-separated string or a YAML list), ``disallowedTools``,
``model``, ``maxTurns``, ``permissionMode``; the body is the prompt. A frontmatter field
that cannot be read is an error, never "no restriction": a definition that would widen what
an agent may do by being misread is refused.

Coordination tools (SendMessage and the task tools) are a teammate's whatever its type, as
Claude Code injects team tools into every teammate; the type restricts the work tools.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ipc.errors import InvalidInput

log = logging.getLogger("agentteams.agents")

COORDINATION = ("SendMessage", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList")
WORK_TOOLS = (
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "ExitPlanMode",
    "Agent",
    "TaskOutput",
    "TaskStop",
)
READ_ONLY_WORK = ("Read", "Glob", "Grep")
BUILTIN: dict[str, tuple[str, ...]] = {
    "general-purpose": WORK_TOOLS,
    "Explore": READ_ONLY_WORK,
    "Plan": (*READ_ONLY_WORK, "ExitPlanMode"),
    "Bash": ("Bash",),
}


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str = ""
    tools: tuple[str, ...] | None = None  # None: every tool
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    prompt: str = ""
    max_turns: int | None = None
    permission_mode: str | None = None
    source: str = field(default="builtin", compare=False)


def _tool_list(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip().strip("'\"") for v in value.strip().strip("[]").split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise ValueError(
        f"'{key}' must be a comma-separated string or a list of tool names, not {type(value).__name__}"
    )


def parse_definition(text: str, source: str = "") -> AgentDefinition:
    """Frontmatter (YAML between ``---`` lines) plus the body as the prompt."""
    meta: dict[str, Any] = {}
    body = text
    if text.startswith("---"):
        _, _, rest = text.partition("---")
        front, sep, body = rest.partition("\n---")
        if not sep:
            raise ValueError("frontmatter is not closed by a '---' line")
        try:
            loaded = yaml.safe_load(front) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"frontmatter is not YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(loaded, dict):
            raise ValueError("frontmatter must be a mapping of keys to values")
        meta = loaded
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("the frontmatter needs a 'name'")
    max_turns = meta.get("maxTurns")
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError("'maxTurns' must be a positive whole number")
    return AgentDefinition(
        name=name,
        description=str(meta.get("description") or ""),
        tools=_tool_list(meta["tools"], "tools") if meta.get("tools") not in (None, "") else None,
        disallowed_tools=_tool_list(meta.get("disallowedTools") or [], "disallowedTools"),
        model=str(meta["model"]) if meta.get("model") else None,
        prompt=str(meta.get("prompt") or body.strip()),
        max_turns=max_turns,
        permission_mode=str(meta["permissionMode"]) if meta.get("permissionMode") else None,
        source=source,
    )


def definition_dirs(cwd: Path) -> tuple[Path, Path]:
    return Path.home() / ".claude" / "agents", cwd / ".claude" / "agents"


def load_definitions(cwd: Path) -> dict[str, AgentDefinition]:
    """Custom agents from ``~/.claude/agents`` then ``{cwd}/.claude/agents`` (project wins).
    A file that is not a definition is logged and skipped."""
    found: dict[str, AgentDefinition] = {}
    for folder in definition_dirs(cwd):
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            try:
                definition = parse_definition(path.read_text(), str(path))
            except (OSError, ValueError) as exc:
                log.error("%s: not an agent definition (%s); skipped", path, exc)
                continue
            found[definition.name] = definition
    return found


def known_types(cwd: Path) -> list[str]:
    return [*BUILTIN, *sorted(load_definitions(cwd))]


def resolve(agent_type: str, cwd: Path) -> AgentDefinition:
    """The definition of ``agent_type``: a custom one, else a built-in; InvalidInput naming
    the known types otherwise."""
    custom = load_definitions(cwd).get(agent_type)
    if custom is not None:
        return custom
    if agent_type not in BUILTIN:
        raise InvalidInput(f"unknown agent type {agent_type!r}; known: {', '.join(known_types(cwd))}")
    return AgentDefinition(name=agent_type, tools=BUILTIN[agent_type])


def allowed_tools(definition: AgentDefinition) -> list[str]:
    work = [t for t in WORK_TOOLS if definition.tools is None or t in definition.tools]
    names = [*COORDINATION, *work]
    return [n for n in names if n not in definition.disallowed_tools]
