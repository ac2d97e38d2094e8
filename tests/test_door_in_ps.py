"""``ps`` shows the team's resident door, while its program runs, as a row under the
supervisor (text and JSON), beside the fork server, outside the teammates' row budget."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

from ipc.process_tree import MateTree
from supervisor.cli import ps_view
from supervisor.cli.main import main as full_main
from tests.runtime_helpers import running_team, wait_for


def ps(root: Path, *argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert full_main(["--root", str(root), "ps", "t", *argv]) == 0
    return out.getvalue()


def test_ps_shows_the_resident_door_under_the_supervisor_in_text_and_json(root: Path) -> None:
    with running_team(root) as team:
        assert team.status().door is None and "resident door" not in ps(root)  # not started yet
        team.store.add_member("alice", prompt="x", cwd=str(root))  # a member, never started
        sent = subprocess.run(
            [
                sys.executable,
                "-m",
                "supervisor.cli",
                "--root",
                str(root),
                "send",
                "t",
                "alice",
                "hi",
                "--summary",
                "s",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )  # through the door: its program starts
        assert sent.returncode == 0, sent.stderr
        door = wait_for(lambda: team.status().door)

        (tree,) = json.loads(ps(root, "--json"))["teams"]
        assert tree["door"]["pid"] == door and tree["door"]["ppid"] == tree["supervisor"]["pid"]
        lines = ps(root).splitlines()
        assert lines[0].startswith(f"t: supervisor {tree['supervisor']['pid']}"), lines
        (row,) = [line for line in lines if "resident door" in line]
        assert (
            row[:2] in ("├─", "└─")
            and row[2:].startswith(f" resident door {door}  cpu ")
            and " MiB  up " in row
        ), lines

        live = team.ps()
        live.teammates = [
            MateTree(name=f"m{i}", state="idle", pid=None, restarts=0, unread=0) for i in range(3)
        ]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ps_view.print_tree(live, rows=1)  # the door is not a teammate: the budget is theirs
        shown = out.getvalue()
        assert f"resident door {door}" in shown and "2 more teammates" in shown, shown
        assert sum(f"m{i} " in shown for i in range(3)) == 1, shown


def test_memory_under_ten_mib_keeps_a_decimal_and_unknown_is_not_zero() -> None:
    from supervisor.cli.ps_view import mib

    # A forked teammate's unique memory is often under 1 MiB: it must not read as 0.
    assert [mib(None), mib(0), mib(800 * 1024), mib(9 * 2**20 + 2**19), mib(12 * 2**20)] == [
        "?",
        "0.0",
        "0.8",
        "9.5",
        "12",
    ]
