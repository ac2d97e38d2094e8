"""The Bash tool: a command in its own process group, stdin from /dev/null, a timeout and an
output cap. The group lets a timeout kill the whole tool tree; the teammate records it so
its SIGTERM handler, and the supervisor after a crash, can kill what is still running."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, require

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
OUTPUT_CAP = 30_000


@dataclass(frozen=True)
class BashOutcome:
    exit_code: int
    output: str
    timed_out: bool


def cap(text: str, limit: int = OUTPUT_CAP) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters truncated] ...\n{text[-half:]}"


def run_command(ctx: AgentContext, command: str, timeout_s: float) -> BashOutcome:
    proc = subprocess.Popen(
        ["/bin/bash", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=ctx.identity.cwd,
        process_group=0,
    )
    ctx.tool_groups.add(proc.pid)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
    finally:
        ctx.tool_groups.discard(proc.pid)
    text = out.decode(errors="replace")
    if timed_out:
        text += f"\nCommand timed out after {timeout_s:g}s and was killed"
    return BashOutcome(exit_code=proc.returncode, output=cap(text), timed_out=timed_out)


def _bash(ctx: AgentContext, args: dict[str, Any]) -> str:
    command = require(args, "command")
    timeout_ms = args.get("timeout", DEFAULT_TIMEOUT_MS)
    if not isinstance(timeout_ms, int) or not 0 < timeout_ms <= MAX_TIMEOUT_MS:
        raise ToolFailure(f"'timeout' is in milliseconds, between 1 and {MAX_TIMEOUT_MS}")
    outcome = run_command(ctx, command, timeout_ms / 1000)
    if outcome.exit_code != 0:
        raise ToolFailure(f"Exit code {outcome.exit_code}\n{outcome.output}")
    return outcome.output


BASH = Tool(
    name="Bash",
    description="Run a shell command in the teammate's working directory. stdin is /dev/null; output is capped at 30,000 characters.",
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to run"},
            "timeout": {"type": "integer", "description": f"Timeout in milliseconds (max {MAX_TIMEOUT_MS})"},
            "description": {"type": "string", "description": "What the command does, in 5-10 words"},
        },
        "required": ["command"],
    },
    run=_bash,
)
