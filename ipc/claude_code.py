"""The real Claude Code, for teammates of the ``claude-code`` backend: where its
executable is, and what its teammate process is started with."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from ipc.clock import now_ms
from ipc.errors import InvalidInput, NotFound
from ipc.launch import LaunchSpec
from ipc.model_specs import claude_code_model

SOCKET_SINCE = (2, 1, 330)
ACCEPT_SETTINGS = {
    "crossSessionInbound": "accept"
}  # the first release seen with a messaging socket of its own
VERSION_TIMEOUT = 20.0
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


def version(cmd: list[str]) -> tuple[int, int, int] | None:
    """What ``claude --version`` says, or None if it says nothing we can read."""
    try:
        done = subprocess.run(
            [*cmd, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", done.stdout)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def has_socket(found: tuple[int, int, int] | None) -> bool:
    """True for a release that listens on a messaging socket of its own (2.1.330 and later)."""
    return found is not None and found >= SOCKET_SINCE


LEAD_KEY_SINCE = (2, 1, 330)  # the first release seen with --lead-verify-key


def lead_key_flags(found: tuple[int, int, int] | None, lead_key: str | None) -> list[str]:
    """``--lead-verify-key`` for a release that checks the lead's signatures: the lead's
    public key (:mod:`ipc.trust`) stamped with the launch time, as Claude Code's lead passes
    it; lead entries older than that (less two minutes) are not verified by it."""
    if found is None or found < LEAD_KEY_SINCE or not lead_key or "." not in lead_key:
        return []
    return ["--lead-verify-key", f"{now_ms()}.{lead_key.split('.', 1)[1]}"]


def socket_flags(path: Path) -> list[str]:
    """Listen at ``path`` (hidden flag of 2.1.330), and take what arrives there at once: set
    only for a teammate whose root the team owns, never the user's own ``~/.claude``."""
    return ["--messaging-socket-path", str(path), "--settings", json.dumps(ACCEPT_SETTINGS)]


def argv(spec: LaunchSpec, extra: list[str] | None = None) -> list[str]:
    """Claude Code's teammate command line for ``spec`` (its own flags; a bypassing
    permission mode as Claude Code passes it on), then ``extra``."""
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
    if spec.allowed_tools:
        flags += ["--allowedTools", spec.allowed_tools]
    if spec.disallowed_tools:
        flags += ["--disallowedTools", spec.disallowed_tools]
    if spec.agents:
        flags += ["--agents", spec.agents]
    return [*command(), *flags, *(extra or [])]


def is_users_home(root: Path) -> bool:
    """True if ``root`` is the Claude Code home a plain ``claude`` uses: ``~/.claude``, or
    the user's own ``$CLAUDE_CONFIG_DIR``."""
    homes = [Path.home() / ".claude"]
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        homes.append(Path(os.environ["CLAUDE_CONFIG_DIR"]).expanduser())
    try:
        return any(root.resolve() == home.resolve() for home in homes)
    except OSError:
        return False


def environment(spec: LaunchSpec, base: dict[str, str]) -> dict[str, str]:
    """``base`` with Agent Teams on, the task tools on (2.1.330 turns them off for its newer
    models unless asked), and the team's root as Claude Code's root."""
    env = {
        **base,
        "CLAUDECODE": "1",  # as Claude Code starts its own teammates
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        "CLAUDE_CODE_ENABLE_TASKS": "1",
        "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1",
        "TERM": base.get("TERM") or "xterm-256color",
    }
    if spec.effort:
        env["CLAUDE_CODE_EFFORT_LEVEL"] = spec.effort  # Claude Code's own setting for it
    if not is_users_home(Path(spec.root)):
        env["CLAUDE_CONFIG_DIR"] = str(Path(spec.root).resolve())
    return env
