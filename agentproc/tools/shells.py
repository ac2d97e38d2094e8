"""Bash with ``run_in_background``, as Claude Code runs it: the command goes on in its own
process group, its output into a file; ``TaskOutput`` reads it (waiting for the end if
asked) and ``TaskStop`` kills the group. The shells die with the agent (their groups are
the agent's tool groups)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import ToolFailure

PREFIX = "bash-"  # a background shell's id; a subagent's starts with "sub-"


@dataclass
class Shell:
    command: str
    proc: subprocess.Popen[bytes]
    output: Path


def start(ctx: AgentContext, command: str) -> dict[str, Any]:
    shell_id = f"{PREFIX}{secrets.token_hex(4)}"
    folder = ctx.paths.team_dir / "shells"
    folder.mkdir(parents=True, exist_ok=True)
    output = folder / f"{shell_id}.out"
    with open(output, "wb") as out:
        proc = subprocess.Popen(
            ["/bin/bash", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ctx.cwd,
            process_group=0,
        )
    ctx.tool_groups.add(proc.pid)
    ctx.shells[shell_id] = Shell(command, proc, output)
    return {
        "backgroundTaskId": shell_id,
        "outputFile": str(output),
        "message": f"Command running in the background with ID: {shell_id}. Read its output with TaskOutput.",
    }


def _shell(ctx: AgentContext, shell_id: str) -> Shell:
    shell = ctx.shells.get(shell_id)
    if shell is None:
        raise ToolFailure(f"{shell_id} is not a background shell of {ctx.name}")
    return shell


def _state(ctx: AgentContext, shell_id: str, shell: Shell) -> dict[str, Any]:
    from agentproc.tools.bash import cap

    code = shell.proc.poll()
    if code is not None:
        ctx.tool_groups.discard(shell.proc.pid)
    text = shell.output.read_bytes().decode(errors="replace") if shell.output.exists() else ""
    status = "running" if code is None else "completed" if code == 0 else "failed"
    return {"task_id": shell_id, "status": status, "exit_code": code, "output": cap(text)}


def output(ctx: AgentContext, shell_id: str, block: bool, timeout_s: float) -> dict[str, Any]:
    shell = _shell(ctx, shell_id)
    if block:
        try:
            shell.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
    return _state(ctx, shell_id, shell)


def stop(ctx: AgentContext, shell_id: str) -> dict[str, Any]:
    shell = _shell(ctx, shell_id)
    if shell.proc.poll() is not None:
        raise ToolFailure(f"{shell_id} is not running (it exited with {shell.proc.returncode})")
    try:
        os.killpg(shell.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 5
    while shell.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return {**_state(ctx, shell_id, shell), "message": f"Stopped {shell_id}"}
