"""Whether a process is on an agent's side of a team: a teammate, an in-process host, a
claude teammate's wrapper, or anything those started (their tools), or an orphan a
supervisor (this team's or another's) adopted: a tool that detached from its teammate.
Such a process never acts as the lead: the lead's authority is the person's and the lead agent's, and a teammate's Bash
running the ordinary command line must not borrow it.

Read from ``/proc``: each ancestor's parent and the module it runs (``python -m
agentproc...``). The lead agent (``agentproc.lead``) and what it starts are the lead's side."""

from __future__ import annotations

import os
from contextvars import ContextVar

from ipc.errors import Forbidden
from ipc.osproc import command_line_args

# The process a door acts for (the resident door: its client's, from SO_PEERCRED); unset,
# the process itself.
CALLER: ContextVar[int | None] = ContextVar("agentteams_caller", default=None)

_OWN_SIDE: dict[tuple[int, int | None], str | None] = {}  # (pid, supervisor) -> agent_ancestor

LEAD_MODULE = "agentproc.lead"
AGENT_PACKAGE = "agentproc"
SUPERVISOR_MODULE = "supervisor.daemon"  # a child subreaper: orphans under it are adopted
MAX_DEPTH = 64  # ancestors looked at: a chain is far shorter, a loop must still end


def _parent_and_module(pid: int) -> tuple[int, str, str] | None:
    """The process's parent pid, its name (``comm``) and the module its interpreter runs
    (``python -m MODULE``; ""), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = command_line_args(f.read().decode(errors="replace").split("\0"))
    except OSError:
        return None
    name = stat[stat.index(b"(") + 1 : stat.rindex(b")")].decode(errors="replace")
    ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
    return ppid, name, argv[2] if len(argv) > 2 and argv[1] == "-m" else ""


def agent_ancestor(pid: int, supervisor_pid: int | None) -> str | None:
    """The agent-side process that ``pid`` is or runs under, in words; None on the lead's
    side (a person's shell, the lead agent and its tools)."""
    current, depth = pid, 0
    while current > 1 and depth < MAX_DEPTH:
        found = _parent_and_module(current)
        if found is None:
            return None
        parent, name, module = found
        if name.startswith("tmux"):
            # A tmux server (the supervisor adopts one it started): a person's shell in it
            # is theirs, a teammate's pane was judged by what runs in it, below.
            return None
        if module.split(".")[0] == AGENT_PACKAGE and module != LEAD_MODULE:
            # The lead agent is the lead's side, unless an agent started it: walked past.
            return f"an agent's process ({module}, pid {current})"
        if depth > 0 and (current == supervisor_pid or module == SUPERVISOR_MODULE):
            # Any team's supervisor: a tool that detached from another team's teammate
            # was adopted there, and is no more this team's lead than that one's.
            return f"a team's supervisor (pid {current}), which adopted it from a teammate"
        current, depth = parent, depth + 1
    return None


def refuse_lead(operation: str, supervisor_pid: int | None) -> None:
    """Forbidden if the caller (:data:`CALLER`, else this process) is on an agent's side:
    ``operation`` may not be done as the lead from there."""
    caller = CALLER.get()
    if caller is not None:
        under = agent_ancestor(caller, supervisor_pid)
    else:  # this process: which side it is on does not change, and the walk costs ~0.1 ms
        key = (os.getpid(), supervisor_pid)
        if key not in _OWN_SIDE:
            _OWN_SIDE[key] = agent_ancestor(os.getpid(), supervisor_pid)
        under = _OWN_SIDE[key]
    if under is not None:
        raise Forbidden(
            f"{operation}: refused: acting as the lead from under {under}; a teammate's tools act as "
            "the teammate (its own tools, or 'agentteams mcp TEAM --as NAME'), never as the lead"
        )
