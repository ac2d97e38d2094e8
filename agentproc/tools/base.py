"""The tool interface: a name, the Struct its input decodes into (which gives the model its
schema and description), a function of that typed input, and what the tool touches (its
kind, and the paths of a call), so a permission policy can judge any tool without knowing
it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from agentproc.context import AgentContext
from ipc import tool_inputs
from ipc.errors import AgentTeamsError, Halted, InvalidInput
from ipc.permission_rules import Call

ToolKind = Literal["coordination", "read", "write", "exec"]
In = TypeVar("In", bound=msgspec.Struct)


@dataclass(frozen=True)
class ToolResult:
    content: str
    is_error: bool = False


class ToolFailure(Exception):
    """Raised inside a tool for an error the model should read (not a crash)."""


def no_paths(ctx: AgentContext, args: object) -> list[str]:
    return []


def no_subject(args: object) -> str | None:
    return None


def no_risk(args: object) -> str:
    return ""


@dataclass(frozen=True)
class Tool(Generic[In]):
    name: str
    input: type[In]
    run: Callable[[AgentContext, In], str]
    kind: ToolKind = "write"
    paths: Callable[[AgentContext, In], list[str]] = no_paths
    # What a permission rule's specifier is compared with, beside paths: an exec tool's
    # shell command (``Bash(git:*)``), the subagent type of an Agent call (``Agent(Explore)``).
    subject: Callable[[In], str | None] = no_subject
    # Why a call is dangerous enough to ask even where the mode would let it run ('' if not).
    risk: Callable[[In], str] = no_risk

    @property
    def description(self) -> str:
        return tool_inputs.description(self.input)

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": tool_inputs.input_schema(self.input),
        }

    def decode(self, args: dict[str, Any]) -> In:
        """The call's input as the model sent it, typed; InvalidInput (one line, naming the
        field and what it must be) if it does not fit."""
        return tool_inputs.decode(self.input, args, f"invalid {self.name} input")

    def touches(self, ctx: AgentContext, args: dict[str, Any]) -> list[str]:
        """The paths a call (as the model sent it) touches; none for an input that does not
        decode, which never runs."""
        try:
            return self.paths(ctx, self.decode(args))
        except InvalidInput:
            return []

    def risky(self, args: dict[str, Any]) -> str:
        try:
            return self.risk(self.decode(args))
        except InvalidInput:
            return ""

    def rule_call(self, ctx: AgentContext, args: dict[str, Any]) -> Call:
        """The call as permission rules judge it (the tool alone for an input that does not
        decode, which never runs)."""
        try:
            typed = self.decode(args)
        except InvalidInput:
            return Call(self.name)
        subject = self.subject(typed)
        if self.kind == "exec":
            return Call(self.name, command=subject or "")
        paths = tuple(str(ctx.resolve(p)) for p in self.paths(ctx, typed) if p and not p.startswith("?"))
        return Call(self.name, paths=paths, names=subject)


@dataclass(frozen=True)
class Decision:
    action: Literal["allow", "ask", "deny"]
    reason: str = ""
    outside: tuple[str, ...] = ()


class PermissionPolicy(Protocol):
    """Decides whether a call may run, and answers the ones that must ask. Both see the
    input as the model sent it, which is also what the lead is asked about."""

    def offered(self, ctx: AgentContext, tools: list[Tool[Any]]) -> list[Tool[Any]]: ...
    def decide(self, ctx: AgentContext, tool: Tool[Any], args: dict[str, Any]) -> Decision: ...
    def ask(
        self, ctx: AgentContext, tool: Tool[Any], tool_use_id: str, args: dict[str, Any], decision: Decision
    ) -> tuple[bool, dict[str, Any], str]: ...


_call_ids = itertools.count(1)
# Claude Code 2.1.38 calls the Agent tool Task; a model that uses either name is understood.
ALIASES = {"Task": "Agent"}


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def needed(value: str | None, name: str) -> str:
    """A field the input's ``type`` requires (one the Struct cannot require of every call)."""
    if not value:
        raise ToolFailure(f"'{name}' is required and must be a non-empty string")
    return value


class ToolBox:
    """The tools one agent may use, behind its permission policy; calling an unlisted tool
    is an error the model sees."""

    def __init__(self, ctx: AgentContext, tools: list[Tool[Any]], policy: PermissionPolicy) -> None:
        self.ctx = ctx
        self.tools = {t.name: t for t in tools}
        self.policy = policy

    def names(self) -> list[str]:
        return list(self.tools)

    def offered(self) -> list[Tool[Any]]:
        """The tools the model is shown now (in plan mode, only what plan mode allows)."""
        return self.policy.offered(self.ctx, list(self.tools.values()))

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.offered()]

    def call(self, name: str, args: dict[str, Any], tool_use_id: str | None = None) -> ToolResult:
        """Run a tool after its permission check. Without ``tool_use_id`` (the offline model)
        the call and its result are recorded in the transcript here; a model that has ids
        records its own messages."""
        self._unless_halted(name)
        record = tool_use_id is None
        tool_use_id = tool_use_id or f"toolu_offline_{next(_call_ids):06d}"
        transcript = self.ctx.transcript
        if record and transcript is not None:
            transcript.append(
                "assistant", [{"type": "tool_use", "id": tool_use_id, "name": name, "input": args}]
            )
        result = self._call(name, args, tool_use_id)
        self._unless_halted(name)  # its result (a command killed by the stop) is not acted on
        if self.ctx.show is not None:
            said = " ".join(f"{k}={v}" for k, v in args.items() if isinstance(v, (str, int)))
            self.ctx.show(f"{name} {said}\n{result.content}", "✖" if result.is_error else "⚙")
        if record and transcript is not None:
            transcript.append(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": result.content,
                        "is_error": result.is_error,
                    }
                ],
            )
        return result

    def _unless_halted(self, name: str) -> None:
        if self.ctx.halt:
            raise Halted(f"{self.ctx.name} was stopped during {name}")

    def _call(self, name: str, args: dict[str, Any], tool_use_id: str) -> ToolResult:
        tool = self.tools.get(ALIASES.get(name, name))
        if tool is None:
            return ToolResult(
                f"Error: no tool named {name!r} is available to this agent; available: {', '.join(self.tools)}",
                True,
            )
        if not isinstance(args, dict):
            return ToolResult(f"Error: {name} input must be a JSON object", True)
        try:
            typed = tool.decode(args)
        except InvalidInput as exc:
            return ToolResult(f"Error: {exc.message}", True)
        decision = self.policy.decide(self.ctx, tool, args)
        if decision.action == "deny":
            return ToolResult(f"Permission denied: {decision.reason}", True)
        updated = args
        if decision.action == "ask":
            approved, updated, reason = self.policy.ask(self.ctx, tool, tool_use_id, args, decision)
            if not approved:
                return ToolResult(f"Permission denied by the lead: {reason}. The tool did not run.", True)
        self.ctx.tool_use_id = tool_use_id
        self.ctx.tool_uses += 1
        try:
            if updated != args:
                typed = tool.decode(updated)  # the lead changed the input
            return ToolResult(tool.run(self.ctx, typed))
        except ToolFailure as exc:
            return ToolResult(f"Error: {exc}", True)
        except AgentTeamsError as exc:
            return ToolResult(f"Error: {exc.message}", True)
