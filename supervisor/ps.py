"""The live process tree of a team, read with psutil: supervisor → zygote, teammates → tools."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psutil

from ipc.errors import AgentTeamsError
from ipc.mailbox import Mailbox

if TYPE_CHECKING:
    from supervisor.team import Team


def describe(pid: int, sample: float = 0.0) -> dict[str, Any] | None:
    """pid, name, cpu %, rss, uss, uptime and cmdline of one process; None if it is gone."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            info: dict[str, Any] = {
                "pid": pid,
                "ppid": proc.ppid(),
                "name": proc.name(),
                "status": proc.status(),
                "cpu_percent": proc.cpu_percent(interval=sample) if sample else proc.cpu_percent(None),
                "rss": proc.memory_info().rss,
                "uptime": round(time.time() - proc.create_time(), 1),
                "cmdline": " ".join(proc.cmdline())[:200],
            }
        try:
            info["uss"] = proc.memory_full_info().uss
        except (psutil.AccessDenied, psutil.ZombieProcess):
            info["uss"] = None
        return info
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None


def children(pid: int) -> list[dict[str, Any]]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [d for k in kids if (d := describe(k.pid)) is not None]


def team_tree(team: Team) -> dict[str, Any]:
    """The team's processes with state, resources, unread messages and current task."""
    pid = team.supervisor_pid()
    tree: dict[str, Any] = {"team": team.name, "root": str(team.root), "supervisor": None, "zygote": None, "teammates": []}
    if pid is None or pid < 0:
        return tree
    try:
        status = team.status()
    except AgentTeamsError:
        return tree
    tree["supervisor"] = describe(pid)
    tree["wake"] = status["wake"]
    if status.get("zygote"):
        tree["zygote"] = describe(status["zygote"])
    owned = {t.owner_name: t for t in team.tasks.list() if t.status == "in_progress" and t.owner_name}
    for mate in status["teammates"]:
        entry: dict[str, Any] = {
            "name": mate["name"],
            "state": mate["state"],
            "pid": mate["pid"],
            "restarts": mate["restarts"],
            "unread": len(Mailbox(team.root, team.name, mate["name"]).unread()),
            "task": None,
            "process": None,
            "children": [],
        }
        task = owned.get(mate["name"])
        if task is not None:
            entry["task"] = {"id": task.id, "subject": task.subject}
        if mate["pid"]:
            entry["process"] = describe(mate["pid"])
            entry["children"] = children(mate["pid"])
        tree["teammates"].append(entry)
    return tree
