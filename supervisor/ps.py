"""The live process tree, read with psutil: supervisor → fork server, lead, teammates → their
tools and subagents; and Claude Code's own teams and processes under a Claude Code root.

Everything is returned as Structs (``agentteams ps --json`` prints them), so people and
inspection tools read the same thing.
"""

from __future__ import annotations

import time

import msgspec
import psutil

from ipc.config import scan_teams
from ipc.errors import AgentTeamsError, NotFound
from ipc.launch import TeamStatus
from ipc.mailbox import Mailbox
from ipc.osproc import command_line_args
from ipc.paths import TeamPaths, resolve_root
from ipc.schemas import Task
from ipc.tasks import TaskList
from ipc.usage import TeamUsage, spent, team_usage
from supervisor import launcher
from supervisor.ps_claude import ClaudeTeam, claude_code_teams, claude_made
from supervisor.team import Team

CPU_SAMPLE = 0.1  # seconds between the two readings cpu_percent needs


class ProcInfo(msgspec.Struct, kw_only=True):
    pid: int
    ppid: int
    name: str
    status: str
    cpu_percent: float
    rss: int
    uss: int | None
    uptime: float
    cmdline: str
    depth: int = 0  # below the teammate: 1 = its child, 2 = a grandchild…


class TaskRef(msgspec.Struct, kw_only=True):
    id: str
    subject: str


class MateTree(msgspec.Struct, kw_only=True):
    name: str
    state: str
    pid: int | None
    restarts: int
    unread: int
    role: str = "teammate"
    parent: str = ""
    task: TaskRef | None = None
    process: ProcInfo | None = None
    children: list[ProcInfo] = []


class TeamTree(msgspec.Struct, kw_only=True):
    team: str
    root: str
    supervisor: ProcInfo | None = None
    forkserver: ProcInfo | None = None
    lead: ProcInfo | None = None
    wake: str = ""
    teammates: list[MateTree] = []
    failed_tasks: list[TaskRef] = []  # open tasks whose last attempt failed
    usage: TeamUsage | None = None  # tokens and cost of the team's model calls


class Snapshot(msgspec.Struct, kw_only=True):
    teams: list[TeamTree] = []
    claude_code: list[ClaudeTeam] = []
    problems: list[str] = []


# ---------------------------------------------------------------- processes


def describe(pid: int, depth: int = 0) -> ProcInfo | None:
    """One process, or None if it is gone (or not ours to read)."""
    try:
        proc = _process(pid)
        with proc.oneshot():
            info = ProcInfo(
                pid=pid,
                ppid=proc.ppid(),
                name=proc.name(),
                status=proc.status(),
                cpu_percent=round(proc.cpu_percent(None), 1),
                rss=proc.memory_info().rss,
                uss=None,
                uptime=round(time.time() - proc.create_time(), 1),
                cmdline=" ".join(command_line_args(proc.cmdline()))[:300],
                depth=depth,
            )
        try:
            info.uss = proc.memory_full_info().uss
        except (psutil.AccessDenied, psutil.ZombieProcess):
            pass
        return info
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None


_procs: dict[int, psutil.Process] = {}


def _process(pid: int) -> psutil.Process:
    # Kept between calls so cpu_percent measures since the last look, not since nothing.
    proc = _procs.get(pid)
    if proc is None or not proc.is_running():
        proc = _procs[pid] = psutil.Process(pid)
    return proc


def prime(pids: list[int]) -> None:
    """Take the first CPU reading of ``pids`` (the next :func:`describe` measures from here).

    Readings of processes not among ``pids`` are dropped: a ``watch`` left open for hours
    over a team whose teammates restart would otherwise keep one for every pid it saw.
    """
    for gone in _procs.keys() - set(pids):
        del _procs[gone]
    for pid in pids:
        try:
            _process(pid).cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue


def descendants(pid: int) -> list[ProcInfo]:
    """Every process below ``pid``, each with its depth (1 = child), parents before children."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    depth = {pid: 0}
    out = []
    for kid in sorted(kids, key=lambda k: k.pid):
        try:
            parent = kid.ppid()
        except psutil.NoSuchProcess:
            continue
        depth[kid.pid] = depth.get(parent, 0) + 1
    for kid in kids:
        if (info := describe(kid.pid, depth.get(kid.pid, 1))) is not None:
            out.append(info)
    return out


# ---------------------------------------------------------------- our teams


def team_tree(team: Team, status: TeamStatus | None = None) -> TeamTree:
    """One team's processes with state, resources, unread messages and current task."""
    tree = TeamTree(team=team.name, root=str(team.root))
    try:
        tree.usage = team_usage(team.paths)
    except AgentTeamsError:
        pass  # a damaged usage file or price table: the processes still show
    tasks = _unfinished_or_empty(team.tasks)
    tree.failed_tasks = [TaskRef(id=t.id, subject=t.subject) for t in tasks if t.failed]
    pid = team.supervisor_pid()
    if pid is None or pid < 0:
        return tree
    try:
        status = status or team.status()
    except AgentTeamsError:
        return tree
    tree.supervisor, tree.wake = describe(pid), status.wake
    if status.forkserver:
        tree.forkserver = describe(status.forkserver)
    if status.lead_pid:
        tree.lead = describe(status.lead_pid)
    owned = {t.owner_name: t for t in tasks if t.status == "in_progress" and t.owner_name}
    by_id = {t.id: t for t in tasks}
    for mate in status.teammates:
        task = by_id.get(mate.task) if mate.task else owned.get(mate.name)
        entry = MateTree(
            name=mate.name,
            state=mate.state,
            pid=mate.pid,
            restarts=mate.restarts,
            role=mate.role,
            parent=mate.parent,
            unread=_unread(team, mate.name),
            task=TaskRef(id=task.id, subject=task.subject) if task is not None else None,
        )
        if mate.pid:
            entry.process = describe(mate.pid)
            entry.children = descendants(mate.pid)
        tree.teammates.append(entry)
    return tree


def _unfinished_or_empty(tasks: TaskList) -> list[Task]:
    try:
        return tasks.unfinished()
    except AgentTeamsError:
        return []


def _unread(team: Team, name: str) -> int:
    try:
        return len(Mailbox(team.root, team.name, name).unread_entries())
    except AgentTeamsError:
        return 0


def snapshot(root: str | None, team_name: str | None = None) -> Snapshot:
    """Every team under ``root`` (or one), with Claude Code's own under a Claude Code root.
    A team whose config does not parse still shows its processes, and a problem line."""
    configs, problems = scan_teams(root)
    teams_dir = resolve_root(root) / "teams"
    # Every team with a config file, also one that does not parse: its processes still show.
    names = (
        sorted(p.name for p in teams_dir.iterdir() if (p / "config.json").exists())
        if teams_dir.is_dir()
        else []
    )
    if team_name is not None:
        paths = TeamPaths(root, team_name)
        if paths.team not in names and launcher.supervisor_pid(paths) is None and not paths.config.exists():
            raise NotFound(f"team {paths.team!r} does not exist under {paths.root}")
        names = [paths.team]
        problems = [p for p in problems if f"/{paths.team}/" in p]
    configs_by_name = {c.name: c for c in configs}
    # A team Claude Code made is shown as Claude Code's (below), unless a supervisor of ours runs it.
    names = [
        n
        for n in names
        if n not in configs_by_name
        or not claude_made(configs_by_name[n])
        or launcher.supervisor_pid(TeamPaths(root, n)) is not None
    ]
    teams = [Team(n, root) for n in names]
    statuses = {t.name: _status(t) for t in teams}
    prime([p for s in statuses.values() if s for p in _pids(s)])
    if any(statuses.values()):
        time.sleep(CPU_SAMPLE)
    snap = Snapshot(problems=problems)
    for team in teams:
        status = statuses[team.name]
        snap.teams.append(
            team_tree(team, status) if status else TeamTree(team=team.name, root=str(team.root))
        )
    snap.claude_code = claude_code_teams(root, configs, team_name)
    return snap


def _status(team: Team) -> TeamStatus | None:
    if not team.is_up():
        return None
    try:
        return team.status()
    except AgentTeamsError:
        return None


def _pids(status: TeamStatus) -> list[int]:
    """The supervisor, its fork server and lead, its teammates and everything below them."""
    pids = [status.supervisor, *(t.pid for t in status.teammates if t.pid)]
    below = [status.forkserver or 0, status.lead_pid or 0]
    for pid in pids[1:]:
        try:
            below += [k.pid for k in psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return [p for p in [*pids, *below] if p]


# ---------------------------------------------------------------- printing


def _mib(value: int | None) -> int:
    return (value or 0) // 2**20


def print_tree(tree: TeamTree) -> None:
    sup = tree.supervisor
    failed = "".join(f"\n  failed task #{t.id} {t.subject}" for t in tree.failed_tasks)
    usage = (
        f"\n  usage {spent(tree.usage.tokens, tree.usage.usd)}" if tree.usage and tree.usage.agents else ""
    )
    if sup is None:
        print(f"{tree.team}: not up{failed}{usage}")
        return
    print(
        f"{tree.team}: supervisor {sup.pid}  cpu {sup.cpu_percent:.0f}%  rss {_mib(sup.rss)} MiB  up {sup.uptime:.0f}s  wake {tree.wake}"
        + usage
    )
    if tree.forkserver:
        print(f"├─ fork server {tree.forkserver.pid}  uss {_mib(tree.forkserver.uss)} MiB")
    # Subagents are printed under their parent (the lead or a teammate).
    subagents: dict[str, list[MateTree]] = {}
    for mate in tree.teammates:
        if mate.role == "subagent":
            subagents.setdefault(mate.parent, []).append(mate)
    shown = {m.name for m in tree.teammates if m.role != "subagent"} | ({"team-lead"} if tree.lead else set())
    if tree.lead:
        print(
            f"├─ team-lead {tree.lead.pid}  cpu {tree.lead.cpu_percent:.0f}%  rss {_mib(tree.lead.rss)} MiB"
        )
        for sub in subagents.get("team-lead", []):
            _print_mate(sub, "│   ")
    for mate in tree.teammates:
        if mate.role != "subagent":
            _print_mate(mate, "")
            for sub in subagents.get(mate.name, []):
                _print_mate(sub, "│   ")
        elif mate.parent not in shown:
            _print_mate(mate, "")
    if failed:
        print(failed.lstrip("\n"))


def _print_mate(mate: MateTree, indent: str) -> None:
    proc = mate.process
    task = f"#{mate.task.id} {mate.task.subject}" if mate.task else ""
    role = f" (subagent of {mate.parent})" if mate.role == "subagent" else ""
    print(
        f"{indent}├─ {mate.name:<14} {mate.pid or '-':>7}  {mate.state:<8} cpu {proc.cpu_percent if proc else 0:>3.0f}%  "
        f"rss {_mib(proc.rss if proc else 0):>3} MiB  uss {_mib(proc.uss if proc else 0):>3} MiB  "
        f"up {proc.uptime if proc else 0:>5.0f}s  unread {mate.unread}  {task}{role}"
    )
    for child in mate.children:
        print(
            f"│   {indent}{'    ' * (child.depth - 1)}└─ {child.pid:>7}  cpu {child.cpu_percent:>3.0f}%  {child.cmdline[:80]}"
        )


def print_snapshot(snap: Snapshot) -> None:
    for tree in snap.teams:
        print_tree(tree)
    for cc in snap.claude_code:
        if cc.live is None:
            state = "lead not recorded (Claude Code 2.1.38): live or not cannot be told"
        else:
            state = "live" if cc.live else "stale (its lead session is gone)"
        print(
            f"{cc.team}: Claude Code team, {state}, lead pid {cc.lead_pid or '-'}, members {', '.join(cc.members)}"
        )
        for p in cc.processes:
            print(f"├─ claude-code {p.agent_id}\tpid {p.pid}\t{'member' if p.member else 'not in config'}")
    if not snap.teams and not snap.claude_code:
        print("no teams")
