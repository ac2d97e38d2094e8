"""Agent types: the built-in four, and custom definitions from ``.claude/agents/*.md``.

Coordination tools (SendMessage and the task tools) are a teammate's, whatever its type,
as Claude Code injects team tools into every teammate; the type restricts the work tools.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("agentteams.agents")

COORDINATION = ("SendMessage", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList")
WORK_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep", "ExitPlanMode")
BUILTIN: dict[str, tuple[str, ...]] = {
    "general-purpose": WORK_TOOLS,
    "Explore": ("Read", "Glob", "Grep"),
    "Plan": ("Read", "Glob", "Grep", "ExitPlanMode"),
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


def _split(value: str) -> tuple[str, ...]:
    value = value.strip().strip("[]")
    return tuple(v.strip().strip("'\"") for v in value.split(",") if v.strip())


def parse_definition(text: str, source: str = "") -> AgentDefinition:
    """Frontmatter (``key: value`` lines between ``---``) plus the body as the prompt."""
    meta: dict[str, str] = {}
    body = text
    if text.startswith("---"):
        _, _, rest = text.partition("---")
        front, sep, body = rest.partition("\n---")
        if not sep:
            raise ValueError("frontmatter is not closed by a '---' line")
        for line in front.strip().splitlines():
            if ":" in line and not line.lstrip().startswith("#"):
                key, _, value = line.partition(":")
                meta[key.strip()] = value.strip()
    if not meta.get("name"):
        raise ValueError("the frontmatter needs a 'name'")
    prompt = meta.get("prompt") or body.strip()
    return AgentDefinition(
        name=meta["name"],
        description=meta.get("description", ""),
        tools=_split(meta["tools"]) if meta.get("tools") else None,
        disallowed_tools=_split(meta.get("disallowedTools", "")),
        model=meta.get("model") or None,
        prompt=prompt,
        max_turns=int(meta["maxTurns"]) if meta.get("maxTurns", "").isdigit() else None,
        permission_mode=meta.get("permissionMode") or None,
        source=source,
    )


def load_definitions(cwd: Path) -> dict[str, AgentDefinition]:
    """Custom agents from ``~/.claude/agents`` then ``{cwd}/.claude/agents`` (project wins)."""
    found: dict[str, AgentDefinition] = {}
    for folder in (Path.home() / ".claude" / "agents", cwd / ".claude" / "agents"):
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            try:
                definition = parse_definition(path.read_text(), str(path))
            except (OSError, ValueError) as exc:
                log.error("%s: not an agent definition (%s); skipped", path, exc)
                continue
            found[definition.name] = definition
    return found


def resolve(agent_type: str, cwd: Path) -> AgentDefinition:
    """The definition of ``agent_type``: a custom one, else a built-in (unknown: all tools)."""
    custom = load_definitions(cwd).get(agent_type)
    if custom is not None:
        return custom
    if agent_type not in BUILTIN:
        log.warning("unknown agent type %r: treated as general-purpose", agent_type)
    return AgentDefinition(name=agent_type, tools=BUILTIN.get(agent_type, WORK_TOOLS))


def allowed_tools(definition: AgentDefinition) -> list[str]:
    work = [t for t in WORK_TOOLS if definition.tools is None or t in definition.tools]
    names = [*COORDINATION, *work]
    return [n for n in names if n not in definition.disallowed_tools]
