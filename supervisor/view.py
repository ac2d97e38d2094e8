"""The live terminal view of a team (rich): members and their tools, the tasks that matter
now, the lead's recent messages in time order, and traced latency."""

from __future__ import annotations

import sys
import time
from typing import Any

import msgspec
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ipc import trace
from ipc.errors import AgentTeamsError
from ipc.schemas import LEAD_NAME, InboxMessage, Task, parse_body
from ipc.usage import spent
from supervisor.ps import TeamTree, team_tree
from supervisor.team import Team

STATE_STYLE = {
    "running": "bold green",
    "idle": "dim",
    "starting": "yellow",
    "stopping": "magenta",
    "failed": "bold red",
    "exited": "red",
}
TASK_ROWS = 14


class ViewSnapshot(msgspec.Struct, kw_only=True):
    tree: TeamTree
    tasks: list[Task]
    messages: list[InboxMessage]
    latency: dict[str, float]
    tracing: bool


def snapshot(team: Team) -> ViewSnapshot:
    """Everything the view shows, gathered once."""
    tree = team_tree(team)
    try:
        tasks = team.tasks.list(include_internal=False)
    except AgentTeamsError:
        tasks = []
    try:
        lead = team.inbox(LEAD_NAME).read() if team.inbox(LEAD_NAME).exists() else []
    except AgentTeamsError:
        lead = []
    spans = trace.spans(team.paths)
    return ViewSnapshot(
        tree=tree,
        tasks=tasks,
        messages=sorted(lead, key=lambda m: m.timestamp)[-8:],
        latency=trace.percentiles([s.latency_ms for s in spans]),
        tracing=bool(spans),
    )


def _task_rows(tasks: list[Task]) -> list[Task]:
    """What matters now: failed and in-progress tasks, then the most recently finished,
    then the next pending ones, up to :data:`TASK_ROWS`."""
    failed = [t for t in tasks if t.failed]
    running = [t for t in tasks if t.status == "in_progress" and not t.failed]
    done = [t for t in tasks if t.status == "completed"][-4:]
    pending = [t for t in tasks if t.status == "pending" and not t.failed]
    rows = [*failed, *running, *reversed(done), *pending]
    return rows[:TASK_ROWS]


def render(team: Team, snap: ViewSnapshot | None = None) -> Group:
    snap = snap or snapshot(team)
    tree = snap.tree
    if tree.supervisor is None:
        title = f"team {team.name} · not up ('agentteams up {team.name}')"
    else:
        title = f"team {team.name} · supervisor {tree.supervisor.pid} · wake {tree.wake}"
    members = Table(title=title, expand=True)
    for col in ("teammate", "state", "pid", "cpu", "restarts", "current task"):
        members.add_column(col)
    for mate in tree.teammates:
        members.add_row(
            Text(mate.name),
            Text(mate.state, style=STATE_STYLE.get(mate.state, "")),
            str(mate.pid or "-"),
            f"{mate.process.cpu_percent:.0f}%" if mate.process else "-",
            str(mate.restarts),
            f"#{mate.task.id} {mate.task.subject}" if mate.task else "",
        )
        for child in mate.children:
            members.add_row(
                Text(f"{'  ' * child.depth}└ {child.cmdline[:60]}", style="dim"),
                "",
                str(child.pid),
                f"{child.cpu_percent:.0f}%",
                "",
                "",
            )

    tasks = snap.tasks
    counts = {
        s: sum(1 for t in tasks if t.status == s and not t.failed)
        for s in ("pending", "in_progress", "completed")
    }
    failed = sum(1 for t in tasks if t.failed)
    board = Table(
        title=(
            f"tasks · {counts['completed']}/{len(tasks)} completed · {counts['in_progress']} in progress · "
            f"{counts['pending']} pending" + (f" · {failed} failed" if failed else "")
        ),
        expand=True,
    )
    for col in ("#", "subject", "status", "owner", "blocked by"):
        board.add_column(col)
    for task in _task_rows(tasks):
        status = Text("failed", style="bold red") if task.failed else Text(task.status)
        board.add_row(task.id, task.subject[:50], status, task.owner_name or "", ",".join(task.blocked_by))

    lines = []
    for m in snap.messages:
        body = parse_body(m.text)
        what = type(body).__name__ if body else (m.summary_text or m.text[:60])
        lines.append(f"{m.timestamp[11:23]}  {m.from_:>12} → team-lead  {what}")
    lat = snap.latency
    if snap.tracing:
        latency = f"send → turn starts: n={int(lat['n'])}  p50 {lat['p50']:.2f} ms  p99 {lat['p99']:.2f} ms"
    else:
        latency = "send → turn starts: not traced (start the team with AGENTTEAMS_TRACE=1 to measure it)"
    usage = snap.tree.usage
    used = (
        f"usage: {spent(usage.tokens, usage.usd)}" if usage and usage.agents else "usage: no model calls yet"
    )
    return Group(
        members,
        board,
        Panel("\n".join(lines) or "(no messages)", title="recent messages to the lead"),
        Text(latency),
        Text(used),
    )


def console(stderr: bool = False) -> Console:
    """A rich console; piped output is not wrapped at 80 columns (a tree broken over lines
    is unreadable)."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr) if stream.isatty() else Console(stderr=stderr, width=200, soft_wrap=True)


def print_once(team: Team) -> None:
    console().print(render(team))


def live(team: Team, refresh: float = 0.5) -> None:
    with Live(render(team), console=console(), refresh_per_second=4, screen=False) as view:
        try:
            while True:
                time.sleep(refresh)
                view.update(render(team))
        except KeyboardInterrupt:
            pass


def as_dict(snap: ViewSnapshot) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.to_builtins(snap)
    return result
