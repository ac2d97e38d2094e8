"""The live terminal view of a team (rich): the task counts, one line per teammate, the tasks
that matter now, the lead's recent messages, traced latency and usage.

It fits the terminal it is given: every cell is one line (long text is cut with an
ellipsis, never wrapped), columns are dropped by priority on narrow screens, and rows are
given out by priority on short ones: the counts and the teammates first, then tasks and
messages, and the teammates' tool processes only when there is room. Teammates that do not all fit are
counted in a line, the busy ones shown first. Idle notifications are
counted, not listed: they would crowd out the messages that say something.
"""

from __future__ import annotations

import sys
import time

import msgspec
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ipc import trace
from ipc.errors import AgentTeamsError
from ipc.readable import headline
from ipc.schemas import LEAD_NAME, IdleNotification, InboxMessage, Task, parse_body
from ipc.usage import spent
from supervisor.client import busy
from supervisor.client.ps import MateTree, TeamTree, elsewhere, team_tree
from supervisor.client.team import Team

STATE_STYLE = {
    "running": "bold green",
    "idle": "dim",
    "starting": "yellow",
    "stopping": "magenta",
    "failed": "bold red",
    "exited": "red",
    "connected": "green",  # a member that is an MCP session, its server running
}
TASK_ROWS = 14  # at most, when the screen has room for more
MESSAGE_ROWS = 8
MESSAGES_READ = 60  # of the lead's inbox, the latest: idle notifications among them are counted
WIDE = 100  # from this width: pid, cpu, time, blocked-by
WIDER = 120  # and restarts, unread


class ViewSnapshot(msgspec.Struct, kw_only=True):
    tree: TeamTree
    tasks: list[Task]
    messages: list[InboxMessage]
    latency: dict[str, float]
    tracing: bool


def snapshot(team: Team, rows: int | None = None) -> ViewSnapshot:
    """Everything the view shows, gathered once (``rows``: the teammates' processes only for
    as many as can show)."""
    tree = team_tree(team, rows=rows)
    elsewhere(team, tree)  # a team on the engine: the other hosts' members too
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
        messages=sorted(lead, key=lambda m: m.timestamp)[-MESSAGES_READ:],
        latency=trace.percentiles([s.latency_ms for s in spans]),
        tracing=bool(spans),
    )


def _task_rows(tasks: list[Task]) -> list[Task]:
    """What matters now: failed and in-progress tasks, then the most recently finished,
    then the next pending ones."""
    failed = [t for t in tasks if t.failed]
    running = [t for t in tasks if t.status == "in_progress" and not t.failed]
    done = [t for t in tasks if t.status == "completed"][-4:]
    pending = [t for t in tasks if t.status == "pending" and not t.failed]
    return [*failed, *running, *reversed(done), *pending]


def _table(*columns: tuple[str, int | None], width: int) -> Table:
    """A borderless table whose cells never wrap; a column with no width takes the rest."""
    table = Table(box=None, expand=True, pad_edge=False, show_edge=False, padding=(0, 1), width=width)
    for name, size in columns:
        if size is None:
            table.add_column(name, no_wrap=True, overflow="ellipsis", ratio=1)
        else:
            table.add_column(name, no_wrap=True, overflow="ellipsis", width=size)
    return table


def _line(text: str, width: int, style: str = "") -> Text:
    line = Text(text, style=style, no_wrap=True, overflow="ellipsis")
    line.truncate(width, overflow="ellipsis")
    return line


def _headline(tree: TeamTree, tasks: list[Task], width: int) -> list[Text]:
    if tree.supervisor is None:
        title = f"team {tree.team} · not up ('agentteams up {tree.team}')"
    else:
        title = f"team {tree.team} · supervisor {tree.supervisor.pid} · wake {tree.wake}"
    counts = {s: sum(1 for t in tasks if t.status == s and not t.failed) for s in ("in_progress", "pending")}
    completed = sum(1 for t in tasks if t.status == "completed")
    failed = sum(1 for t in tasks if t.failed)
    summary = (
        f"tasks {completed}/{len(tasks)} completed · {counts['in_progress']} in progress · "
        f"{counts['pending']} pending" + (f" · {failed} failed" if failed else "")
    )
    return [_line(title, width, "bold"), _line(summary, width, "bold red" if failed else "")]


def _members(
    mates: list[MateTree], width: int, rows: int | None, tools: bool, hint: str = "a taller window shows them"
) -> list[RenderableType]:
    columns: list[tuple[str, int | None]] = [("teammate", 14), ("state", 8)]
    if width >= WIDE:
        columns += [("pid", 7), ("cpu", 5)]
    if width >= WIDER:
        columns += [("restarts", 8), ("unread", 6)]
    table = _table(*columns, ("current task", None), width=width)
    over = rows is not None and len(mates) > rows
    # Too many for the screen: a count line, the busy ones first, the rest counted.
    counted = over and rows is not None and rows >= 3
    if over:
        mates = busy.mates_first(mates)
    shown = mates[: max((rows or 0) - (2 if counted else 1), 0)] if over else mates
    for mate in shown:
        name = f"{mate.name} ({mate.host})" if mate.host else mate.name
        cells = [Text(name), Text(mate.state, style=STATE_STYLE.get(mate.state, ""))]
        if width >= WIDE:
            cells += [
                Text(str(mate.pid or "-")),
                Text(f"{mate.process.cpu_percent:.0f}%" if mate.process else "-"),
            ]
        if width >= WIDER:
            cells += [Text(str(mate.restarts)), Text(str(mate.unread))]
        table.add_row(*cells, Text(f"#{mate.task.id} {mate.task.subject}" if mate.task else ""))
        for child in mate.children if tools else []:
            tool = [Text(f"{'  ' * child.depth}└ tool", style="dim"), Text("")]
            if width >= WIDE:
                tool += [Text(str(child.pid), style="dim"), Text(f"{child.cpu_percent:.0f}%", style="dim")]
            if width >= WIDER:
                tool += [Text(""), Text("")]
            table.add_row(*tool, Text(child.cmdline, style="dim"))
    if not over:
        return [table]
    rest = busy.mates_line(mates[len(shown) :], more=True)
    more = _line(f"… {rest} ({hint})", width, "dim")
    return [_line(busy.mates_line(mates), width, "bold"), table, more] if counted else [table, more]


def _tasks(tasks: list[Task], width: int, rows: int) -> Table:
    columns: list[tuple[str, int | None]] = [("#", 4), ("subject", None), ("status", 11), ("owner", 12)]
    if width >= WIDE:
        columns.append(("blocked by", 12))
    table = _table(*columns, width=width)
    for task in _task_rows(tasks)[:rows]:
        status = Text("failed", style="bold red") if task.failed else Text(task.status)
        cells = [Text(task.id), Text(task.subject), status, Text(task.owner_name or "")]
        if width >= WIDE:
            cells.append(Text(",".join(task.blocked_by)))
        table.add_row(*cells)
    return table


def _idle(message: InboxMessage) -> bool:
    return isinstance(parse_body(message.text), IdleNotification)


def _messages(messages: list[InboxMessage], width: int, rows: int) -> list[RenderableType]:
    idle = sum(1 for m in messages if _idle(m))
    said = [m for m in messages if not _idle(m)][-rows:] if rows > 0 else []
    title = "recent messages to the lead" + (f" ({idle} idle notifications not shown)" if idle else "")
    columns: list[tuple[str, int | None]] = [("from", 14), ("message", None)]
    if width >= WIDE:
        columns.insert(0, ("time", 12))
    table = _table(*columns, width=width)
    table.show_header = False
    for m in said:
        text = m.summary_text or headline(m)
        cells = [Text(m.from_), Text(" ".join(text.split()))]
        table.add_row(*([Text(m.timestamp[11:23], style="dim"), *cells] if width >= WIDE else cells))
    return [_line(title, width, "bold"), table if said else _line("(no messages)", width, "dim")]


def _footer(snap: ViewSnapshot, width: int) -> Text:
    lat = snap.latency
    if snap.tracing:
        latency = f"send → turn starts: n={int(lat['n'])} p50 {lat['p50']:.2f} ms p99 {lat['p99']:.2f} ms"
    else:
        latency = "send → turn starts: not traced (start the team with AGENTTEAMS_TRACE=1 to measure it)"
    usage = snap.tree.usage
    used = (
        f"usage: {spent(usage.tokens, usage.usd)}" if usage and usage.agents else "usage: no model calls yet"
    )
    return _line(f"{used} · {latency}", width, "dim")


def render(
    snap: ViewSnapshot,
    *,
    width: int = 200,
    height: int | None = None,
    compact: bool = False,
    rows: int | None = None,
) -> Group:
    """The view for a terminal ``width`` × ``height`` (None: as tall as it needs, with at
    most ``rows`` lines of teammates, None or 0: every one). ``compact``: the counts and the
    teammates only."""
    mates = snap.tree.teammates
    parts: list[RenderableType] = list(_headline(snap.tree, snap.tasks, width))
    tools = sum(len(m.children) for m in mates)
    if height is None:
        parts += _members(mates, width, rows or None, tools=not compact, hint="--rows 0 shows every one")
        if not compact:
            parts += [Text(""), _tasks(snap.tasks, width, TASK_ROWS)]
            parts += [Text(""), *_messages(snap.messages, width, MESSAGE_ROWS), _footer(snap, width)]
        return Group(*parts)
    left = height - len(parts) - 1  # the members' header
    member_rows = min(len(mates), max(left, 1))
    left -= member_rows
    wanted_tasks = 0 if compact else min(len(_task_rows(snap.tasks)), TASK_ROWS)
    task_rows = min(wanted_tasks, max(left - 1, 0) // 2 + max(left - 1, 0) % 2) if left > 1 else 0
    left -= task_rows + (1 if task_rows else 0)
    message_rows = 0 if compact else min(MESSAGE_ROWS, max(left - 2, 0))
    left -= message_rows + (2 if message_rows else 0)
    footer = not compact and left >= 1
    left -= 1 if footer else 0
    parts += _members(mates, width, member_rows, tools=tools <= left and member_rows == len(mates))
    if task_rows:
        parts.append(_tasks(snap.tasks, width, task_rows))
    if message_rows:
        parts += _messages(snap.messages, width, message_rows)
    if footer:
        parts.append(_footer(snap, width))
    return Group(*parts)


def console(stderr: bool = False) -> Console:
    """A rich console; piped output is not wrapped at 80 columns (a tree broken over lines
    is unreadable)."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr) if stream.isatty() else Console(stderr=stderr, width=200, soft_wrap=True)


def print_once(team: Team, compact: bool = False, rows: int | None = None) -> None:
    """One frame: as tall as the terminal, or (piped) with at most ``rows`` teammate lines."""
    out = console()
    height = out.height if out.is_terminal else None
    rows = height if height is not None else rows
    out.print(render(snapshot(team, rows), width=out.width, height=height, compact=compact, rows=rows))


def live(team: Team, refresh: float = 0.5, compact: bool = False) -> None:
    out = console()

    def frame() -> Group:
        # One line spare: the cursor's. The size is read each time: the window may change.
        height = out.height - 1
        return render(snapshot(team, height), width=out.width, height=height, compact=compact)

    with Live(frame(), console=out, refresh_per_second=4, screen=False, vertical_overflow="crop") as view:
        try:
            while True:
                time.sleep(refresh)
                if not team.store.exists():  # deleted: there is nothing left to bring up
                    break
                view.update(frame())
        except KeyboardInterrupt:
            return
    print(f"agentteams: team {team.name!r} was deleted; the view ends", file=sys.stderr)
