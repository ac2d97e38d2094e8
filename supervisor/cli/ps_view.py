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
    out: list[str] = []
    _tree_lines(out, tree, rows)
    print("\n".join(close_branches("\n".join(out).splitlines())))


def close_branches(lines: list[str]) -> list[str]:
    """Each branch's last row drawn with └─, the others with ├─, and the │ that led past a
    last row blanked below it."""
    lines = list(lines)
    cols = [_connector(line) for line in lines]
    for i, col in enumerate(cols):
        if col is None:
            continue
        end = next(
            (j for j in range(i + 1, len(lines)) if (c := cols[j]) is not None and c <= col), len(lines)
        )
        last = end == len(lines) or cols[end] != col
        lines[i] = lines[i][:col] + ("└" if last else "├") + lines[i][col + 1 :]
        if not last:
            continue
        for j in range(i + 1, end):
            if lines[j][col : col + 1] == "│":
                lines[j] = lines[j][:col] + " " + lines[j][col + 1 :]
    return lines


def _connector(line: str) -> int | None:
    found = [at for at in (line.find("├─"), line.find("└─")) if at >= 0]
    return min(found) if found else None


def _tree_lines(out: list[str], tree: TeamTree, rows: int | None) -> None:
    sup = tree.supervisor
    failed = "".join(f"\n  failed task #{t.id} {t.subject}" for t in tree.failed_tasks)
    usage = (
        f"\n  usage {spent(tree.usage.tokens, tree.usage.usd)}" if tree.usage and tree.usage.agents else ""
    )
    where = f" on {tree.host}" if tree.host else ""
    if sup is None:
        out.append(f"{tree.team}: not up{where}")
        for mate in tree.teammates:
            _print_mate(out, mate, "")
        out.append(f"{failed}{usage}".lstrip("\n"))  # below its members, as for a team that is up
        return
    top = [m for m in tree.teammates if m.role != "subagent"]
    listed, hidden = busy.budget(busy.mates_first(top) if rows and len(top) > rows else top, rows)
    out.append(
        f"{tree.team}{where}: supervisor {sup.pid}  cpu {sup.cpu_percent:.0f}%  rss {mib(sup.rss)} MiB  up {sup.uptime:.0f}s  wake {tree.wake}"
        + usage
    )
    if hidden:
        out.append(f"│  {busy.mates_line(top)}")
    if tree.forkserver:
        out.append(f"├─ fork server {tree.forkserver.pid}  uss {mib(tree.forkserver.uss)} MiB")
    if tree.door:
        door = tree.door
        out.append(
            f"├─ resident door {door.pid}  cpu {door.cpu_percent:.0f}%  rss {mib(door.rss)} MiB  up {door.uptime:.0f}s"
        )
    # Subagents are printed under their parent (the lead or a teammate).
    subagents: dict[str, list[MateTree]] = {}
    for mate in tree.teammates:
        if mate.role == "subagent":
            subagents.setdefault(mate.parent, []).append(mate)
    shown = {m.name for m in top} | ({"team-lead"} if tree.lead else set())
    if tree.lead:
        out.append(
            f"├─ team-lead {tree.lead.pid}  cpu {tree.lead.cpu_percent:.0f}%  rss {mib(tree.lead.rss)} MiB"
        )
        for sub in subagents.get("team-lead", []):
            _print_mate(out, sub, "│   ")
    threads = [m for m in listed if m.backend == "in-process"]
    for mate in listed:
        if mate.backend != "in-process":
            _print_mate(out, mate, "")
            for sub in subagents.get(mate.name, []):
                _print_mate(out, sub, "│   ")
    _print_hosts(out, tree, threads, subagents)
    for mate in tree.teammates:
        if mate.role == "subagent" and mate.parent not in shown:
            _print_mate(out, mate, "")
    if hidden:
        rest = busy.mates_line(busy.mates_first(top)[len(listed) :], more=True)
        out.append(f"└─ … {rest} ('agentteams ps {tree.team} --all' shows every row)")
    if failed:
        out.append(failed.lstrip("\n"))


def _print_hosts(
    out: list[str], tree: TeamTree, threads: list[MateTree], subagents: dict[str, list[MateTree]]
) -> None:
    """The team's in-process host (one per supervisor), its teammates (those the row budget
    shows) under it as its threads."""
    # Those running in it now: a teammate that failed or exited has no thread.
    count = sum(1 for m in tree.teammates if m.backend == "in-process" and m.role != "subagent" and m.pid)
    threads_of = "1 teammate as its thread" if count == 1 else f"{count} teammates as its threads"
    for host in tree.hosts:
        out.append(
            f"├─ in-process host {host.pid}  cpu {host.cpu_percent:.0f}%  rss {mib(host.rss)} MiB  "
            f"uss {mib(host.uss)} MiB  up {host.uptime:.0f}s  {threads_of}"
        )
    for mate in threads:
        if tree.hosts:
            _print_thread(out, mate)
        else:  # no host running (between two): their state alone
            _print_mate(out, mate, "")
        for sub in subagents.get(mate.name, []):
            _print_mate(out, sub, "│   │   " if tree.hosts else "│   ")


def _print_thread(out: list[str], mate: MateTree) -> None:
    thread = mate.thread
    task = f"#{mate.task.id} {mate.task.subject}" if mate.task else ""
    where = f"thread {thread.tid} {thread.name}" if thread else "thread -"
    cpu = f"cpu {thread.cpu_seconds:.1f}s" if thread else ""
    out.append(f"│   ├─ {mate.name:<14} {where:<28} {mate.state:<8} {cpu}  unread {mate.unread}  {task}")


def _print_mate(out: list[str], mate: MateTree, indent: str) -> None:
    proc = mate.process
    task = f"#{mate.task.id} {mate.task.subject}" if mate.task else ""
    role = f" (subagent of {mate.parent})" if mate.role == "subagent" else ""
    if mate.pid is None and mate.process is None:  # another host's, or not running: no process to show
        on_host = f"on host {mate.host}  " if mate.host else ""
        out.append(
            f"{indent}├─ {mate.name:<14} {'-':>7}  {mate.state:<8} {on_host}unread {mate.unread}  {task}{role}"
        )
        return
    role += f"  on {mate.host}" if mate.host else ""
    out.append(
        f"{indent}├─ {mate.name:<14} {mate.pid or '-':>7}  {mate.state:<8} cpu {proc.cpu_percent if proc else 0:>3.0f}%  "
        f"rss {mib(proc.rss if proc else None):>3} MiB  uss {mib(proc.uss if proc else None):>3} MiB  "
        f"up {proc.uptime if proc else 0:>5.0f}s  unread {mate.unread}  {task}{role}"
    )
    for child in mate.children:
        out.append(
            f"│   {indent}{'    ' * (child.depth - 1)}└─ {child.pid:>7}  cpu {child.cpu_percent:>3.0f}%  {child.cmdline[:80]}"
        )


def print_snapshot(snap: PsReport, rows: int | None = busy.DEFAULT_ROWS) -> None:
    for tree in snap.teams:
        print_tree(tree, rows)
    for cc in snap.claude_code:
        if cc.live is None and cc.lead_pid is not None:
            state = "its lead ran in another pid namespace: live or not cannot be told here"
        elif cc.live is None:
            state = "lead not recorded (Claude Code 2.1.38): live or not cannot be told"
        else:
            state = "live" if cc.live else "stale (its lead session is gone)"
        print(
            f"{cc.team}: Claude Code team, {state}, lead pid {cc.lead_pid or '-'}, members {', '.join(cc.members)}"
        )
        rows_of = [
            f"├─ claude-code {p.agent_id}\tpid {p.pid}\t{'member' if p.member else 'not in config'}"
            for p in cc.processes
        ]
        for line in close_branches(rows_of):
            print(line)
    if not snap.teams and not snap.claude_code:
        print("no teams")
