"""The live terminal view of a team (rich): members, tasks by status, messages, wake latency."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ipc import probe
from ipc.errors import AgentTeamsError
from ipc.schemas import parse_body

if TYPE_CHECKING:
    from supervisor.team import Team

STATE_STYLE = {"running": "bold green", "idle": "dim", "starting": "yellow", "stopping": "magenta", "failed": "bold red", "exited": "red"}


def snapshot(team: Team) -> dict[str, Any]:
    """Everything the view shows, gathered once."""
    try:
        status = team.status()
    except AgentTeamsError:
        status = {"teammates": [], "supervisor": None, "wake": "-"}
    tasks = team.tasks.list()
    lead = team.inbox("team-lead").read() if team.inbox("team-lead").exists() else []
    latencies = [r.latency_ms for r in probe.records(team.paths)]
    return {"status": status, "tasks": tasks, "messages": lead[-8:], "latency": probe.percentiles(latencies)}


def render(team: Team, snap: dict[str, Any] | None = None) -> Group:
    snap = snap or snapshot(team)
    status, tasks = snap["status"], snap["tasks"]
    by_owner = {t.owner_name: t for t in tasks if t.status == "in_progress"}

    members = Table(title=f"team {team.name} · supervisor {status.get('supervisor')} · wake {status.get('wake')}", expand=True)
    for col in ("teammate", "state", "pid", "restarts", "current task"):
        members.add_column(col)
    for mate in status["teammates"]:
        task = by_owner.get(mate["name"])
        members.add_row(
            Text(mate["name"], style=mate.get("color") or ""),
            Text(mate["state"], style=STATE_STYLE.get(mate["state"], "")),
            str(mate["pid"] or "-"),
            str(mate["restarts"]),
            f"#{task.id} {task.subject}" if task else "",
        )

    counts = {s: sum(1 for t in tasks if t.status == s) for s in ("pending", "in_progress", "completed")}
    board = Table(title=f"tasks · {counts['completed']}/{len(tasks)} completed · {counts['in_progress']} in progress · {counts['pending']} pending", expand=True)
    for col in ("#", "subject", "status", "owner", "blocked by"):
        board.add_column(col)
    for task in tasks[-14:]:
        board.add_row(task.id, task.subject[:50], task.status, task.owner_name or "", ",".join(task.blocked_by))

    lines = []
    for m in snap["messages"]:
        body = parse_body(m.text)
        what = body.__class__.__name__ if body else (m.summary if isinstance(m.summary, str) else m.text[:60])
        lines.append(f"{m.timestamp[11:23]}  {m.from_:>12} → team-lead  {what}")
    lat = snap["latency"]
    latency = f"send→wake: n={lat['n']}  p50 {lat['p50']:.2f} ms  p99 {lat['p99']:.2f} ms" if lat["n"] else "send→wake: no probes yet"
    return Group(members, board, Panel("\n".join(lines) or "(no messages)", title="recent messages to the lead"), Text(latency))
