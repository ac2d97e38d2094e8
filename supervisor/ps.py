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


def claude_code_processes(root: str | None, team: str | None = None) -> list[dict[str, Any]]:
    """Real Claude Code teammates: processes whose command line carries ``--agent-id NAME@TEAM``,
    matched against that team's config under ``root`` (e.g. ``--root ~/.claude``)."""
    from ipc.config import TeamConfigStore

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if "--agent-id" not in cmdline:
            continue
        index = cmdline.index("--agent-id")
        if index + 1 >= len(cmdline) or "@" not in cmdline[index + 1]:
            continue
        agent_id = cmdline[index + 1]
        name, _, team_name = agent_id.partition("@")
        if team and team_name != team:
            continue
        try:
            member = TeamConfigStore(root, team_name).read().member(name) is not None
        except AgentTeamsError:
            member = False
        found.append({"pid": proc.info["pid"], "agent_id": agent_id, "team": team_name, "member": member})
    return found


def print_tree(tree: dict[str, Any]) -> None:
    sup = tree.get("supervisor")
    if sup is None:
        print(f"{tree['team']}: not up")
        return
    print(f"{tree['team']}: supervisor {sup['pid']}  cpu {sup['cpu_percent']:.0f}%  rss {sup['rss'] // 2**20} MiB  up {sup['uptime']:.0f}s  wake {tree.get('wake')}")
    if tree.get("zygote"):
        print(f"├─ zygote {tree['zygote']['pid']}  uss {(tree['zygote'].get('uss') or 0) // 2**20} MiB")
    for mate in tree["teammates"]:
        proc = mate.get("process") or {}
        task = mate.get("task")
        print(
            f"├─ {mate['name']:<14} {mate['pid'] or '-':>7}  {mate['state']:<8} cpu {proc.get('cpu_percent', 0):>3.0f}%  "
            f"rss {(proc.get('rss') or 0) // 2**20:>3} MiB  uss {(proc.get('uss') or 0) // 2**20:>3} MiB  "
            f"up {proc.get('uptime', 0):>5.0f}s  unread {mate['unread']}  " + (f"#{task['id']} {task['subject']}" if task else "")
        )
        for child in mate["children"]:
            print(f"│   └─ {child['pid']:>7}  {child['cmdline'][:80]}")
