"""Agent types: the built-in four, and custom definitions from ``.claude/agents/*.md`` and
from a team's ``--agents`` JSON (the same fields, ``prompt`` for the body).

A definition is Markdown with YAML frontmatter, as Claude Code reads it: ``name``,
``description``, ``tools`` (a comma-separated string or a YAML list; ``*`` or ``['*']`` is
every tool), ``disallowedTools``, ``model``, ``maxTurns``, ``permissionMode``, ``background``,
``color``, ``initialPrompt``, ``memory``, ``skills``, ``hooks``, ``effort``, ``mcpServers``,
``requiredMcpServers`` and agentteams' ``forkSubagent`` (this agent's fork gate) and
``subagentCheckIn`` (seconds between its model's check-ins on a synchronous subagent it
waits for; 0: none); the body is
the prompt. A tool may be given as a permission rule (``Bash(git:*)``): in ``tools`` the tool
is offered for the calls the rule covers only, in ``disallowedTools`` the calls it covers
are denied. A frontmatter field that cannot be read is an error, never "no restriction": a
definition that would widen what an agent may do by being misread is refused.

Coordination tools (SendMessage and the task tools) are a teammate's whatever its type, as
Claude Code injects team tools into every teammate; the type restricts the work tools.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ipc.errors import InvalidInput
from ipc.model_specs import check_effort
from ipc.permission_rules import Rule

log = logging.getLogger("agentteams.agents")

COORDINATION = ("SendMessage", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList")
WORK_TOOLS = (
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "WebFetch",
    "EnterPlanMode",
    "ExitPlanMode",
    "Agent",
    "TaskOutput",
    "TaskStop",
)
READ_ONLY_WORK = ("Read", "Glob", "Grep", "WebFetch")
MEMORY_SCOPES = ("user", "project", "local")
AGENTS_EXAMPLE = '{"reviewer": {"description": "...", "prompt": "...", "tools": ["Read", "Grep"]}}'
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
    scopes: tuple[Rule, ...] = ()  # tools offered only for the calls these rules cover
    denied: tuple[Rule, ...] = ()  # calls denied whatever the mode (disallowedTools patterns)
    model: str | None = None
    prompt: str = ""
    max_turns: int | None = None
    permission_mode: str | None = None
    background: bool = False  # a subagent of this type always runs in the background
    color: str | None = None  # a teammate of this type gets this color
    initial_prompt: str = ""  # put before the agent's first turn
    memory: str | None = None  # "user", "project" or "local": its memory directory's scope
    skills: tuple[str, ...] = ()  # skills whose SKILL.md is part of its system prompt
    hooks: dict[str, Any] = field(default_factory=dict, compare=False)  # its own hooks, as settings'
    effort: str | None = None  # sent as the request's output_config.effort
    mcp_servers: tuple[Any, ...] = ()  # names, or {name: config}: started with the agent
    required_mcp_servers: tuple[str, ...] = ()  # patterns of servers it cannot start without
    fork_subagent: bool | None = None  # forkSubagent: this agent's fork gate (None: the team's)
    subagent_check_in: float | None = None  # subagentCheckIn: seconds (0: none; None: the environment's)
    source: str = field(default="builtin", compare=False)


def _entries(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        # Commas inside a rule's parentheses belong to it: "Bash(a, b), Read" is two entries.
        return [
            v.strip().strip("'\"") for v in re.split(r",(?![^()]*\))", value.strip().strip("[]")) if v.strip()
        ]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ValueError(
        f"'{key}' must be a comma-separated string or a list of tool names, not {type(value).__name__}"
    )


def _rules(value: Any, key: str) -> list[Rule]:
    entries = _entries(value, key)
    try:
        return [Rule.parse(entry) for entry in entries]
    except ValueError as exc:
        raise ValueError(f"'{key}': {exc}") from None


def tool_spec(value: Any, key: str = "tools") -> tuple[tuple[str, ...] | None, tuple[Rule, ...]]:
    """(tool names, scopes) of a ``tools`` list: None for every tool (``*``); a tool named
    only by rules (``Bash(git:*)``) is offered, scoped to what they cover; named bare it is
    whole."""
    if value in (None, ""):
        return None, ()
    rules = _rules(value, key)
    if any(r.tool == "*" for r in rules) or (isinstance(value, str) and value.strip() == "*"):
        return None, ()
    whole = {r.tool for r in rules if r.specifier is None}
    names = tuple(dict.fromkeys(r.tool for r in rules))
    return names, tuple(r for r in rules if r.specifier is not None and r.tool not in whole)


def disallowed_spec(value: Any) -> tuple[tuple[str, ...], tuple[Rule, ...]]:
    """(tools withheld, calls denied) of a ``disallowedTools`` list."""
    rules = _rules(value or [], "disallowedTools")
    return tuple(r.tool for r in rules if r.specifier is None), tuple(r for r in rules if r.specifier)


def parse_definition(text: str, source: str = "") -> AgentDefinition:
    """Frontmatter (YAML between ``---`` lines) plus the body as the prompt."""
    meta, body = _frontmatter(text)
    return _definition(meta, body, source)


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
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
    return meta, body


def _definition(meta: dict[str, Any], body: str, source: str) -> AgentDefinition:
    """The definition the fields of ``meta`` (frontmatter's, or a JSON object's) describe."""
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("the frontmatter needs a 'name'")
    max_turns = meta.get("maxTurns")
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError("'maxTurns' must be a positive whole number")
    tools, scopes = tool_spec(meta.get("tools"))
    withheld, denied = disallowed_spec(meta.get("disallowedTools"))
    background = meta.get("background", False)
    if not isinstance(background, bool):
        raise ValueError("'background' must be true or false")
    fork = meta.get("forkSubagent")
    if fork is not None and not isinstance(fork, bool):
        raise ValueError("'forkSubagent' must be true or false")
    check_in = meta.get("subagentCheckIn")
    if check_in is not None and (
        isinstance(check_in, bool) or not isinstance(check_in, int | float) or check_in < 0
    ):
        raise ValueError("'subagentCheckIn' must be a number of seconds (0: no check-ins)")
    memory = meta.get("memory")
    if memory is not None and memory not in MEMORY_SCOPES:
        raise ValueError(f"'memory' must be one of {', '.join(MEMORY_SCOPES)}")
    hooks = meta.get("hooks") or {}
    if not isinstance(hooks, dict):
        raise ValueError("'hooks' must be a mapping of hook events to lists, as in settings.json")
    mcp = meta.get("mcpServers") or []
    try:
        effort = check_effort(meta.get("effort"), "'effort'")
    except InvalidInput as exc:
        raise ValueError(exc.message) from None
    return AgentDefinition(
        name=name,
        description=str(meta.get("description") or ""),
        tools=tools,
        disallowed_tools=withheld,
        scopes=scopes,
        denied=denied,
        model=str(meta["model"]) if meta.get("model") else None,
        prompt=str(meta.get("prompt") or body.strip()),
        max_turns=max_turns,
        permission_mode=str(meta["permissionMode"]) if meta.get("permissionMode") else None,
        background=background,
        color=str(meta["color"]) if meta.get("color") else None,
        initial_prompt=str(meta.get("initialPrompt") or ""),
        memory=memory,
        skills=tuple(_entries(meta.get("skills") or [], "skills")),
        hooks=hooks,
        effort=effort or None,
        mcp_servers=tuple(mcp)
        if isinstance(mcp, list)
        else tuple(mcp.items())
        if isinstance(mcp, dict)
        else (),
        fork_subagent=fork,
        subagent_check_in=None if check_in is None else float(check_in),
        required_mcp_servers=tuple(_entries(meta.get("requiredMcpServers") or [], "requiredMcpServers")),
        source=source,
    )


def parse_json_definitions(text: str) -> dict[str, AgentDefinition]:
    """Definitions as Claude Code's ``--agents`` takes them: a JSON object of name to the
    frontmatter's fields, ``prompt`` for the body. InvalidInput, one line naming the agent and
    the field, for anything else."""
    try:
        return json_definitions(text)
    except ValueError as exc:
        raise InvalidInput(f"--agents: {exc}") from None


def json_definitions(text: str) -> dict[str, AgentDefinition]:
    """:func:`parse_json_definitions`, ValueError for bad input (argparse's type check)."""
    if not text.strip():
        return {}
    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc}); give {AGENTS_EXAMPLE}") from None
    if not isinstance(given, dict):
        raise ValueError(f"give a JSON object of agent names to definitions, as {AGENTS_EXAMPLE}")
    found: dict[str, AgentDefinition] = {}
    for name, fields in given.items():
        if not isinstance(fields, dict):
            raise ValueError(f"agent {name!r} must be an object of fields, as {AGENTS_EXAMPLE}")
        for key in ("description", "prompt"):  # Claude Code requires both
            if not isinstance(fields.get(key), str) or not fields[key].strip():
                raise ValueError(f"agent {name!r} needs a '{key}' (a non-empty string)")
        if "name" in fields and fields["name"] != name:
            raise ValueError(
                f"agent {name!r} has 'name' {fields['name']!r}; leave it out or make it {name!r}"
            )
        try:
            found[name] = _definition({**fields, "name": name}, "", "--agents")
        except ValueError as exc:
            raise ValueError(f"agent {name!r}: {exc}") from None
    return found


def definition_dirs(cwd: Path) -> tuple[Path, Path]:
    return Path.home() / ".claude" / "agents", cwd / ".claude" / "agents"


def _scan(cwd: Path, given: str = "") -> tuple[dict[str, AgentDefinition], dict[str, str]]:
    """(definitions by name, why each unreadable file was skipped, by its file name); the
    ``--agents`` JSON ``given`` wins over both folders, as in Claude Code."""
    found: dict[str, AgentDefinition] = {}
    broken: dict[str, str] = {}
    for folder in definition_dirs(cwd):
        for path in sorted(folder.rglob("*.md")) if folder.is_dir() else []:
            try:
                definition = parse_definition(path.read_text(), str(path))
            except (OSError, ValueError) as exc:
                log.error("%s: not an agent definition (%s); skipped", path, exc)
                broken[path.stem] = f"its definition {path} cannot be read ({exc})"
                continue
            found[definition.name] = definition
            broken.pop(definition.name, None)
    for name, definition in parse_json_definitions(given).items():
        found[name] = definition
        broken.pop(name, None)
    return found, broken


def load_definitions(cwd: Path, given: str = "") -> dict[str, AgentDefinition]:
    """Custom agents from ``~/.claude/agents`` then ``{cwd}/.claude/agents`` (project wins),
    subfolders included, then the ``--agents`` JSON ``given`` (which wins over both). A file
    that is not a definition is logged and skipped."""
    return _scan(cwd, given)[0]


def known_types(cwd: Path, given: str = "") -> list[str]:
    return [*BUILTIN, *sorted(load_definitions(cwd, given))]


def resolve(agent_type: str, cwd: Path, given: str = "") -> AgentDefinition:
    """The definition of ``agent_type``: a custom one (``given``: the team's ``--agents``
    JSON), else a built-in; InvalidInput naming the known types (or why its file could not
    be read) otherwise."""
    found, broken = _scan(cwd, given)
    custom = found.get(agent_type)
    if custom is not None:
        return custom
    if agent_type in broken:
        raise InvalidInput(f"unknown agent type {agent_type!r}: {broken[agent_type]}")
    if agent_type not in BUILTIN:
        known = [*BUILTIN, *sorted(found)]
        raise InvalidInput(f"unknown agent type {agent_type!r}; known: {', '.join(known)}")
    return AgentDefinition(name=agent_type, tools=BUILTIN[agent_type])


def allowed_tools(definition: AgentDefinition) -> list[str]:
    work = [t for t in WORK_TOOLS if definition.tools is None or t in definition.tools]
    names = [*COORDINATION, *work]
    return [n for n in names if n not in definition.disallowed_tools]
