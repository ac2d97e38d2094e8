"""``agentteams ps`` for a person: each team as a tree, supervisor → fork server, resident
door (while it runs), lead,
teammates → their tools and subagents; in-process teammates as threads under their host
process. A team with more teammates than the row budget
shows a count line and the busy teammates first; ``--all`` shows every row (``--json``
always has everything)."""

from __future__ import annotations

from ipc.usage import spent
from supervisor.client import busy
from supervisor.client.ps import MateTree, PsReport, TeamTree


def mib(value: int | None) -> str:
    """Bytes in MiB, with a decimal under 10 (a forked teammate's unique memory is often
    under one MiB: it shares the fork server's pages), '?' when it could not be read."""
    if value is None:
        return "?"
    return f"{value / 2**20:.1f}" if value < 10 * 2**20 else str(value // 2**20)


def print_tree(tree: TeamTree, rows: int | None = busy.DEFAULT_ROWS) -> None:
    """One team; past ``rows`` teammates (None or 0: never), a count line and the busy ones
    first, the rest counted."""
    sup = tree.supervisor
    failed = "".join(f"\n  failed task #{t.id} {t.subject}" for t in tree.failed_tasks)
    usage = (
        f"\n  usage {spent(tree.usage.tokens, tree.usage.usd)}" if tree.usage and tree.usage.agents else ""
    )
    where = f" on {tree.host}" if tree.host else ""
    if sup is None:
        print(f"{tree.team}: not up{where}{failed}{usage}")
        for mate in tree.teammates:
            _print_mate(mate, "")
        return
    top = [m for m in tree.teammates if m.role != "subagent"]
    listed, hidden = busy.budget(busy.mates_first(top) if rows and len(top) > rows else top, rows)
    print(
        f"{tree.team}{where}: supervisor {sup.pid}  cpu {sup.cpu_percent:.0f}%  rss {mib(sup.rss)} MiB  up {sup.uptime:.0f}s  wake {tree.wake}"
        + usage
    )
    if hidden:
        print(f"│  {busy.mates_line(top)}")
    if tree.forkserver:
        print(f"├─ fork server {tree.forkserver.pid}  uss {mib(tree.forkserver.uss)} MiB")
    if tree.door:
        door = tree.door
        print(
            f"├─ resident door {door.pid}  cpu {door.cpu_percent:.0f}%  rss {mib(door.rss)} MiB  up {door.uptime:.0f}s"
        )
    # Subagents are printed under their parent (the lead or a teammate).
    subagents: dict[str, list[MateTree]] = {}
    for mate in tree.teammates:
        if mate.role == "subagent":
            subagents.setdefault(mate.parent, []).append(mate)
    shown = {m.name for m in top} | ({"team-lead"} if tree.lead else set())
    if tree.lead:
        print(f"├─ team-lead {tree.lead.pid}  cpu {tree.lead.cpu_percent:.0f}%  rss {mib(tree.lead.rss)} MiB")
        for sub in subagents.get("team-lead", []):
            _print_mate(sub, "│   ")
    threads = [m for m in listed if m.backend == "in-process"]
    for mate in listed:
        if mate.backend != "in-process":
            _print_mate(mate, "")
            for sub in subagents.get(mate.name, []):
                _print_mate(sub, "│   ")
    _print_hosts(tree, threads, subagents)
    for mate in tree.teammates:
        if mate.role == "subagent" and mate.parent not in shown:
            _print_mate(mate, "")
    if hidden:
        rest = busy.mates_line(busy.mates_first(top)[len(listed) :], more=True)
        print(f"└─ … {rest} ('agentteams ps {tree.team} --all' shows every row)")
    if failed:
        print(failed.lstrip("\n"))


def _print_hosts(tree: TeamTree, threads: list[MateTree], subagents: dict[str, list[MateTree]]) -> None:
    """The team's in-process host (one per supervisor), its teammates (those the row budget
    shows) under it as its threads."""
    # Those running in it now: a teammate that failed or exited has no thread.
    count = sum(1 for m in tree.teammates if m.backend == "in-process" and m.role != "subagent" and m.pid)
    threads_of = "1 teammate as its thread" if count == 1 else f"{count} teammates as its threads"
    for host in tree.hosts:
        print(
            f"├─ in-process host {host.pid}  cpu {host.cpu_percent:.0f}%  rss {mib(host.rss)} MiB  "
            f"uss {mib(host.uss)} MiB  up {host.uptime:.0f}s  {threads_of}"
        )
    for mate in threads:
        if tree.hosts:
            _print_thread(mate)
        else:  # no host running (between two): their state alone
            _print_mate(mate, "")
        for sub in subagents.get(mate.name, []):
            _print_mate(sub, "│   │   " if tree.hosts else "│   ")


def _print_thread(mate: MateTree) -> None:
    thread = mate.thread
    task = f"#{mate.task.id} {mate.task.subject}" if mate.task else ""
    where = f"thread {thread.tid} {thread.name}" if thread else "thread -"
    cpu = f"cpu {thread.cpu_seconds:.1f}s" if thread else ""
    print(f"│   ├─ {mate.name:<14} {where:<28} {mate.state:<8} {cpu}  unread {mate.unread}  {task}")


def _print_mate(mate: MateTree, indent: str) -> None:
    proc = mate.process
    task = f"#{mate.task.id} {mate.task.subject}" if mate.task else ""
    role = f" (subagent of {mate.parent})" if mate.role == "subagent" else ""
    if mate.host and mate.pid is None:  # another host's teammate: no process to show here
        print(
            f"{indent}├─ {mate.name:<14} {'-':>7}  {mate.state:<8} on host {mate.host}  unread {mate.unread}  {task}"
        )
        return
    role += f"  on {mate.host}" if mate.host else ""
    print(
        f"{indent}├─ {mate.name:<14} {mate.pid or '-':>7}  {mate.state:<8} cpu {proc.cpu_percent if proc else 0:>3.0f}%  "
        f"rss {mib(proc.rss if proc else None):>3} MiB  uss {mib(proc.uss if proc else None):>3} MiB  "
        f"up {proc.uptime if proc else 0:>5.0f}s  unread {mate.unread}  {task}{role}"
    )
    for child in mate.children:
        print(
            f"│   {indent}{'    ' * (child.depth - 1)}└─ {child.pid:>7}  cpu {child.cpu_percent:>3.0f}%  {child.cmdline[:80]}"
        )


def print_snapshot(snap: PsReport, rows: int | None = busy.DEFAULT_ROWS) -> None:
    for tree in snap.teams:
        print_tree(tree, rows)
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
