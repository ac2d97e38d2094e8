"""Claude Code's permission updates, one Struct per kind: what an approval's
``permission_updates``, a permission request's ``permission_suggestions`` and a lead's
``team_permission_update`` carry::

    {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
     "behavior": "allow", "destination": "session"}
    {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    {"type": "addDirectories", "directories": ["/tmp"], "destination": "session"}

(also ``replaceRules``, ``removeRules``, ``removeDirectories``). One given at a door is
checked by :func:`parse`: a field it does not know is refused there, and what is wrong is one
line that says what would be right. One read from Claude Code's files stays the object it was
(the inbox Structs keep them as JSON objects): an update Claude Code writes with a field or a
kind these Structs do not know is passed on whole, never cut down to what is known here.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, Struct, UnsetType

from ipc.errors import InvalidInput
from ipc.options import PERMISSION_MODES
from ipc.permission_rules import BEHAVIORS, Behavior, Rule

Destination = Literal["session", "localSettings", "projectSettings", "userSettings", "cliArg"]


class RuleValue(Struct, kw_only=True, omit_defaults=True, rename="camel", forbid_unknown_fields=True):
    """A rule: ``{"toolName": "Bash", "ruleContent": "npm test:*"}``; no ``ruleContent``: every call."""

    tool_name: str
    rule_content: str | UnsetType = UNSET

    def __str__(self) -> str:
        return self.tool_name if not self.rule_content else f"{self.tool_name}({self.rule_content})"


class _Update(Struct, kw_only=True, tag_field="type", rename="camel", forbid_unknown_fields=True):
    destination: Destination = "session"


class _Rules(_Update):
    rules: list[RuleValue]
    behavior: Behavior


class AddRules(_Rules, tag="addRules"):
    pass


class ReplaceRules(_Rules, tag="replaceRules"):
    pass


class RemoveRules(_Rules, tag="removeRules"):
    pass


class SetMode(_Update, tag="setMode"):
    mode: str


class AddDirectories(_Update, tag="addDirectories"):
    directories: list[str]


class RemoveDirectories(_Update, tag="removeDirectories"):
    directories: list[str]


PermissionUpdate = AddRules | ReplaceRules | RemoveRules | SetMode | AddDirectories | RemoveDirectories
KINDS = ("addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories")
EXAMPLES = {
    "addRules": '{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}], '
    '"behavior": "allow", "destination": "session"}',
    "setMode": '{"type": "setMode", "mode": "acceptEdits", "destination": "session"}',
    "addDirectories": '{"type": "addDirectories", "directories": ["/srv/data"], "destination": "session"}',
}
EXAMPLES |= {kind: EXAMPLES["addRules"].replace("addRules", kind) for kind in ("replaceRules", "removeRules")}
EXAMPLES["removeDirectories"] = EXAMPLES["addDirectories"].replace("addDirectories", "removeDirectories")


def parse(raw: Any, where: str = "permission update") -> PermissionUpdate:
    """``raw`` (a JSON object) as its Struct; InvalidInput, one line naming what is wrong and
    showing a right one, for anything else."""
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where} is not a JSON object; give one like {EXAMPLES['addRules']}")
    kind = raw.get("type")
    if kind not in KINDS:
        raise InvalidInput(f"{where}: type {kind!r} is not one; use one of {', '.join(KINDS)}")
    try:
        update: PermissionUpdate = msgspec.convert(raw, PermissionUpdate)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"{where} ({kind}): {exc}; e.g. {EXAMPLES[kind]}") from None
    if isinstance(update, _Rules):
        if not update.rules:
            raise InvalidInput(f"{where} ({kind}) has no rules; e.g. {EXAMPLES[kind]}")
        for rule in update.rules:
            try:
                Rule.parse(str(rule))
            except ValueError as exc:
                raise InvalidInput(f"{where} ({kind}): {exc}") from None
    elif isinstance(update, SetMode) and update.mode not in PERMISSION_MODES:
        modes = ", ".join(PERMISSION_MODES)
        raise InvalidInput(f"{where} (setMode): mode {update.mode!r} is not one; use one of {modes}")
    elif isinstance(update, AddDirectories | RemoveDirectories) and (
        problem := _wrong_directory(update.directories)
    ):
        raise InvalidInput(f"{where} ({kind}): {problem}; e.g. {EXAMPLES[kind]}")
    return update


def _wrong_directory(directories: list[str]) -> str | None:
    """What is wrong with the first directory that is not an absolute path: read by a
    teammate elsewhere, there is no working directory of the sender's to resolve it against."""
    for directory in directories:
        if not directory.strip():
            return "a directory is empty"
        if not directory.startswith("/"):
            return f"directory {directory!r} is not an absolute path"
    return None


def parse_all(raw: Any, where: str = "permission update") -> list[PermissionUpdate]:
    """A list of updates, each checked (the first wrong one named by its place)."""
    if not isinstance(raw, list):
        raise InvalidInput(f"{where}s must be a list of JSON objects like {EXAMPLES['addRules']}")
    return [parse(item, f"{where} {i}" if len(raw) > 1 else where) for i, item in enumerate(raw, 1)]


def add_rules(rules: list[str], behavior: str, directories: list[str]) -> list[PermissionUpdate]:
    """The updates for the session that add ``rules`` (``Bash(npm test:*)``) as ``behavior``,
    and ``directories``; InvalidInput naming the first one that is wrong."""
    if behavior not in BEHAVIORS:
        raise InvalidInput(f"behavior {behavior!r}; use one of {', '.join(BEHAVIORS)}")
    parsed = []
    for rule in rules:
        try:
            parsed.append(Rule.parse(rule))
        except ValueError as exc:
            raise InvalidInput(f"permission rule {rule!r}: {exc}") from None
    out: list[PermissionUpdate] = []
    if parsed:
        values = [RuleValue(tool_name=r.tool, rule_content=r.specifier or UNSET) for r in parsed]
        out.append(AddRules(rules=values, behavior=behavior))
    if problem := _wrong_directory(directories):
        raise InvalidInput(f"{problem}; give an absolute path like /home/me/data")
    if directories:
        out.append(AddDirectories(directories=directories))
    return out


def as_object(update: PermissionUpdate) -> dict[str, Any]:
    """The update as Claude Code writes it (every field, ``type`` first)."""
    data: dict[str, Any] = msgspec.to_builtins(update)
    return data
