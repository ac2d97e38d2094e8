"""Claude Code's permission rules: ``Tool`` or ``Tool(specifier)``, as written in the
``permissions.allow`` / ``deny`` / ``ask`` lists of its settings files, in an agent
definition's ``tools`` and ``disallowedTools``, and in an approval's ``addRules`` update.

What a specifier means depends on the tool, as Claude Code reads it:
- ``Bash(npm run test:*)``: the command starts with ``npm run test`` (a whole word);
  ``Bash(git * main)``: ``*`` stands for anything; otherwise the exact command. A command
  made of several (``a && b``, ``a | b``, ``a; b``) is covered only if every part is.
- ``Read(src/**)``, ``Edit(/docs/*.md)``, ``Edit(//tmp/x)``, ``Read(~/.zshrc)``: paths, as
  gitignore patterns (``//`` absolute, ``~/`` the home, ``/`` and plain ones from the
  working directory). ``Read`` rules cover every reading tool (Read, Glob, Grep), ``Edit``
  rules every editing one (Edit, Write, NotebookEdit).
- Any other tool: the specifier is compared with what the call names (the subagent type of
  ``Agent(Explore)``, the domain of ``WebFetch(domain:example.com)``).
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Behavior = Literal["allow", "deny", "ask"]
BEHAVIORS: tuple[Behavior, ...] = ("allow", "deny", "ask")
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
ALIASES = {"Task": "Agent"}  # 2.1.38's name for the Agent tool
_RULE = re.compile(r"^\s*([A-Za-z_*][\w.*-]*)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None = None  # None: every call of the tool

    @classmethod
    def parse(cls, text: str) -> Rule:
        """``Bash``, ``Bash(git:*)``; ValueError naming the text otherwise."""
        matched = _RULE.match(text) if isinstance(text, str) else None
        if matched is None:
            raise ValueError(
                f"{text!r} is not a permission rule: write Tool or Tool(specifier), e.g. Bash(git:*)"
            )
        tool, spec = matched.group(1), matched.group(2)
        spec = spec.strip() if spec is not None else None
        return cls(ALIASES.get(tool, tool), spec if spec not in (None, "", "*") else None)

    def __str__(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    def names(self, tool: str) -> bool:
        """Whether this rule is about ``tool`` (a Read rule is about every reading tool)."""
        tool = ALIASES.get(tool, tool)
        if self.tool == tool:
            return True
        if self.specifier is None:
            # Claude Code's server-wide MCP rules: mcp__server and mcp__server__*
            server = self.tool.removesuffix("__*")
            return server.startswith("mcp__") and server.count("__") == 1 and tool.startswith(server + "__")
        return (self.tool == "Read" and tool in READ_TOOLS) or (self.tool == "Edit" and tool in EDIT_TOOLS)


@dataclass(frozen=True)
class Call:
    """What a rule can judge of one tool call: the tool, its shell command (Bash), the
    absolute paths it touches (file tools) and any other thing it names."""

    tool: str
    command: str | None = None
    paths: tuple[str, ...] = ()
    names: str | None = None


def subcommands(command: str) -> list[str]:
    """The simple commands of a compound one, split at ``&&``, ``||``, ``;``, ``|``, ``&``
    and new lines outside quotes, each as its words joined by spaces (``2>&1`` is a
    redirection, not a split)."""
    lexer = shlex.shlex(command.replace("\\\n", " "), posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"  # a new line separates commands
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    try:
        for token in lexer:
            if not token.strip("&|;\n"):
                parts.append([])
            else:
                parts[-1].append(token)
    except ValueError:
        return [command.strip()]
    return [" ".join(p) for p in parts if p]


def _command_matches(spec: str, command: str) -> bool:
    words = " ".join(_words(command))
    if spec.endswith(":*"):
        prefix = " ".join(_words(spec[:-2]))
        return words == prefix or words.startswith(prefix + " ")
    if "*" in spec:
        return (
            re.fullmatch(".*".join(re.escape(p) for p in spec.split("*")), command.strip(), re.S) is not None
        )
    return command.strip() == spec.strip()


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-style pattern over an absolute path: ``**`` any depth, ``*`` and ``?``
    within one segment; a pattern ending in ``/`` covers everything beneath it."""
    if pattern.endswith("/"):
        pattern += "**"
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + "(?:/.*)?")


def path_pattern(spec: str, cwd: Path) -> str:
    """A rule's path specifier as an absolute pattern."""
    if spec.startswith("//"):
        return spec[1:]
    if spec.startswith("~/"):
        return str(Path.home()) + spec[1:]
    base = str(cwd).rstrip("/")
    if spec.startswith("/"):
        return base + spec
    return f"{base}/{spec.removeprefix('./')}"


def _path_matches(spec: str, path: str, cwd: Path) -> bool:
    return _glob_regex(path_pattern(spec, cwd)).fullmatch(path) is not None


def matches(rule: Rule, call: Call, cwd: Path, *, every: bool) -> bool:
    """Whether ``rule`` covers ``call``. With ``every`` (an allow rule, or a scope) every part
    of a compound command and every path must be covered; without (deny, ask) one is enough."""
    if not rule.names(call.tool):
        return False
    spec = rule.specifier
    if spec is None:
        return True
    combine = all if every else any
    if call.command is not None:
        parts = subcommands(call.command) or [call.command]
        return combine(_command_matches(spec, p) for p in parts)
    if call.tool in READ_TOOLS or call.tool in EDIT_TOOLS:
        if not call.paths:
            return False
        return combine(_path_matches(spec, p, cwd) for p in call.paths)
    return call.names is not None and fnmatch.fnmatchcase(call.names, spec)


@dataclass
class RuleSet:
    """Rules by behaviour, in the order they were added (settings files, then the session)."""

    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)

    def add(self, behavior: Behavior, rules: Iterable[Rule]) -> None:
        target = getattr(self, behavior)
        target.extend(r for r in rules if r not in target)

    def remove(self, behavior: Behavior, rules: Iterable[Rule]) -> None:
        gone = set(rules)
        setattr(self, behavior, [r for r in getattr(self, behavior) if r not in gone])

    def first(self, behavior: Behavior, call: Call, cwd: Path) -> Rule | None:
        every = behavior == "allow"
        return next((r for r in getattr(self, behavior) if matches(r, call, cwd, every=every)), None)


def parse_tool_list(text: str, where: str) -> list[Rule]:
    """Claude Code's ``--allowedTools "Bash(git:*) Edit,Read"``: rules separated by commas or
    spaces outside parentheses; ValueError naming ``where`` and the bad entry."""
    entries = re.findall(r"[^\s,(]+(?:\([^)]*\))?", text)
    return parse_rules(entries, where)


def parse_rules(values: Sequence[object], where: str) -> list[Rule]:
    """Rules from a list of strings; ValueError naming ``where`` and the bad entry."""
    rules = []
    for value in values:
        if not isinstance(value, str):
            raise ValueError(f"{where}: {value!r} is not a rule string")
        try:
            rules.append(Rule.parse(value))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return rules
