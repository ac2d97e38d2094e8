"""Hooks, as Claude Code runs them: TeammateIdle, TaskCompleted, TaskCreated, SubagentStart
and SubagentStop, from the merged settings files (``ipc.claude_settings``) and the agent
definition's own ``hooks`` (a subagent's ``Stop`` hooks are its SubagentStop ones, as in
Claude Code), taken when the agent starts.

A hook is one of:
- ``command``: JSON on stdin; exit 0 is fine (stdout may be JSON with ``decision: "block"``
  and a ``reason``, or ``hookSpecificOutput.additionalContext``); exit 2 blocks and its
  stderr goes back to the model; any other code only shows stderr to the user (the log).
- ``prompt``: a model (the hook's ``model``, else ``AGENTTEAMS_HOOK_MODEL``, else haiku) is
  asked the hook's prompt with the input (``$ARGUMENTS``) and answers ``{"ok": true}`` or
  ``{"ok": false, "reason": ...}``; false blocks with the reason.
- ``agent``: the same question to a read-only subagent, which can look at the files first.
A block reaches the model as Claude Code words it: ``{event} hook feedback: {reason}``. A
hook that cannot run (a timeout, no API key, an answer that is not the JSON asked for) is
logged and does not block.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any

from agentproc.context import AgentContext

log = logging.getLogger("agentteams.hooks")
HOOK_TYPES = ("command", "prompt", "agent")
# Events whose matcher is compared with the agent type (the others have no matcher).
MATCHED_BY_AGENT_TYPE = ("SubagentStart", "SubagentStop")
VERDICT = (
    'Answer with JSON only: {"ok": true} if the condition holds, or {"ok": false, "reason": "what is '
    'wrong, said to the agent"} if it does not.'
)


@dataclass(frozen=True)
class HookOutcome:
    blocked: bool = False
    feedback: str = ""  # for a block: "{event} hook feedback: {reason}"
    context: str = ""  # what the hooks add to the conversation (additionalContext, SubagentStart's stdout)


def merged(
    settings: dict[str, list[dict[str, Any]]], own: dict[str, Any], *, subagent: bool
) -> dict[str, list[dict[str, Any]]]:
    """Every matcher group of the settings files, then the definition's own hooks."""
    hooks = {event: list(groups) for event, groups in settings.items()}
    for event, groups in own.items():
        if not isinstance(groups, list):
            log.error("the definition's hooks for %s are not a list; left out", event)
            continue
        name = "SubagentStop" if subagent and event == "Stop" else str(event)
        hooks.setdefault(name, []).extend(g for g in groups if isinstance(g, dict))
    return hooks


def _matches(group: dict[str, Any], event: str, payload: dict[str, Any]) -> bool:
    matcher = group.get("matcher")
    if event not in MATCHED_BY_AGENT_TYPE or not isinstance(matcher, str) or matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, str(payload.get("agent_type", ""))) is not None
    except re.error:
        return matcher == payload.get("agent_type")


def _hooks(ctx: AgentContext, event: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for group in ctx.hooks.get(event, []):
        if not _matches(group, event, payload):
            continue
        for hook in group.get("hooks", []) if isinstance(group.get("hooks"), list) else []:
            kind = hook.get("type", "command") if isinstance(hook, dict) else None
            field = "command" if kind == "command" else "prompt"
            if kind in HOOK_TYPES and isinstance(hook.get(field), str):
                found.append(hook)
            else:
                log.error("%s: a hook that is not one of %s was left out: %r", event, HOOK_TYPES, hook)
    return found


def run(ctx: AgentContext, event: str, payload: dict[str, Any]) -> HookOutcome:
    """Run every hook of ``event``; the first that blocks ends the run."""
    data = json.dumps(
        {
            "hook_event_name": event,
            "session_id": ctx.spec.parent_session_id,
            "transcript_path": str(ctx.paths.transcript(ctx.spec.parent or ctx.name)),
            "cwd": str(ctx.cwd),
            "permission_mode": ctx.permission_mode,
            "team_name": ctx.team,
            "teammate_name": ctx.name,
            **payload,
        }
    )
    context: list[str] = []
    for hook in _hooks(ctx, event, payload):
        kind = hook.get("type", "command")
        if kind == "command":
            blocked, reason, added = _command(ctx, event, hook, data)
        else:
            from agentproc import hook_models  # a model only for hooks that ask one

            blocked, reason, added = hook_models.ask(ctx, event, hook, data, VERDICT)
        if added:
            context.append(added)
        if blocked:
            return HookOutcome(True, f"{event} hook feedback: {reason}", "\n".join(context))
    return HookOutcome(context="\n".join(context))


def _command(ctx: AgentContext, event: str, hook: dict[str, Any], data: str) -> tuple[bool, str, str]:
    """(blocked, reason, added context) of one command hook."""
    try:
        done = subprocess.run(
            ["/bin/bash", "-c", hook["command"]],
            input=data,
            capture_output=True,
            text=True,
            cwd=ctx.cwd,
            timeout=float(hook.get("timeout", 60)),
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(ctx.cwd)},
        )
    except subprocess.TimeoutExpired:
        log.error("%s hook %r timed out", event, hook["command"])
        return False, "", ""
    if done.returncode == 2:
        return True, done.stderr.strip() or f"the {event} hook blocked this", ""
    if done.returncode != 0:
        log.warning("%s hook %r exited %d: %s", event, hook["command"], done.returncode, done.stderr.strip())
        return False, "", ""
    out = done.stdout.strip()
    try:
        answer = json.loads(out) if out.startswith("{") else None
    except ValueError:
        answer = None
    if isinstance(answer, dict):
        specific = answer.get("hookSpecificOutput")
        added = specific.get("additionalContext", "") if isinstance(specific, dict) else ""
        if answer.get("decision") == "block":
            return True, str(answer.get("reason") or f"the {event} hook blocked this"), str(added)
        return False, "", str(added)
    return False, "", out if event == "SubagentStart" else ""
