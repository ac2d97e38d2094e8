"""What every command prints: its result (text, or JSON with ``--json``), warnings, and the
team it names."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ipc.errors import InvalidInput

if TYPE_CHECKING:
    from supervisor.client.handle import TeamHandle
    from supervisor.client.team import Team


def emit(args: argparse.Namespace, data: Any, text: str | Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(msgspec.to_builtins(data), ensure_ascii=False, default=str))
    elif callable(text):
        text()
    else:
        print(text)


def warn(message: str) -> None:
    print(f"agentteams: warning: {message}", file=sys.stderr)


def open_team(args: argparse.Namespace, name: str | None = None) -> Team:
    from supervisor.client.team import Team  # the whole API: a quick command opens a handle

    return Team.open(name or args.team, root=args.root)


def open_handle(args: argparse.Namespace) -> TeamHandle:
    """The team's handle, all the table's operations need (NotFound for no such team)."""
    from supervisor.client.handle import TeamHandle

    team = TeamHandle(args.team, root=args.root)
    team.store.read()
    return team


def row_budget(args: argparse.Namespace) -> int:
    """How many rows a view may print (--rows; 0: every row)."""
    if args.rows < 0:
        raise InvalidInput(f"--rows {args.rows}: give 0 (every row) or more")
    return int(args.rows)
