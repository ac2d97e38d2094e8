"""The `agentteams` command line: a door onto the client side (:mod:`supervisor.cli.main`).

Run as a program, ``send`` and ``task create`` first try the team's resident door
(:mod:`supervisor.cli.quick`): this module and that path import the standard library only."""

from __future__ import annotations

import sys


def _main(argv: list[str] | None = None) -> int:
    if argv is None:
        from supervisor.cli import quick
        from supervisor.cli.homes import exit_now

        try:
            code = quick.attempt(sys.argv[1:])
        except KeyboardInterrupt:
            print("agentteams: interrupted", file=sys.stderr)
            code = 130  # supervisor.cli.exits.INTERRUPTED
        if code is not None:
            exit_now(code)
            return code
    import importlib

    full = importlib.import_module("supervisor.cli.main")
    globals()["main"] = _main  # importing the module `main` made this package's `main` that module
    return int(full.main(argv))


main = _main
__all__ = ["main"]
