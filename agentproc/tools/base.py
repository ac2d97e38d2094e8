"""The tool interface: a name, a JSON schema the model sees, and a function."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentproc.context import AgentContext
from ipc.errors import AgentTeamsError


@dataclass(frozen=True)
class ToolResult:
    content: str
    is_error: bool = False


class ToolFailure(Exception):
    """Raised inside a tool for an error the model should read (not a crash)."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[AgentContext, dict[str, Any]], str]
    read_only: bool = False

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def require(args: dict[str, Any], key: str, kind: type = str) -> Any:
    value = args.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        raise ToolFailure(f"'{key}' is required and must be a {kind.__name__}")
    return value


class ToolBox:
    """The tools one teammate may use; calling an unlisted tool is an error the model sees."""

    def __init__(self, ctx: AgentContext, tools: list[Tool]) -> None:
        self.ctx = ctx
        self.tools = {t.name: t for t in tools}

    def names(self) -> list[str]:
        return list(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"Error: no tool named {name!r} is available to this agent; available: {', '.join(self.tools)}", True)
        if not isinstance(args, dict):
            return ToolResult(f"Error: {name} input must be a JSON object", True)
        try:
            return ToolResult(tool.run(self.ctx, args))
        except ToolFailure as exc:
            return ToolResult(f"Error: {exc}", True)
        except AgentTeamsError as exc:
            return ToolResult(f"Error: {exc.message}", True)
