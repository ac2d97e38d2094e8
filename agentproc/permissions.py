"""Permission modes and the permission_request / permission_response protocol.

Policy (SPEC §7, seed 004 §4.8.3):
- ``bypassPermissions``: nothing asks.
- ``acceptEdits`` (also a teammate spawned without a mode): everything inside the cwd is
  allowed; any tool touching a path outside it asks the lead, reads included.
- ``default``: as acceptEdits, and Write, Edit and Bash always ask.
- ``dontAsk``: whatever would ask is denied without asking.
- ``plan`` (and plan mode before approval): read-only tools only.
Coordination tools (SendMessage, task tools, ExitPlanMode) never ask.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentproc.context import AgentContext
from agentproc.replies import wait_for_reply
from agentproc.tools.files import paths_of, resolve
from ipc import messaging
from ipc.paths import permission_request_id
from ipc.schemas import (
    LEAD_NAME,
    PermissionGrant,
    PermissionRequest,
    PermissionResponse,
    parse_body,
)

COORDINATION = frozenset({"SendMessage", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList", "ExitPlanMode"})
READ_ONLY = frozenset({"Read", "Glob", "Grep"})
SENSITIVE = frozenset({"Write", "Edit", "Bash"})
SYSTEM_PATHS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/bin/", "/usr/bin/", "/usr/local/bin/", "/usr/lib/")


@dataclass(frozen=True)
class Decision:
    action: Literal["allow", "ask", "deny"]
    reason: str = ""
    outside: tuple[str, ...] = ()


def timeout() -> float:
    return float(os.environ.get("AGENTTEAMS_PERMISSION_TIMEOUT", "300"))


def bash_paths(command: str) -> list[str]:
    """Paths a shell command mentions, by a heuristic: a word (or the part after ``=``, ``>``
    or ``<``) that starts with ``/``, ``~`` or ``../`` and whose top-level directory exists.
    That leaves out awk and sed programs such as ``'/total/ {print}'``; it may still take a
    regex for a path (``/usr/``) and ask once too often, which is the safe side to err on."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    found = []
    for word in words:
        if any(c.isspace() for c in word):
            continue  # a quoted program or sentence, not a path
        for part in word.replace("=", " ").replace(">", " ").replace("<", " ").split():
            part = part.rstrip(";|&)")  # shell punctuation glued to the word
            if part.startswith(("../", "~")):
                found.append(part)
            elif part.startswith("/"):
                top = part.split("/")[1]
                if top and os.path.exists("/" + top):
                    found.append(part)
    return found


def outside_paths(ctx: AgentContext, tool: str, args: dict[str, Any]) -> list[str]:
    cwd = ctx.identity.cwd.resolve()
    raw = bash_paths(str(args.get("command", ""))) if tool == "Bash" else paths_of(tool, args)
    out = []
    for path in raw:
        if not path or path.startswith(SYSTEM_PATHS):
            continue
        resolved = resolve(ctx, path)
        if resolved != cwd and cwd not in resolved.parents:
            out.append(str(resolved))
    return out


def decide(ctx: AgentContext, tool: str, args: dict[str, Any]) -> Decision:
    if tool in COORDINATION:
        return Decision("allow")
    if ctx.plan_mode or ctx.permission_mode == "plan":
        if tool in READ_ONLY:
            return Decision("allow")
        return Decision("deny", f"{tool} is not allowed in plan mode, which is read-only until the plan is approved (call ExitPlanMode)")
    if ctx.permission_mode == "bypassPermissions":
        return Decision("allow")
    outside = tuple(outside_paths(ctx, tool, args))
    if outside:
        why = f"{tool} touches {', '.join(outside)} outside the working directory {ctx.identity.cwd}"
    elif ctx.permission_mode == "default" and tool in SENSITIVE:
        why = f"{tool} needs approval in default permission mode"
    else:
        return Decision("allow")
    if ctx.permission_mode == "dontAsk":
        return Decision("deny", f"dontAsk mode denies what would need approval: {why}")
    return Decision("ask", why, outside)


def request(ctx: AgentContext, tool: str, tool_use_id: str, args: dict[str, Any], decision: Decision) -> tuple[bool, dict[str, Any], str]:
    """Ask the lead; returns (approved, input to use, reason when denied)."""
    request_id = permission_request_id()
    suggestions: list[dict[str, Any]] = []
    if decision.outside:
        dirs = sorted({str(Path(p).parent) for p in decision.outside})
        suggestions.append({"type": "addDirectories", "directories": dirs, "destination": "session"})
    body = PermissionRequest(
        request_id=request_id, agent_id=ctx.name, tool_name=tool, tool_use_id=tool_use_id,
        description=decision.reason, input=args, permission_suggestions=suggestions,
    )
    messaging.send_body(ctx.identity.root, ctx.identity.team, ctx.name, LEAD_NAME, body, color=ctx.identity.color)
    ctx.channel.ring(LEAD_NAME)
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
