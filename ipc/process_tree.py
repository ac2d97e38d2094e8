"""What ``ps`` reports (the table's ``ps`` operation, ``agentteams ps --json``, HTTP ``/ps``):
a team's live process tree (supervisor, fork server, lead, in-process hosts, teammates with
their tools and subagents, or their threads) and Claude Code's own teams under a root. Read
by :mod:`supervisor.client.ps`; defined here, once, as every schema is."""

from __future__ import annotations

import msgspec

from ipc.usage import TeamUsage


class ClaudeProcess(msgspec.Struct, kw_only=True):
    pid: int
    agent_id: str
    team: str
    member: bool


class ClaudeTeam(msgspec.Struct, kw_only=True):
    """A team Claude Code made: live while its lead session runs, stale after."""

    team: str
    lead_pid: int | None
    live: bool | None  # None: this Claude Code version does not say (2.1.38, in-process members)
    members: list[str]
    processes: list[ClaudeProcess] = []


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


class ThreadInfo(msgspec.Struct, kw_only=True):
    """An in-process teammate: a thread of its host process."""

    host_pid: int
    tid: int  # the thread's native id (``ps -L`` shows it)
    name: str  # the kernel's name for it (``at:{teammate}``, cut to 15 bytes)
    cpu_seconds: float  # its CPU time, user and system


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
    host: str = ""  # the host it runs on, in a team on the engine
    backend: str = ""
    thread: ThreadInfo | None = None  # in-process: its thread in its host (the host is in hosts)


class TeamTree(msgspec.Struct, kw_only=True):
    team: str
    root: str
    supervisor: ProcInfo | None = None
    forkserver: ProcInfo | None = None
    door: ProcInfo | None = None  # the resident door's program, while it runs
    lead: ProcInfo | None = None
    hosts: list[ProcInfo] = []  # in-process hosts: their teammates are threads of these
    wake: str = ""
    host: str = ""  # this host's name, in a team on the engine
    teammates: list[MateTree] = []
    failed_tasks: list[TaskRef] = []  # open tasks whose last attempt failed
    usage: TeamUsage | None = None  # tokens and cost of the team's model calls


class PsReport(msgspec.Struct, kw_only=True):
    teams: list[TeamTree] = []
    claude_code: list[ClaudeTeam] = []
    problems: list[str] = []
