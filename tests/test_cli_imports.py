"""A quick command imports only what it needs: `send` and `task create` load neither the
model SDK nor rich, psutil, the MCP SDK, NATS or the web stack; and every command still
has a home that runs it, whichever way the command line is written."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.cli.homes import HOMES, command_of

main_module = importlib.import_module("supervisor.cli.main")

# What a message or a task does not need: each costs start-up time (`-X importtime`).
HEAVY = ("anthropic", "rich", "psutil", "mcp", "nats", "starlette", "uvicorn", "yaml", "httpx", "pydantic")


def imported_by(root: Path, *argv: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules a whole `agentteams ...` process imported (``-X importtime``'s list)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "supervisor.cli", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = {
        line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    return names, done


@pytest.mark.parametrize(
    "argv",
    [
        ("send", "demo", "bob", "hello", "--summary", "hi"),
        ("task", "create", "demo", "a task", "--json"),
    ],
)
def test_a_quick_command_imports_nothing_heavy(root: Path, team: str, argv: tuple[str, ...]) -> None:
    names, done = imported_by(root, *argv)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "supervisor.client.operations" in names and "zmq" in names  # the table, and the ring
    heavy = sorted(n for n in names if n.split(".")[0] in HEAVY)
    assert heavy == [], heavy
    others = {"supervisor.cli.commands", "supervisor.cli.jobs", "supervisor.client.team"}
    assert not others & names  # nor the other commands' modules, nor the whole Python API


def test_the_work_is_done(root: Path, team: str) -> None:
    names, done = imported_by(root, "task", "create", "demo", "a task", "--json")
    assert json.loads(done.stdout)["subject"] == "a task"
    _, sent = imported_by(root, "send", "demo", "bob", "hello", "--summary", "hi", "--json")
    assert sent.returncode == 0, sent.stderr
    inbox = json.loads((root / "teams" / "demo" / "inboxes" / "bob.json").read_text())
    assert [m["text"] for m in inbox] == ["hello"]


def test_every_command_has_a_home_that_runs_it() -> None:
    parser = main_module.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) == set(HOMES)
    for name, home in HOMES.items():
        assert callable(importlib.import_module(home).COMMANDS[name]), name
        narrow = main_module.build_parser(name)
        (only,) = [a for a in narrow._actions if isinstance(a, argparse._SubParsersAction)]
        assert name in only.choices and len(only.choices) <= 2  # diff and attach come together


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["send", "t", "bob", "hi"], "send"),
        (["--root", "send", "task", "list", "t"], "task"),  # a root called "send"
        (["--root=/x", "--json", "task", "list", "t"], "task"),
        (["--engine", "nats://h:1", "ps"], "ps"),
        (["--help"], None),
        (["-h", "send"], None),  # help before the command: every command listed
        (["nosuch", "x"], None),  # argparse's own message, naming the commands
        ([], None),
    ],
)
def test_the_command_is_found_before_parsing(argv: list[str], command: str | None) -> None:
    assert command_of(argv) == command


def test_a_mistake_in_a_narrow_parser_reads_as_before(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "supervisor.cli", "send", "t", "bob"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("agentteams: error: the following arguments are required: text, --summary")
    unknown = subprocess.run(
        [sys.executable, "-m", "supervisor.cli", "sned"], capture_output=True, text=True, timeout=60
    )
    assert (
        unknown.returncode == 2 and "invalid choice: 'sned'" in unknown.stderr and "'send'" in unknown.stderr
    )
