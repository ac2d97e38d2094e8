"""The real Claude Code, for teammates of the ``claude-code`` backend (SPEC §13): where its
executable is, and what its teammate process is started with."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ipc.errors import InvalidInput, NotFound
from ipc.launch import LaunchSpec, claude_code_model

INSTALL_HINT = (
    "install it (npm install -g @anthropic-ai/claude-code) or set AGENTTEAMS_CLAUDE_BIN to its executable"
)


def command() -> list[str]:
    """How to run ``claude``: ``$AGENTTEAMS_CLAUDE_BIN``, else ``claude`` on PATH (a
    ``cli.js`` is run with node, as the npm package up to 2.1.112 ships it)."""
    given = os.environ.get("AGENTTEAMS_CLAUDE_BIN", "")
    path = given or shutil.which("claude") or ""
    if not path:
        raise NotFound(f"Claude Code's `claude` is not on PATH; {INSTALL_HINT}")
    if not (os.path.isfile(path) and os.access(path, os.R_OK)):
        raise InvalidInput(f"AGENTTEAMS_CLAUDE_BIN={given!r} is not a file; {INSTALL_HINT}")
    if path.endswith((".js", ".cjs", ".mjs")):
        node = shutil.which("node")
        if node is None:
            raise NotFound(f"{path} needs node, which is not on PATH")
        return [node, path]
    return [path]


def argv(spec: LaunchSpec) -> list[str]:
    """Claude Code's teammate command line for ``spec`` (its own flags; a bypassing
    permission mode as Claude Code passes it on)."""
    model = claude_code_model(spec.model) or "sonnet"
    flags = [
        *("--agent-id", spec.agent_id, "--agent-name", spec.agent_name, "--team-name", spec.team_name),
        *("--agent-color", spec.agent_color, "--parent-session-id", spec.parent_session_id),
        *("--agent-type", spec.agent_type, "--model", model),
    ]
    if spec.plan_mode_required:
        flags.append("--plan-mode-required")
    if spec.permission_mode == "bypassPermissions":
        flags.append("--dangerously-skip-permissions")
    elif spec.permission_mode:
        flags += ["--permission-mode", spec.permission_mode]
    return [*command(), *flags]


def is_users_home(root: Path) -> bool:
    """True if ``root`` is the Claude Code home a plain ``claude`` uses (``~/.claude``)."""
    try:
        return root.resolve() == (Path.home() / ".claude").resolve()
    except OSError:
        return False


def environment(spec: LaunchSpec, base: dict[str, str]) -> dict[str, str]:
    """``base`` with Agent Teams on, the task tools on (2.1.330 turns them off for its newer
    models unless asked), and the team's root as Claude Code's root."""
    env = {
        **base,
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        "CLAUDE_CODE_ENABLE_TASKS": "1",
        "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
        "TERM": base.get("TERM") or "xterm-256color",
    }
    if not is_users_home(Path(spec.root)):
        env["CLAUDE_CONFIG_DIR"] = str(Path(spec.root).resolve())
    return env
