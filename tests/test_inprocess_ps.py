"""``ps`` shows in-process teammates as what they are: threads of their host process, each
with its thread's native id and kernel name, under the host's row (text and JSON), within
ps's row budget."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import psutil
import pytest

from supervisor.cli import ps_view
from tests.runtime_helpers import cli, running_team, wait_for


def test_ps_shows_in_process_teammates_as_threads_under_their_host(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        for name in ("ann", "ben"):
            team.spawn(name, prompt="Wait.")
        team.spawn("pat", prompt="Wait.", backend="process")
        host = team.status().teammate("ann").host_pid  # type: ignore[union-attr]
        assert host is not None and psutil.Process(host).name() == "at-host"
        wait_for(lambda: all(m.thread for m in team.status().teammates if m.backend == "in-process"))

        tree = team.ps()
        assert [h.pid for h in tree.hosts] == [host]
        threads = {t.id for t in psutil.Process(host).threads()}
        mates = {m.name: m for m in tree.teammates}
        tids = {}
        for name in ("ann", "ben"):
            thread = mates[name].thread
            assert thread is not None and thread.host_pid == host and thread.tid in threads
            assert thread.name == f"at:{name}" and mates[name].process is None
            tids[name] = thread.tid
        assert mates["pat"].thread is None and mates["pat"].process is not None
        data = json.loads(json.dumps(msgspec.to_builtins(tree)))  # what `ps --json` prints
        assert [h["pid"] for h in data["hosts"]] == [host]
        assert {m["name"]: m["thread"]["tid"] for m in data["teammates"] if m["thread"]} == tids

        ps_view.print_tree(tree)
        text = capsys.readouterr().out.splitlines()
        row = next(i for i, line in enumerate(text) if f"in-process host {host}" in line)
        assert "2 teammates as its threads" in text[row], text
        for i, name in enumerate(("ann", "ben")):  # under it, one row each
            assert f"{name} " in text[row + 1 + i] and f"thread {tids[name]} at:{name}" in text[row + 1 + i]
        assert text[row + 2].startswith(("│   └─ ben", "    └─ ben")), text  # the host's last thread

        ps_view.print_tree(tree, rows=2)  # the row budget counts them as teammates
        budget = capsys.readouterr().out
        assert budget.count(" thread ") + budget.count("pat ") == 2, budget
        assert f"in-process host {host}" in budget and "1 more teammate:" in budget, budget

        # Ben failed for good: a member still, with no thread. The host's row counts those it runs.
        gone = [
            msgspec.structs.replace(m, state="failed", pid=None, thread=None) if m.name == "ben" else m
            for m in tree.teammates
        ]
        ps_view.print_tree(msgspec.structs.replace(tree, teammates=gone))
        assert "1 teammate as its thread" in capsys.readouterr().out


def test_status_names_an_in_process_teammates_host_and_thread(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Wait.")
        wait_for(lambda: team.status().teammate("ann").thread)  # type: ignore[union-attr]
        ann = team.status().teammate("ann")
        assert ann is not None
        # README: `status` shows the number it has in place of a pid, with host_pid and thread.
        line = cli(root, "status", team.name).stdout.splitlines()[0]
        assert line.endswith(f"pid {ann.pid}\trestarts 0\thost {ann.host_pid} thread {ann.thread}"), line
