"""The live process tree, read with psutil: supervisor → fork server, lead, teammates → their
tools and subagents; and Claude Code's own teams and processes under a Claude Code root.

Everything is returned as Structs (``agentteams ps --json`` prints them), so people and
inspection tools read the same thing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil  # imported where used: a command that does not look at processes skips it

from ipc.engine import marker as engine_marker
from ipc.errors import AgentTeamsError, CorruptFile, InvalidInput, NotFound
from ipc.osproc import command_line_args
from ipc.paths import TeamPaths, resolve_root
from ipc.process_tree import MateTree as MateTree
from ipc.process_tree import ProcInfo as ProcInfo
from ipc.process_tree import PsReport as PsReport
from ipc.process_tree import TaskRef as TaskRef
from ipc.process_tree import TeamTree as TeamTree
from ipc.process_tree import ThreadInfo as ThreadInfo
from ipc.replies import TeamStatus
from ipc.schemas import Task
from ipc.tasks import TaskList
from ipc.team_list import scan_teams
from ipc.usage import team_usage
from supervisor.client import busy, launcher
from supervisor.client.handle import TeamHandle
from supervisor.client.ps_claude import claude_code_teams, claude_made

CPU_SAMPLE = 0.1  # seconds between the two readings cpu_percent needs


# ---------------------------------------------------------------- processes


MAX_CMDLINE = 8192  # whole for our processes; a tool's inline script is cut (views cut further)


def describe(pid: int, depth: int = 0) -> ProcInfo | None:
    """One process, or None if it is gone (or not ours to read)."""
    import psutil

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
                cmdline=" ".join(command_line_args(proc.cmdline()))[:MAX_CMDLINE],
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
    import psutil

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
    import psutil

    for gone in _procs.keys() - set(pids):
        del _procs[gone]
    for pid in pids:
        try:
            _process(pid).cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue


Kids = dict[int, list[int]]  # parent pid → its children's pids


def process_table() -> Kids:
    """Every process's children, read once: asking psutil for each teammate's would read
    the whole process table per teammate, minutes for a team of thousands."""
    import psutil

    kids: Kids = {}
    for proc in psutil.process_iter(["ppid"]):
        ppid = proc.info["ppid"]
        if ppid is not None:
            kids.setdefault(ppid, []).append(proc.pid)
    return kids


def _below(pid: int, kids: Kids) -> list[tuple[int, int]]:
    """(pid, depth) of every process below ``pid`` (1 = child), parents before children."""
    out: list[tuple[int, int]] = []
    level, depth = sorted(kids.get(pid, [])), 1
    while level:
        out += [(p, depth) for p in level]
        level, depth = sorted(k for p in level for k in kids.get(p, [])), depth + 1
    return out


def thread_of(host_pid: int, tid: int) -> ThreadInfo | None:
    """Thread ``tid`` of process ``host_pid``, or None if it is gone."""
    import psutil

    try:
        times = next((t for t in _process(host_pid).threads() if t.id == tid), None)
        with open(f"/proc/{host_pid}/task/{tid}/comm") as comm:
            name = comm.read().strip()
    except (psutil.Error, OSError):
        return None
    if times is None:
        return None
    return ThreadInfo(
        host_pid=host_pid, tid=tid, name=name, cpu_seconds=round(times.user_time + times.system_time, 2)
    )


def descendants(pid: int, kids: Kids | None = None) -> list[ProcInfo]:
    """Every process below ``pid``, each with its depth (1 = child), parents before children."""
    below = _below(pid, kids if kids is not None else process_table())
    return [info for p, depth in below if (info := describe(p, depth)) is not None]


# ---------------------------------------------------------------- our teams


def shown(status: TeamStatus, rows: int | None) -> set[str] | None:
    """The teammates a view of ``rows`` teammate rows shows (the busy ones first, and every
    subagent, under its parent); None: every one."""
    top = [m for m in status.teammates if m.role != "subagent"]
    if not rows or len(top) <= rows:
        return None
    return {m.name for m in busy.mates_first(top)[:rows]} | {
        m.name for m in status.teammates if m.role == "subagent"
    }


def team_tree(
    team: TeamHandle, status: TeamStatus | None = None, kids: Kids | None = None, rows: int | None = None
) -> TeamTree:
    """One team's processes with state, resources, unread messages and current task
    (``kids``: the process table, if the caller has read it already). With ``rows``, only the
    teammates a view of that many rows shows get their process, tools and unread messages
    read; the rest, their state and task: a team of thousands is seen in a moment."""
    tree = TeamTree(team=team.name, root=str(team.root))
    try:
        tree.usage = team_usage(team.paths)
    except AgentTeamsError:
        pass  # a damaged usage file or price table: the processes still show
    tasks = _unfinished_or_empty(team.tasks)
    tree.failed_tasks = [TaskRef(id=t.id, subject=t.subject) for t in tasks if t.failed]
    pid = team.supervisor_pid()
    if pid is None or pid < 0:
        tree.teammates = _outsiders(team, tasks)
        return tree
    try:
        status = status or team.status()
    except AgentTeamsError:  # up, and not answering: its teammates are not "down"
        tree.teammates = _outsiders(team, tasks, down=False)
        return tree
    tree.supervisor, tree.wake = describe(pid), status.wake
    if status.forkserver:
        tree.forkserver = describe(status.forkserver)
    if status.door:
        tree.door = describe(status.door)
    if status.lead_pid:
        tree.lead = describe(status.lead_pid)
    owned = {t.owner_name: t for t in tasks if t.status == "in_progress" and t.owner_name}
    by_id = {t.id: t for t in tasks}
    kids = kids if kids is not None else process_table()
    seen = shown(status, rows)
    for host_pid in sorted({m.host_pid for m in status.teammates if m.host_pid}):
        if (host := describe(host_pid)) is not None:
            tree.hosts.append(host)
    for mate in status.teammates:
        full = seen is None or mate.name in seen
        task = by_id.get(mate.task) if mate.task else owned.get(mate.name)
        entry = MateTree(
            name=mate.name,
            state=mate.state,
            pid=mate.pid,
            restarts=mate.restarts,
            role=mate.role,
            parent=mate.parent,
            unread=_unread(team, mate.name) if full else 0,
            task=TaskRef(id=task.id, subject=task.subject) if task is not None else None,
            backend=mate.backend,
        )
        if mate.host_pid and mate.thread and full:  # a thread of its host, not a process
            entry.thread = thread_of(mate.host_pid, mate.thread)
        elif mate.pid and full and mate.backend != "in-process":
            entry.process = describe(mate.pid)
            entry.children = descendants(mate.pid, kids)
        entry.host = team.host
        tree.teammates.append(entry)
    return tree


def _outsiders(team: TeamHandle, tasks: list[Task], down: bool = True) -> list[MateTree]:
    """Without a supervisor: the members from the config. Outside clients (MCP sessions)
    with the server process it names while that process runs; this host's teammates as
    "down" (members still: ``up`` brings them back); another host's are ``elsewhere``'s."""
    try:
        members = team.config().teammates()
    except AgentTeamsError:
        return []
    owned = {t.owner_name: t for t in tasks if t.status == "in_progress" and t.owner_name}
    found = []
    for m in members:
        task = owned.get(m.name)
        ref = TaskRef(id=task.id, subject=task.subject) if task is not None else None
        if m.backend_type != "mcp":
            if down and (not m.host_name or m.host_name == team.host):
                found.append(
                    MateTree(
                        name=m.name,
                        state="down",
                        pid=None,
                        restarts=0,
                        unread=_unread(team, m.name),
                        task=ref,
                    )
                )
            continue
        pane = m.tmux_pane_id.removeprefix("mcp:")
        process = describe(int(pane)) if pane.isdigit() else None
        if process is not None and " mcp " not in f" {process.cmdline} ":
            process = None  # the number was reused by a stranger
        found.append(
            MateTree(
                name=m.name,
                state="connected" if process is not None else "inactive",
                pid=process.pid if process is not None else None,
                restarts=0,
                unread=_unread(team, m.name),
                task=ref,
                process=process,
            )
        )
    return found


def elsewhere(team: TeamHandle, tree: TeamTree) -> None:
    """In a team on the engine, the members that run on other hosts: their host, whether
    they work on a turn now (``isActive``: "active", else "inactive"), their task (their
    processes, and whether they are alive, are that host's to show)."""
    if team.state.engine is None:
        return
    tree.host = team.host
    here = {m.name for m in tree.teammates}
    try:
        members = team.config().teammates()
        owned = {t.owner_name: t for t in _unfinished_or_empty(team.tasks) if t.status == "in_progress"}
    except AgentTeamsError:
        return
    for member in members:
        if member.name in here or member.host_name == team.host:
            continue
        task = owned.get(member.name)
        tree.teammates.append(
            MateTree(
                name=member.name,
                state="active" if member.is_active is True else "inactive",
                pid=None,
                restarts=0,
                unread=_unread(team, member.name),
                task=TaskRef(id=task.id, subject=task.subject) if task is not None else None,
                host=member.host_name,
            )
        )


def _unfinished_or_empty(tasks: TaskList) -> list[Task]:
    try:
        return tasks.unfinished()
    except AgentTeamsError:
        return []


def _unread(team: TeamHandle, name: str) -> int:
    try:
        return len(team.state.mailbox(name).unread_entries())
    except AgentTeamsError:
        return 0


def snapshot(root: str | None, team_name: str | None = None, rows: int | None = None) -> PsReport:
    """Every team under ``root`` (or one), with Claude Code's own under a Claude Code root.
    A team whose config does not parse still shows its processes, and a problem line.
    ``rows``: read in full only the teammates a view of that many rows shows."""
    configs, problems = scan_teams(root)
    teams_dir = resolve_root(root) / "teams"
    # Every team with a config file, also one that does not parse: its processes still show;
    # and every team on an engine this root remembers, also before this host has joined it.
    names = (
        sorted(
            p.name
            for p in teams_dir.iterdir()
            if (p / "config.json").exists() or (p / engine_marker.MARKER).exists()
        )
        if teams_dir.is_dir()
        else []
    )
    handles: dict[str, TeamHandle] = {}  # made while checking the name: not made twice
    if team_name is not None:
        paths = TeamPaths(root, team_name)
        # A team on the engine this root has not joined ($AGENTTEAMS_ENGINE, --engine) has no files here.
        known = paths.team in names or launcher.supervisor_pid(paths) is not None or paths.config.exists()
        link = None if known else engine_marker.read(paths)
        if not known and link is None:
            raise NotFound(paths.missing())
        if link is not None and not link.remembered:  # named by $AGENTTEAMS_ENGINE / --engine only
            handles[paths.team] = TeamHandle(paths.team, root)
            handles[paths.team].store.read()  # a name the engine does not hold: NotFound
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
    teams: list[TeamHandle] = []
    for n in names:
        try:
            teams.append(handles.get(n) or TeamHandle(n, root))
        except InvalidInput as exc:  # a stray folder whose name no team has: named, not fatal
            problems.append(f"{teams_dir}: {exc.message}")
        except AgentTeamsError as exc:  # a damaged marker, an engine away: named, the others shown
            if team_name is not None:
                raise
            line = exc.message if isinstance(exc, CorruptFile) else f"team {n}: {exc.message}"
            if line not in problems:  # scan_teams may have named it already
                problems.append(line)
    statuses = {t.name: _status(t) for t in teams}
    kids = process_table()
    prime([p for s in statuses.values() if s for p in _pids(s, kids, shown(s, rows))])
    if any(statuses.values()):
        time.sleep(CPU_SAMPLE)
    snap = PsReport(problems=problems)
    for team in teams:
        status = statuses[team.name]
        # Down: its members from the files. Up but not answering: nothing to say of them.
        show_members = status or not team.is_up()
        tree = (
            team_tree(team, status, kids, rows)
            if show_members
            else TeamTree(team=team.name, root=str(team.root))
        )
        elsewhere(team, tree)
        snap.teams.append(tree)
    snap.claude_code = claude_code_teams(
        root, configs, team_name, lambda n: launcher.supervisor_pid(TeamPaths(root, n)) is not None
    )
    return snap


def _status(team: TeamHandle) -> TeamStatus | None:
    if not team.is_up():
        return None
    try:
        return team.status()
    except AgentTeamsError:
        return None


def _pids(status: TeamStatus, kids: Kids, seen: set[str] | None) -> list[int]:
    """The supervisor, its fork server, resident door and lead, its teammates (those ``seen``; None: all)
    and everything below them."""
    pids = [
        status.supervisor,
        *(t.pid for t in status.teammates if t.pid and (seen is None or t.name in seen)),
    ]
    below = [status.forkserver or 0, status.door or 0, status.lead_pid or 0]
    for pid in pids[1:]:
        below += [p for p, _ in _below(pid, kids)]
    return [p for p in [*pids, *below] if p]
