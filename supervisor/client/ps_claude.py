"""Claude Code's own teams under a root, for ``ps``: which are live, and the real
``claude`` processes that run their members (found by the ``--agent-id`` in their command
line)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import psutil  # imported where used: a command that does not look at processes skips it

from ipc import cc_registry
from ipc.osproc import command_line_args
from ipc.process_tree import ClaudeProcess, ClaudeTeam
from ipc.schemas import LEAD_NAME, LeadProcess, TeamConfig


def claude_code_processes(team: str | None = None, root: str | None = None) -> list[tuple[int, str]]:
    """(pid, agent id) of every process whose command line carries ``--agent-id NAME@TEAM``;
    with ``root``, only those whose Claude Code root is that one (a team of the same name
    under another root is another team)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = command_line_args(proc.info.get("cmdline") or [])
        if "--agent-id" not in cmdline or proc.info["pid"] == os.getpid():
            continue
        index = cmdline.index("--agent-id")
        if index + 1 >= len(cmdline) or "@" not in cmdline[index + 1]:
            continue
        agent_id = cmdline[index + 1]
        if team is not None and agent_id.partition("@")[2] != team:
            continue
        if root is not None and _claude_root(proc) not in (None, Path(root).resolve()):
            continue
        found.append((proc.info["pid"], agent_id))
    return found


def _claude_root(proc: psutil.Process) -> Path | None:
    """Where a ``claude`` process keeps its teams: ``$CLAUDE_CONFIG_DIR``, else
    ``$HOME/.claude``; None when its environment cannot be read (then it is not ruled out)."""
    import psutil

    try:
        env = proc.environ()
    except (psutil.Error, OSError):
        return None
    where = env.get("CLAUDE_CONFIG_DIR") or (f"{env['HOME']}/.claude" if env.get("HOME") else "")
    try:
        return Path(where).resolve() if where else None
    except OSError:
        return None


def lead_verify_keys(team: str, root: str | None = None) -> list[str]:
    """The ``--lead-verify-key`` of every live ``claude`` teammate of ``team`` (under
    ``root``): how a team whose lead is Claude Code's can be checked from outside (its
    config names no key)."""
    import psutil

    keys = []
    for pid, _ in claude_code_processes(team, root):
        try:
            cmdline = command_line_args(psutil.Process(pid).cmdline())
        except psutil.Error:
            continue
        if "--lead-verify-key" in cmdline and cmdline.index("--lead-verify-key") + 1 < len(cmdline):
            keys.append(cmdline[cmdline.index("--lead-verify-key") + 1])
    return sorted(set(keys))


def claude_made(config: TeamConfig, ours: bool = False) -> bool:
    """Claude Code wrote this team: it records its lead session (2.1.330), or runs members
    on its own backends (tmux panes, in-process). Our own supervisor runs those backends too
    (``ours``: one runs this team; our in-process members' handle names their host)."""
    if not isinstance(config.lead_process, msgspec.UnsetType):
        return True
    lead = config.member(LEAD_NAME)
    if lead is not None and isinstance(lead.verify_key, str):
        return False  # our lead side's key: 2.1.38 (no leadProcess) writes none
    return not ours and any(
        m.backend_type in ("tmux", "in-process") and not m.tmux_pane_id.startswith("in-process:")
        for m in config.members
    )


def claude_code_teams(
    root: str | None,
    configs: list[TeamConfig],
    team: str | None = None,
    supervised: Callable[[str], bool] | None = None,
) -> list[ClaudeTeam]:
    """Teams under ``root`` that Claude Code runs: those with a lead session record
    (2.1.330's ``leadProcess``) and those whose members run as real ``claude`` processes."""

    procs = claude_code_processes(team, root)
    by_team: dict[str, list[ClaudeProcess]] = {}
    names = {c.name: c for c in configs}
    for pid, agent_id in procs:
        name, _, team_name = agent_id.partition("@")
        config = names.get(team_name)
        if config is None:
            continue
        by_team.setdefault(team_name, []).append(
            ClaudeProcess(pid=pid, agent_id=agent_id, team=team_name, member=config.member(name) is not None)
        )
    out = []
    for config in configs:
        if team is not None and config.name != team:
            continue
        ours = supervised is not None and supervised(config.name)
        lead_pid = config.lead_process.pid if not isinstance(config.lead_process, msgspec.UnsetType) else None
        processes = [p for p in by_team.get(config.name, []) if not _is_agentteams(p.pid)]
        if not processes and not claude_made(config, ours):
            continue
        live: bool | None = None  # 2.1.38 records no lead process: unknown unless a member runs
        if processes:
            live = True
        elif not isinstance(config.lead_process, msgspec.UnsetType):
            live = lead_alive(config.lead_process)
        out.append(
            ClaudeTeam(
                team=config.name,
                lead_pid=lead_pid,
                live=live,
                members=[m.name for m in config.members],
                processes=processes,
            )
        )
    return out


def lead_alive(lead: LeadProcess) -> bool | None:
    """Whether the session 2.1.330 recorded as the team's lead still runs: its pid, and the
    start time it recorded (a pid taken over by another process is not it). None when it
    ran in another pid namespace or machine, where its pid says nothing here."""
    import psutil

    # 2.1.330 writes e.g. "vm#pid:[4026531836]": its pid namespace is the part to compare.
    space = lead.pid_space if isinstance(lead.pid_space, str) else ""
    if "pid:[" in space and not space.endswith(os.readlink("/proc/self/ns/pid")):
        return None
    if not psutil.pid_exists(lead.pid):
        return False
    if lead.proc_start is None:
        return True
    try:
        return str(lead.proc_start) == cc_registry.proc_start(lead.pid)
    except (OSError, ValueError, IndexError):  # gone meanwhile, or unreadable: not the one recorded
        return False


def _is_agentteams(pid: int) -> bool:
    """A process teammate of ours (it carries the same flags); it shows in its team's tree."""
    import psutil

    try:
        return "agentproc" in " ".join(command_line_args(psutil.Process(pid).cmdline()))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
