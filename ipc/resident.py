"""The resident door's wire: one JSON line each way over a Unix stream socket in the team's
runtime directory. A command-line process that imports nothing but the standard library
writes the request and reads the reply (``supervisor.cli.quick``); the door program, which
holds the team open with everything imported, runs the request through the table of
operations. The command line writes these shapes by hand; a test holds both sides to them.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

SOCKET_NAME = "door.sock"  # in the runtime directory (0700), mode 0600
VERSION = 1
MAX_REQUEST = 4 * 1024 * 1024  # bytes of one request line; a longer one is refused
# The operations the door serves: what a script calls in a loop, one process each.
SERVED = ("send_message", "task_create")


class Request(Struct, kw_only=True, forbid_unknown_fields=True):
    v: int
    op: str  # a name in the table (supervisor.client.operations.TABLE), one of SERVED
    args: dict[str, Any]  # the operation's input fields, as the command line gives them
    actor: str  # who acts: the team's lead side unless ``send --from`` says otherwise
    root: str  # the state root and team the caller means: a door serves its own team only
    team: str


class Reply(Struct, kw_only=True, omit_defaults=True):
    ok: bool
    result: Any = None  # the operation's output, as its --json form prints it
    error: str = ""  # one line, as the command line prints it after "agentteams: error: "
    exit: int = 0  # the command line's exit code for ``error`` (supervisor.cli.exits)
    fallback: str = ""  # not served here, nothing done: the caller takes the full path
