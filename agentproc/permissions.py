"""Permission modes and the permission_request / permission_response protocol.

Policy (Claude Code's permission modes, with the lead answering for a teammate), judged
from what each tool declares (its kind and the paths of a call), never from its name:
- ``bypassPermissions``: nothing asks.
- ``acceptEdits`` (also a teammate spawned without a mode): everything inside the cwd is
  allowed; any call touching a path outside it asks the lead, reads included, and so does
  any call whose paths cannot be known (a shell command that changes directory or expands
  variables).
- ``default``: as acceptEdits, and every writing or executing tool always asks.
- ``dontAsk``: whatever would ask is denied without asking.
- ``plan`` (and plan mode before approval): read-only tools only.
Coordination tools (SendMessage, task tools, ExitPlanMode) never ask.

In every mode (bypassPermissions too), no tool may write the team's state (``teams/`` and
``tasks/`` under the root: inboxes, config, tasks) nor touch the team's private runtime
directory (sockets and the lead's key): the team's own tools are the only way in, and they
sign what they write (:mod:`ipc.trust`). For Bash this is a heuristic over the command's
words (paths, and names such as ``inboxes/``): a script that builds a path at run time is
not seen, which is why every reader verifies signatures anyway.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from agentproc.context import AgentContext
from agentproc.replies import wait_for_reply
from agentproc.tools.base import Decision, Tool
from ipc.paths import permission_request_id
from ipc.schemas import LEAD_NAME, PermissionGrant, PermissionRequest, PermissionResponse, parse_body

SYSTEM_PATHS = (
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/usr/lib/",
)
UNKNOWN = "?"  # a path a tool cannot vouch for starts with this: "?cd $HOME"


def timeout() -> float:
    return float(os.environ.get("AGENTTEAMS_PERMISSION_TIMEOUT", "300"))


def outside_paths(ctx: AgentContext, tool: Tool[Any], args: dict[str, Any]) -> list[str]:
    cwd = ctx.cwd.resolve()
    out = []
    for path in tool.touches(ctx, args):
        if path.startswith(UNKNOWN):
            out.append(path[1:])
            continue
        if not path or path.startswith(SYSTEM_PATHS):
            continue
        resolved = ctx.resolve(path)
        if resolved != cwd and cwd not in resolved.parents:
            out.append(str(resolved))
    return out


# Names in a shell command that point at team state wherever the command runs.
_STATE_WORDS = re.compile(
    r"inboxes/|team-lead\.key|/keys/|refused\.jsonl|\.highwatermark|\.agentteams\b|AGENTTEAMS_HOME|\.claude/(?:teams|tasks)\b"
)


def team_state_aimed_at(ctx: AgentContext, tool: Tool[Any], args: dict[str, Any]) -> str:
    """The team state a call would touch ('' if none is seen): any path under ``teams/`` or
    ``tasks/`` of the root for a tool that writes or runs, the private runtime directory
    for any tool."""
    root = ctx.root.resolve()
    writable = (root / "teams", root / "tasks")
    private = ctx.paths.runtime_path()
    paths = [p for p in tool.touches(ctx, args) if not p.startswith(UNKNOWN)]
    if tool.kind == "exec":
        command = str(args.get("command", ""))
        named = _STATE_WORDS.search(command)
        if named:
            return f"the command names {named.group()}"
        paths += [w for w in _words(command) if "/" in w or w in ("teams", "tasks")]
    for path in paths:
        resolved = ctx.resolve(path)
        guarded = (private, *writable) if tool.kind != "read" else (private,)
        for top in guarded:
            if resolved == top or top in resolved.parents:
                return str(resolved)
    return ""


def _words(command: str) -> list[str]:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    return [part for w in words for part in re.split(r"[=<>;|&()]+", w) if part]


class ModePolicy:
    """The policy of the agent's permission mode, asking the lead through its inbox."""

    def offered(self, ctx: AgentContext, tools: list[Tool[Any]]) -> list[Tool[Any]]:
        if ctx.plan_mode or ctx.permission_mode == "plan":
            return [t for t in tools if t.kind in ("coordination", "read")]
        return tools

    def decide(self, ctx: AgentContext, tool: Tool[Any], args: dict[str, Any]) -> Decision:
        if tool.kind == "coordination":
            return Decision("allow")
        try:
            aimed = team_state_aimed_at(ctx, tool, args)
        except (OSError, ValueError, RuntimeError) as exc:  # cannot tell: fail closed
            aimed = f"a call whose paths could not be judged ({exc})"
        if aimed:
            return Decision(
                "deny",
                f"{tool.name} may not touch the team's own state ({aimed}); use SendMessage and the task tools",
            )
        if ctx.plan_mode or ctx.permission_mode == "plan":
            if tool.kind == "read":
                return Decision("allow")
            return Decision(
                "deny",
                f"{tool.name} is not allowed in plan mode, which is read-only until the plan is approved (call ExitPlanMode)",
            )
        if ctx.permission_mode == "bypassPermissions":
            return Decision("allow")
        outside = tuple(outside_paths(ctx, tool, args))
        if outside:
            why = f"{tool.name} touches {', '.join(outside)} outside the working directory {ctx.cwd}"
        elif ctx.permission_mode == "default" and tool.kind in ("write", "exec"):
            why = f"{tool.name} needs approval in default permission mode"
        else:
            return Decision("allow")
        if ctx.permission_mode == "dontAsk":
            return Decision("deny", f"dontAsk mode denies what would need approval: {why}")
        return Decision("ask", why, outside)

    def ask(
        self, ctx: AgentContext, tool: Tool[Any], tool_use_id: str, args: dict[str, Any], decision: Decision
    ) -> tuple[bool, dict[str, Any], str]:
        """Ask the lead; returns (approved, input to use, reason when denied)."""
        request_id = permission_request_id()
        suggestions: list[dict[str, Any]] = []
        known = [p for p in decision.outside if p.startswith("/")]
        if known:
            dirs = sorted({str(Path(p).parent) for p in known})
            suggestions.append({"type": "addDirectories", "directories": dirs, "destination": "session"})
        body = PermissionRequest(
            request_id=request_id,
            agent_id=ctx.name,
            tool_name=tool.name,
            tool_use_id=tool_use_id,
            description=decision.reason,
            input=args,
            permission_suggestions=suggestions,
        )
        ctx.messenger.send_body(ctx.name, LEAD_NAME, body, color=ctx.color)
        limit = timeout()

        def is_answer(message: Any) -> bool:
            answer = parse_body(message.text)
            return isinstance(answer, PermissionResponse) and answer.request_id == request_id

        reply = wait_for_reply(ctx, is_answer, limit)
        if reply is None:
            return False, args, f"no answer to permission request {request_id} within {limit:g}s"
        answer = parse_body(reply.text)
        assert isinstance(answer, PermissionResponse)
        if answer.subtype == "success" and isinstance(answer.response, PermissionGrant):
            return True, answer.response.updated_input, ""
        return False, args, answer.error if isinstance(answer.error, str) else "denied"


class NoAskPolicy(ModePolicy):
    """For an agent with no one to ask (a subagent; the lead, which is asked itself): what
    would ask is denied, with the reason, as Claude Code denies a background subagent's."""

    def ask(
        self, ctx: AgentContext, tool: Tool[Any], tool_use_id: str, args: dict[str, Any], decision: Decision
    ) -> tuple[bool, dict[str, Any], str]:
        return False, args, f"{decision.reason}; {ctx.name} has no one to ask for approval"
