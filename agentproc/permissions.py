"""Permission modes and the permission_request / permission_response protocol.

Policy (Claude Code's permission modes and rules, with the lead answering for a teammate),
judged from what each tool declares (its kind, the paths of a call, its command and what
makes it risky), never from its name:
- Permission rules (``ipc.permission_rules``) from the settings files, the agent definition
  and approvals: deny always wins; ask asks whatever the mode; allow lets a call run.
- ``bypassPermissions``: nothing asks (but an ask rule).
- ``acceptEdits`` (also a teammate spawned without a mode): everything inside the working
  directories is allowed; any call touching a path outside them asks the lead, reads
  included, and so does any call whose paths cannot be known (a shell command that changes
  directory or expands variables) and any dangerous command (``sudo``, ``git push``, ...).
- ``default``: as acceptEdits, and every writing or executing tool always asks.
- ``dontAsk``: whatever would ask is denied without asking.
- ``plan`` (and plan mode before approval): read-only tools only.
- ``delegate`` (a lead's): coordination tools only; its teammates do the work.
Coordination tools (SendMessage, task tools, ExitPlanMode) never ask (a deny rule still holds).
An approval's ``permission_updates`` (addRules, replaceRules, removeRules, addDirectories,
removeDirectories, setMode) hold for the rest of the agent's life; added rules and
directories bound for a settings file are written into it.

In every mode (bypassPermissions too), no tool may write the team's state (``teams/`` and
``tasks/`` under the root: inboxes, config, tasks) nor touch the team's private runtime
directory (sockets and the lead's key): the team's own tools are the only way in, and they
sign what they write (:mod:`ipc.trust`). For Bash this is a heuristic over the command's
words (paths, and names such as ``inboxes/``): a script that builds a path at run time is
not seen, which is why every reader verifies signatures anyway.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from pathlib import Path
from typing import Any

from agentproc.context import AgentContext
from agentproc.replies import wait_for_reply
from agentproc.tools.base import Decision, Tool
from ipc import claude_settings
from ipc.paths import permission_request_id
from ipc.permission_rules import BEHAVIORS, Call, Rule, matches, subcommands
from ipc.schemas import LEAD_NAME, PermissionGrant, PermissionRequest, PermissionResponse, parse_body

log = logging.getLogger("agentteams.permissions")
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
    """Paths of the call outside the working directories (cwd and any added ones)."""
    roots = [ctx.cwd.resolve(), *ctx.directories]
    out = []
    for path in tool.touches(ctx, args):
        if path.startswith(UNKNOWN):
            out.append(path[1:])
            continue
        if not path or path.startswith(SYSTEM_PATHS):
            continue
        resolved = ctx.resolve(path)
        if not any(resolved == root or root in resolved.parents for root in roots):
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


def _scoped_out(ctx: AgentContext, tool: Tool[Any], call: Call) -> str:
    """Why the agent definition does not let this call run ('' if it does): a tool it
    names only as ``Tool(specifier)`` may run only the calls those rules cover."""
    scopes = [r for r in ctx.scopes if r.tool == tool.name]
    if not scopes or any(matches(r, call, ctx.cwd, every=True) for r in scopes):
        return ""
    return f"this agent's definition allows {tool.name} only as {', '.join(str(r) for r in scopes)}"


class ModePolicy:
    """The policy of the agent's permission mode and rules, asking the lead through its inbox.

    In order: the agent definition's scopes and every deny rule (whatever the mode); then
    coordination tools run; plan mode is read-only; an ask rule asks; bypassPermissions
    allows; an allow rule allows; a path outside the working directories, a dangerous
    command, or (in ``default``) any write or exec asks; ``dontAsk`` denies what would ask."""

    def offered(self, ctx: AgentContext, tools: list[Tool[Any]]) -> list[Tool[Any]]:
        if ctx.permission_mode == "delegate":
            return [t for t in tools if t.kind == "coordination"]
        if ctx.in_plan_mode:
            return [t for t in tools if t.kind in ("coordination", "read")]
        return tools

    def decide(self, ctx: AgentContext, tool: Tool[Any], args: dict[str, Any]) -> Decision:
        call = tool.rule_call(ctx, args)
        scoped_out = _scoped_out(ctx, tool, call)
        if scoped_out:
            return Decision("deny", scoped_out)
        denied = ctx.rules.first("deny", call, ctx.cwd)
        if denied is not None:
            return Decision("deny", f"the permission rule {denied} denies this {tool.name} call")
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
        if ctx.permission_mode == "delegate":
            return Decision(
                "deny", f"in delegate mode the lead only coordinates: a teammate runs {tool.name}"
            )
        if ctx.in_plan_mode:
            if tool.kind != "read":
                return Decision(
                    "deny",
                    f"{tool.name} is not allowed in plan mode, which is read-only until the plan is approved (call ExitPlanMode)",
                )
            if not tool.risky(args):
                return Decision("allow")  # a read that reaches further (the network) asks, below
        asked = ctx.rules.first("ask", call, ctx.cwd)
        outside = tuple(outside_paths(ctx, tool, args))
        if asked is not None:
            why = f"the permission rule {asked} asks before this {tool.name} call"
        elif ctx.permission_mode == "bypassPermissions" or ctx.rules.first("allow", call, ctx.cwd):
            return Decision("allow")
        elif outside:
            why = f"{tool.name} touches {', '.join(outside)} outside the working directory {ctx.cwd}"
        elif risk := tool.risky(args):
            why = f"{tool.name}: {risk}"
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
        body = PermissionRequest(
            request_id=request_id,
            agent_id=ctx.name,
            tool_name=tool.name,
            tool_use_id=tool_use_id,
            description=decision.reason,
            input=args,
            permission_suggestions=suggestions(ctx, tool, args, decision),
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
            apply_updates(ctx, answer.response.permission_updates)
            return True, answer.response.updated_input, ""
        return False, args, answer.error if isinstance(answer.error, str) else "denied"


def suggestions(
    ctx: AgentContext, tool: Tool[Any], args: dict[str, Any], decision: Decision
) -> list[dict[str, Any]]:
    """What would make this call (and ones like it) not ask again, as Claude Code suggests it:
    the directories outside, a rule for the command's first words, or accepting edits."""
    found: list[dict[str, Any]] = []
    known = [p for p in decision.outside if p.startswith("/")]
    if known:
        dirs = sorted({str(Path(p).parent) for p in known})
        found.append({"type": "addDirectories", "directories": dirs, "destination": "session"})
    call = tool.rule_call(ctx, args)
    if call.command:
        parts = subcommands(call.command)
        prefixes = list(dict.fromkeys(" ".join(p.split()[:2]) if len(p.split()) > 1 else p for p in parts))
        rules = [{"toolName": tool.name, "ruleContent": f"{p}:*"} for p in prefixes if p]
        if rules:
            # As Claude Code's "don't ask again for this command in this project".
            found.append(
                {"type": "addRules", "rules": rules, "behavior": "allow", "destination": "localSettings"}
            )
    elif tool.kind == "write" and ctx.permission_mode == "default" and not known:
        found.append({"type": "setMode", "mode": "acceptEdits", "destination": "session"})
    return found


def apply_updates(ctx: AgentContext, updates: list[dict[str, Any]]) -> None:
    """An approval's ``permission_updates``, for the rest of this agent's life; rules and
    directories whose ``destination`` is a settings file (``localSettings``...) are also
    written into it, so that they hold for every agent started after."""
    for update in updates:
        kind = update.get("type")
        behavior = update.get("behavior", "allow")
        target = claude_settings.destination_file(str(update.get("destination", "session")), ctx.cwd)
        if kind in ("addRules", "replaceRules", "removeRules") and behavior in BEHAVIORS:
            rules = [
                Rule(str(r["toolName"]), r.get("ruleContent") or None)
                for r in update.get("rules", [])
                if isinstance(r, dict) and isinstance(r.get("toolName"), str)
            ]
            if kind == "replaceRules":
                setattr(ctx.rules, behavior, [])
            (ctx.rules.remove if kind == "removeRules" else ctx.rules.add)(behavior, rules)
            if kind == "addRules" and target is not None:
                lock = ctx.paths.team_dir / "settings.lock"
                claude_settings.add_permissions(
                    target, lock, rules={behavior: [str(r) for r in rules]}, directories=[]
                )
        elif kind in ("addDirectories", "removeDirectories"):
            dirs = [ctx.resolve(d) for d in update.get("directories", []) if isinstance(d, str)]
            if kind == "addDirectories":
                ctx.directories += [d for d in dirs if d not in ctx.directories]
                if target is not None:
                    lock = ctx.paths.team_dir / "settings.lock"
                    claude_settings.add_permissions(
                        target, lock, rules={}, directories=[str(d) for d in dirs]
                    )
            else:
                ctx.directories = [d for d in ctx.directories if d not in dirs]
        elif kind == "setMode" and isinstance(update.get("mode"), str):
            ctx.permission_mode = update["mode"]
        else:
            log.warning("%s: a permission update it does not know was left out: %s", ctx.name, update)


class NoAskPolicy(ModePolicy):
    """For an agent with no one to ask (a subagent; the lead, which is asked itself): what
    would ask is denied, with the reason, as Claude Code denies a background subagent's."""

    def ask(
        self, ctx: AgentContext, tool: Tool[Any], tool_use_id: str, args: dict[str, Any], decision: Decision
    ) -> tuple[bool, dict[str, Any], str]:
        return False, args, f"{decision.reason}; {ctx.name} has no one to ask for approval"
