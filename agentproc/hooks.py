"""Command hooks from a settings JSON (Claude Code's shape): TeammateIdle, TaskCompleted,
TaskCreated. JSON on stdin; exit 0 is fine; exit 2 blocks and its stderr goes back to the
model; any other code only shows stderr to the user (the supervisor log)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentproc.context import AgentContext

log = logging.getLogger("agentteams.hooks")


@dataclass(frozen=True)
class HookOutcome:
    blocked: bool = False
    feedback: str = ""


def settings_path(ctx: AgentContext) -> Path:
    explicit = os.environ.get("AGENTTEAMS_SETTINGS")
    return Path(explicit) if explicit else ctx.cwd / ".claude" / "settings.json"


def _commands(ctx: AgentContext, event: str) -> list[dict[str, Any]]:
    path = settings_path(ctx)
    try:
        settings = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.error("%s: cannot read hooks (%s); no hooks run", path, exc)
        return []
    groups = settings.get("hooks", {}).get(event, []) if isinstance(settings, dict) else []
    found = []
    for group in groups if isinstance(groups, list) else []:
        for hook in group.get("hooks", []) if isinstance(group, dict) else []:
            if (
                isinstance(hook, dict)
                and hook.get("type", "command") == "command"
                and isinstance(hook.get("command"), str)
            ):
                found.append(hook)
    return found


def run(ctx: AgentContext, event: str, payload: dict[str, Any]) -> HookOutcome:
    """Run every hook of ``event``; the first exit 2 blocks."""
    data = json.dumps(
        {
            "hook_event_name": event,
            "session_id": ctx.spec.parent_session_id,
            "cwd": str(ctx.cwd),
            "team_name": ctx.team,
            "teammate_name": ctx.name,
            **payload,
        }
    )
    for hook in _commands(ctx, event):
        try:
            done = subprocess.run(
                ["/bin/bash", "-c", hook["command"]],
                input=data,
                capture_output=True,
                text=True,
                cwd=ctx.cwd,
                timeout=float(hook.get("timeout", 60)),
            )
        except subprocess.TimeoutExpired:
            log.error("%s hook %r timed out", event, hook["command"])
            continue
        if done.returncode == 2:
            return HookOutcome(blocked=True, feedback=done.stderr.strip() or f"{event} hook blocked this")
        if done.returncode != 0:
            log.warning(
                "%s hook %r exited %d: %s", event, hook["command"], done.returncode, done.stderr.strip()
            )
    return HookOutcome()
