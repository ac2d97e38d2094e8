"""The Bash tool: a command in its own process group, stdin from /dev/null, a timeout and an
output cap. The group lets a timeout kill the whole tool tree; the agent records it so its
SIGTERM handler, and the supervisor after a crash, can kill what is still running. An
in-process teammate's command runs in a session of its own instead, ended with the teammate
(:mod:`agentproc.tool_sessions`): the session it would share is its host's.

The paths a command touches are guessed from its text (:func:`command_paths`); whatever
the guess cannot vouch for (a directory change it cannot follow, an expansion it cannot
see through) is reported as unknown, so a permission policy asks rather than allows.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure, as_json
from ipc.permission_rules import subcommands
from ipc.tool_inputs import BashInput

OUTPUT_CAP = 30_000
OFF_CPU_AFTER = 0.02  # s: a command still running by then is waited on, not computed with
UNKNOWN = "?"
_SINGLE_QUOTED = re.compile(r"'[^']*'")
_DIR_CHANGES = ("cd", "pushd", "popd", "chdir")
_ASSIGNED = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\b|(?:^|[\s;&|(])([A-Za-z_]\w*)=")
_EXPANSION = re.compile(r"\$(\(\(|\(|\{?[A-Za-z_]\w*|[0-9#?@*$!-])")


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


def command_paths(command: str) -> list[str]:
    """Paths a shell command mentions, by a heuristic that errs towards asking.

    - Outside single quotes, an expansion whose value we cannot see is unknown: a command
      substitution (``$(…)``, backticks) or a variable the command does not set itself
      (``$HOME``, ``$PWD``). Arithmetic (``$((i * 2))``), positional and special
      parameters, and the command's own variables (``for i in``, ``X=``) are fine.
    - ``cd``/``pushd`` to a literal path counts as touching it; to anything else (``cd`` alone,
      ``cd -``) is unknown.
    - A word (or the part after ``=``, ``>`` or ``<``) that starts with ``/``, ``~`` or ``..``
      is a path, if an absolute one names an existing top-level directory (which leaves out
      awk and sed programs such as ``'/total/ {print}'``).
    """
    found: list[str] = []
    unquoted = _SINGLE_QUOTED.sub("''", command)
    unknown = _unknown_expansion(unquoted)
    if unknown:
        found.append(UNKNOWN + f"{unknown}, whose value is not known beforehand")
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return [*found, UNKNOWN + "a command that cannot be parsed"]
    for i, word in enumerate(words):
        bare = word.rstrip(";|&)")
        if bare in _DIR_CHANGES:
            ended = word != bare  # "cd;": no argument
            target = "" if ended or i + 1 >= len(words) else words[i + 1].rstrip(";|&)")
            if not target or target.startswith("-") or bare == "popd":
                found.append(UNKNOWN + f"'{bare}' to a directory that is not known beforehand")
            else:
                found.append(target)
            continue
        if any(c.isspace() for c in word):
            continue  # a quoted program or sentence, not a path
        for part in word.replace("=", " ").replace(">", " ").replace("<", " ").split():
            part = part.rstrip(";|&)")  # shell punctuation glued to the word
            if part.startswith(("../", "~")) or part == "..":
                found.append(part)
            elif part.startswith("/"):
                top = part.split("/")[1]
                if top and os.path.exists("/" + top):
                    found.append(part)
    return found


def _unknown_expansion(text: str) -> str:
    """The first expansion in ``text`` (outside single quotes) whose value cannot be known
    before the command runs, described; '' if there is none."""
    if "`" in text:
        return "a command substitution (`…`)"
    assigned = {a or b for a, b in _ASSIGNED.findall(text)}
    for match in _EXPANSION.finditer(text):
        token = match.group(1)
        if token == "((":
            continue  # arithmetic
        if token == "(":
            return "a command substitution ($(…))"
        name = token.lstrip("{")
        if (name[:1].isalpha() or name[:1] == "_") and name not in assigned:
            return f"the variable ${name}"
    return ""


def start_tool(ctx: AgentContext, argv: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """A tool's command in a process group of its own; an in-process teammate's in a session
    of its own (:mod:`agentproc.tool_sessions`), as it shares its process's session."""
    if ctx.tool_sessions is not None:
        return ctx.tool_sessions.start(argv, **popen)
    return subprocess.Popen(argv, process_group=0, **popen)


def exit_code(ctx: AgentContext, proc: subprocess.Popen[bytes], timeout: float | None) -> int:
    """How a tool's command exited, once it has (TimeoutExpired after ``timeout``)."""
    if ctx.tool_sessions is not None:
        return ctx.tool_sessions.exit_code(proc, timeout)
    return proc.wait(timeout)


def poll(ctx: AgentContext, proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return exit_code(ctx, proc, 0)
    except subprocess.TimeoutExpired:
        return None


def kill(ctx: AgentContext, proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a tool's command: its group, or the session an in-process teammate's runs in."""
    if ctx.tool_sessions is not None:
        ctx.tool_sessions.kill(proc)
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_command(ctx: AgentContext, command: str, timeout_s: float) -> BashOutcome:
    deadline = time.monotonic() + timeout_s
    proc = start_tool(
        ctx,
        ["/bin/bash", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=ctx.cwd,
    )
    ctx.tool_groups.add(proc.pid)
    out: bytes | None = None
    timed_out = False
    try:
        out = _output(ctx, proc, timeout_s)
        code = exit_code(ctx, proc, max(0.0, deadline - time.monotonic()))  # it may outlive its output
    except subprocess.TimeoutExpired:
        timed_out = True
        kill(ctx, proc)
        if out is None:
            out, _ = proc.communicate()
        code = exit_code(ctx, proc, None)
    finally:
        ctx.tool_groups.discard(proc.pid)
        if ctx.tool_sessions is not None:
            ctx.tool_sessions.settle()  # its session, unless a job of it runs on
    text = out.decode(errors="replace")
    if timed_out:
        text += f"\nCommand timed out after {timeout_s:g}s and was killed"
    return BashOutcome(exit_code=code, output=cap(text), timed_out=timed_out)


def _output(ctx: AgentContext, proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The command's output once it exits (TimeoutExpired after ``timeout_s``). One that
    runs past :data:`OFF_CPU_AFTER` is waited on off the turn's CPU (``ctx.off_cpu``)."""
    deadline = time.monotonic() + timeout_s
    try:
        return proc.communicate(timeout=min(timeout_s, OFF_CPU_AFTER))[0]
    except subprocess.TimeoutExpired:
        if timeout_s <= OFF_CPU_AFTER:
            raise
    with ctx.off_cpu():
        return proc.communicate(timeout=max(0.0, deadline - time.monotonic()))[0]


PREFIX = "bash-"  # a background shell's id; a subagent's starts with "sub-"


@dataclass
class Shell:
    command: str
    proc: subprocess.Popen[bytes]
    output: Path


def start_background(ctx: AgentContext, command: str) -> dict[str, Any]:
    """The command on in its own process group, its output into a file; it dies with the
    agent (its group is one of the agent's tool groups)."""
    shell_id = f"{PREFIX}{secrets.token_hex(4)}"
    folder = ctx.paths.team_dir / "shells"
    folder.mkdir(parents=True, exist_ok=True)
    output = folder / f"{shell_id}.out"
    with open(output, "wb") as out:
        proc = start_tool(
            ctx,
            ["/bin/bash", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ctx.cwd,
        )
    ctx.tool_groups.add(proc.pid)
    ctx.shells[shell_id] = Shell(command, proc, output)
    return {
        "backgroundTaskId": shell_id,
        "outputFile": str(output),
        "message": f"Command running in the background with ID: {shell_id}. Read its output with TaskOutput.",
    }


def _bash(ctx: AgentContext, args: BashInput) -> str:
    if args.run_in_background:
        return as_json(start_background(ctx, args.command))
    outcome = run_command(ctx, args.command, args.timeout / 1000)
    if outcome.exit_code != 0:
        raise ToolFailure(f"Exit code {outcome.exit_code}\n{outcome.output}")
    return outcome.output


def _paths(ctx: AgentContext, args: BashInput) -> list[str]:
    return command_paths(args.command)


def _command(args: BashInput) -> str:
    return args.command


# Commands Claude Code never lets run unasked in acceptEdits: they reach past the working
# directory's files (privileges, devices, the network, other processes, shared history).
_DANGEROUS_PROGRAMS = {
    "sudo": "runs as another user",
    "su": "runs as another user",
    "doas": "runs as another user",
    "dd": "writes raw devices or files",
    "mkfs": "formats a file system",
    "fdisk": "changes partitions",
    "shutdown": "stops the machine",
    "reboot": "restarts the machine",
    "halt": "stops the machine",
    "poweroff": "stops the machine",
    "kill": "signals other processes",
    "pkill": "signals other processes",
    "killall": "signals other processes",
    "curl": "reaches the network",
    "wget": "reaches the network",
    "ssh": "reaches another machine",
    "scp": "reaches another machine",
    "rsync": "may reach another machine",
    "nc": "reaches the network",
    "eval": "runs a command built at run time",
    "crontab": "changes scheduled jobs",
    "systemctl": "changes system services",
}
_DANGEROUS_GIT = {
    "push": "publishes to a remote",
    "reset": "may discard work",
    "clean": "deletes untracked files",
}


def dangerous(command: str) -> str:
    """Why ``command`` is dangerous ('' if it is not): one of its commands runs a program of
    :data:`_DANGEROUS_PROGRAMS` or a destructive git command, pipes into a shell, or removes
    recursively by force."""
    for i, part in enumerate(subcommands(command)):
        words = part.split()
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # NAME=value before the program
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1].split(".")[0]
        if program in _DANGEROUS_PROGRAMS:
            return f"'{part}' {_DANGEROUS_PROGRAMS[program]}"
        if program == "git" and len(words) > 1 and words[1] in _DANGEROUS_GIT:
            return f"'{part}' {_DANGEROUS_GIT[words[1]]}"
        if program in ("sh", "bash", "zsh") and i > 0 and len(words) == 1:
            return f"'{part}' runs a script piped in from another command"
        if program == "rm" and any(w.startswith("-") and "r" in w.lower() and "f" in w for w in words[1:]):
            return f"'{part}' removes recursively by force"
    return ""


def _risk(args: BashInput) -> str:
    found = dangerous(args.command)
    return f"{found}, so it asks even in acceptEdits" if found else ""


BASH = Tool("Bash", BashInput, _bash, kind="exec", paths=_paths, subject=_command, risk=_risk)
