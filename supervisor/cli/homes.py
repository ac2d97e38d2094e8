"""Which module runs each command. A command imports only its own module, so that a quick
one (``send``, ``task``) pays for none of the others' imports: the model SDK, rich, psutil,
the MCP SDK, NATS. A process that sends one message is mostly interpreter start-up and
imports; this keeps the imports to what sending needs."""

from __future__ import annotations

import os
import sys


def command_of(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (the first word that is neither an option nor a global
    option's value), or None: then every command's parser is built, as for ``--help``."""
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help"):
            return None
        if word in _VALUED:
            next(words, None)
        elif not word.startswith("-"):
            return word if word in HOMES else None
    return None


_VALUED = ("--root", "--engine")  # the global options that take a value
_COMMANDS, _JOBS = "supervisor.cli.commands", "supervisor.cli.jobs"
# The table's views with no other command: their parsers are built by look_commands.
VIEWS = ("members", "summary", "requests", "messages", "transcript", "wait")
# Where each command is run from: only its module is imported, so that a quick command
# (send, task) pays for none of the others' imports (the model SDK, rich, psutil, MCP, NATS).
HOMES: dict[str, str] = {
    **dict.fromkeys(("send", "task"), "supervisor.cli.send_commands"),
    **dict.fromkeys(("demo", "run", "lead", "chat", "bench"), _JOBS),
    **dict.fromkeys(("diff", "attach"), "supervisor.cli.backend_commands"),
    **dict.fromkeys(VIEWS, "supervisor.cli.look_commands"),
    "engine": "supervisor.cli.engine_commands",
    "mcp": "supervisor.mcp.command",
    "serve": "supervisor.web.command",
    **dict.fromkeys(
        ("team", "up", "resume", "down", "status", "spawn", "restart", "mode", "push", "shutdown", "inbox"),
        _COMMANDS,
    ),
    **dict.fromkeys(
        ("ps", "watch", "logs", "usage", "budget", "approve", "deny", "background", "permit"), _COMMANDS
    ),
}
# Commands that close what they open and then end the process at once, called as a program.
QUICK_EXIT = frozenset({"send", "task"})
# Commands that run until stopped: a closed terminal or a kill cleans up as Ctrl-C does.
LONG_RUNNING = frozenset({"demo", "run", "watch", "lead", "chat", "logs", "mcp", "serve", "wait"})


def exit_now(code: int) -> None:
    """End the process without the interpreter's teardown of every module it imported (a
    good share of a quick command's time): the command closed what it opened (its rings
    went out), and what it printed is flushed here."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        return  # let the normal exit report it
    storage = sys.modules.get("ipc.storage")
    if storage is not None:  # its spare files go at exit, which os._exit skips
        storage.remove_spares()
    os._exit(code)
