"""`watch` on the terminal a person has: useful at 80×24, growing into larger ones. The view is
rendered into a rich Console of the size and read back as text."""

from __future__ import annotations

from rich.console import Console

from ipc.schemas import IdleNotification, InboxMessage, Task, body_text
from supervisor.cli.view import ViewSnapshot, render
from supervisor.client.ps import MateTree, ProcInfo, TaskRef, TeamTree

LONG = "Count the words of every chapter of the very long generated book and write them down"


def proc(pid: int, cmdline: str, depth: int = 0) -> ProcInfo:
    return ProcInfo(
        pid=pid, ppid=1, name="x", status="running", cpu_percent=12.0, rss=1, uss=None, uptime=1.0,
        cmdline=cmdline, depth=depth,
    )  # fmt: skip


def busy_team(teammates: int = 6) -> ViewSnapshot:
    mates = [
        MateTree(
            name=f"worker-{i}",
            state="running" if i % 2 else "idle",
            pid=1000 + i,
            restarts=i,
            unread=1,
            task=TaskRef(id=str(i + 1), subject=LONG) if i % 2 else None,
            process=proc(1000 + i, "python -m agentproc"),
            children=[proc(2000 + i, f"bash -c 'sleep 60 && wc -w chapter-{i}.txt > count-{i}.txt'", 1)],
        )
        for i in range(teammates)
    ]
    tasks = [
        Task(
            id=str(n),
            subject=f"{LONG} #{n}",
            status="completed" if n > 20 else "in_progress" if n < 4 else "pending",
        )
        for n in range(1, 31)
    ]
    idle = [
        InboxMessage(
            from_=f"worker-{i % teammates}",
            text=body_text(
                IdleNotification(from_=f"worker-{i % teammates}", timestamp="2026-01-01T00:00:00.000Z")
            ),
            timestamp=f"2026-01-01T00:00:{i:02d}.000Z",
        )
        for i in range(10)
    ]
    reports = [
        InboxMessage(
            from_="worker-1", text=f"Completed task #{n}: {LONG}", timestamp=f"2026-01-01T00:01:0{n}.000Z"
        )
        for n in range(3)
    ]
    tree = TeamTree(
        team="book",
        root="/r",
        supervisor=proc(1, "sup"),
        forkserver=proc(2, "fs"),
        wake="zmq",
        teammates=mates,
    )
    return ViewSnapshot(tree=tree, tasks=tasks, messages=idle + reports, latency={}, tracing=False)


def shown(snap: ViewSnapshot, width: int, height: int) -> list[str]:
    console = Console(width=width, height=height, record=True, color_system=None, force_terminal=True)
    console.print(render(snap, width=width, height=height))
    return console.export_text().rstrip("\n").splitlines()


def test_at_80x24_every_teammate_and_the_task_counts_show_and_nothing_wraps() -> None:
    lines = shown(busy_team(), 80, 24)
    text = "\n".join(lines)
    assert len(lines) <= 24, text
    assert "10/30 completed" in text and "3 in progress" in text and "17 pending" in text, text
    for i in range(6):
        rows = [line for line in lines if f"worker-{i} " in line]
        assert len(rows) >= 1, text
        member = rows[0]
        assert ("running" if i % 2 else "idle") in member, text
    wrapped = [line for line in lines if "very long" in line and "…" not in line]
    assert wrapped == [], text  # long text is cut, not wrapped onto a second line


def test_idle_notifications_do_not_crowd_out_the_messages() -> None:
    text = "\n".join(shown(busy_team(), 80, 40))
    assert text.count("Completed task #") == 3, text
    assert "10 idle notifications" in text, text


def test_a_larger_terminal_shows_more_columns_and_the_tools() -> None:
    small = "\n".join(shown(busy_team(), 80, 24))
    large = "\n".join(shown(busy_team(), 140, 50))
    assert "restarts" not in small and "restarts" in large
    assert "sleep 60" not in small and "sleep 60 && wc -w chapter-1.txt" in large
    assert LONG in large  # room for the whole subject


def test_many_teammates_on_a_small_screen_are_counted_not_lost() -> None:
    lines = shown(busy_team(teammates=30), 80, 24)
    text = "\n".join(lines)
    assert len(lines) <= 24 and "10/30 completed" in text, text
    assert "more teammates" in text, text
