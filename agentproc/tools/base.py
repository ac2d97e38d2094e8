"""The tool interface: a name, a JSON schema the model sees, and a function."""

from __future__ import annotations

import itertools
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


_call_ids = itertools.count(1)


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

    def offered(self) -> list[Tool]:
        """The tools the model is shown now: in plan mode, only what plan mode allows."""
        from agentproc.permissions import COORDINATION, READ_ONLY

        if self.ctx.plan_mode or self.ctx.permission_mode == "plan":
            return [t for t in self.tools.values() if t.name in COORDINATION or t.name in READ_ONLY]
        return list(self.tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.offered()]

    def call(self, name: str, args: dict[str, Any], tool_use_id: str | None = None) -> ToolResult:
        """Run a tool after its permission check. Without ``tool_use_id`` (the offline model)
        the call and its result are recorded in the transcript here; a model that has ids
        records its own messages."""
        record = tool_use_id is None
        tool_use_id = tool_use_id or f"toolu_offline_{next(_call_ids):06d}"
        if record and self.ctx.transcript is not None:
            self.ctx.transcript.append("assistant", [{"type": "tool_use", "id": tool_use_id, "name": name, "input": args}])
        result = self._call(name, args, tool_use_id)
        if record and self.ctx.transcript is not None:
            self.ctx.transcript.append("user", [{"type": "tool_result", "tool_use_id": tool_use_id, "content": result.content, "is_error": result.is_error}])
        return result

    def _call(self, name: str, args: dict[str, Any], tool_use_id: str) -> ToolResult:
        from agentproc import permissions

        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"Error: no tool named {name!r} is available to this agent; available: {', '.join(self.tools)}", True)
        if not isinstance(args, dict):
            return ToolResult(f"Error: {name} input must be a JSON object", True)
        decision = permissions.decide(self.ctx, name, args)
        if decision.action == "deny":
            return ToolResult(f"Permission denied: {decision.reason}", True)
        if decision.action == "ask":
            approved, args, reason = permissions.request(self.ctx, name, tool_use_id, args, decision)
            if not approved:
                return ToolResult(f"Permission denied by the lead: {reason}. The tool did not run.", True)
        try:
            return ToolResult(tool.run(self.ctx, args))
        except ToolFailure as exc:
            return ToolResult(f"Error: {exc}", True)
        except AgentTeamsError as exc:
            return ToolResult(f"Error: {exc.message}", True)
