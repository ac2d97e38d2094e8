"""Background shells (Bash with ``run_in_background``, started in :mod:`agentproc.tools.bash`)
as Claude Code reads and stops them: ``TaskOutput`` reads one's output (waiting for its end
if asked), ``TaskStop`` kills its process group."""

from __future__ import annotations

import subprocess
import time
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import ToolFailure
from agentproc.tools.bash import PREFIX, Shell, cap, exit_code, kill, poll

__all__ = ["PREFIX", "output", "stop"]


def _shell(ctx: AgentContext, shell_id: str) -> Shell:
    shell: Shell | None = ctx.shells.get(shell_id)
    if shell is None:
        raise ToolFailure(f"{shell_id} is not a background shell of {ctx.name}")
    return shell


def _state(ctx: AgentContext, shell_id: str, shell: Shell) -> dict[str, Any]:
    code = poll(ctx, shell.proc)
    if code is not None:
        ctx.tool_groups.discard(shell.proc.pid)
    text = shell.output.read_bytes().decode(errors="replace") if shell.output.exists() else ""
    status = "running" if code is None else "completed" if code == 0 else "failed"
    return {"task_id": shell_id, "status": status, "exit_code": code, "output": cap(text)}


def output(ctx: AgentContext, shell_id: str, block: bool, timeout_s: float) -> dict[str, Any]:
    shell = _shell(ctx, shell_id)
    if block and poll(ctx, shell.proc) is None:
        try:
            with ctx.off_cpu():
                exit_code(ctx, shell.proc, timeout_s)
        except subprocess.TimeoutExpired:
            pass
    return _state(ctx, shell_id, shell)


def stop(ctx: AgentContext, shell_id: str) -> dict[str, Any]:
    shell = _shell(ctx, shell_id)
    if (code := poll(ctx, shell.proc)) is not None:
        raise ToolFailure(f"{shell_id} is not running (it exited with {code})")
    kill(ctx, shell.proc)
    deadline = time.monotonic() + 5
    while poll(ctx, shell.proc) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return {**_state(ctx, shell_id, shell), "message": f"Stopped {shell_id}"}
