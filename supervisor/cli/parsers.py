"""The parser's skeleton and the parsers of ``send`` and ``task``, on the standard library
alone: the quick door (:mod:`supervisor.cli.quick`) parses with these before anything heavy
is imported, and the full command line (:func:`supervisor.cli.main.build_parser`) builds
the same ones, so both read a command line alike and refuse it with the same line."""

from __future__ import annotations

import argparse
import gettext
import os
import sys
from collections.abc import Callable

from supervisor.cli import exits

TYPE_CHECKING = False  # not typing's: importing typing is a good share of the quick path's start-up
if TYPE_CHECKING:
    from typing import Any, NoReturn

LEAD_NAME = "team-lead"  # ipc.schemas.LEAD_NAME, not imported here (a test holds them equal)
DEFAULT_ROWS = 40  # supervisor.client.busy.DEFAULT_ROWS, likewise


_columns: list[int] = []


def columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` gives it, without importing
    shutil (and the compression modules it imports), which every parser's first argument
    would otherwise cost; asked once (every argument asks)."""
    if not _columns:
        _columns.append(_ask_columns())
    return _columns[0]


def _ask_columns() -> int:
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        width = 0
    if width <= 0:
        try:
            width = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            width = 0
    return width or 80


class Formatter(argparse.HelpFormatter):
    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ):
        super().__init__(prog, indent_increment, max_help_position, columns() - 2 if width is None else width)


class RawFormatter(Formatter, argparse.RawDescriptionHelpFormatter):
    pass


class Parser(argparse.ArgumentParser):
    # The innermost (sub)command's parser that read arguments: the top one reports the
    # arguments no parser knew, and they belong to that command's help, not the top's.
    innermost: Parser | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        Parser.innermost = self
        return super().parse_known_args(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: scripts read the last line of stderr.
        about = self
        if message.startswith("unrecognized arguments") and Parser.innermost is not None:
            about = Parser.innermost
        self.exit(exits.USAGE, f"agentteams: error: {message} (see '{about.prog} --help')\n")


class Skipped:
    """A parser left unbuilt (see build_parser): every call does nothing and returns itself."""

    def __getattr__(self, name: str) -> Any:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


class Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked (importing
    importlib.metadata would cost every command's start-up)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("agentteams")
        except PackageNotFoundError:
            found = "unknown (not installed: run 'make install')"
        print(f"agentteams {found}")  # on stdout, as argparse's own version action prints it
        parser.exit(0)


SKIPPED = Skipped()
Command = Callable[..., argparse.ArgumentParser]


def global_options(parser: argparse.ArgumentParser, *, inherited: bool) -> None:
    # Given before the subcommand they land on the top parser; after it, on the
    # subcommand's. SUPPRESS on the subcommands keeps one from undoing the other.
    default: Any = argparse.SUPPRESS if inherited else None
    parser.add_argument(
        "--root", default=default, help="state root (default: $AGENTTEAMS_HOME or ~/.agentteams)"
    )
    parser.add_argument(
        "--engine",
        default=default,
        help="a team on NATS JetStream at nats://HOST:PORT (default: $AGENTTEAMS_ENGINE, or what the root remembers)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if inherited else False,
        help="machine-readable output on stdout",
    )


def catalog_once() -> None:
    """argparse asks gettext for its message catalog at every message it formats, a search of
    locale directories each time (and an exception, where there is none): half the time a
    quick command spends building its parser. The catalog is looked up once here and argparse
    given it: the same catalog, or none, so the same text."""
    if getattr(argparse, "_catalog_once", False):
        return
    domain = gettext.textdomain()
    catalog = gettext.translation(domain, gettext.bindtextdomain(domain), fallback=True)
    vars(argparse).update(_=catalog.gettext, ngettext=catalog.ngettext, _catalog_once=True)


def skeleton(only: str | None) -> tuple[Parser, Any, Command]:
    """The top parser, its subcommands, and ``cmd(parent, name, help, epilog)``, which adds a
    subcommand's parser, or leaves it unbuilt when ``only`` names another command."""
    catalog_once()
    p = Parser(prog="agentteams", description="A local runtime for teams of AI agents.")
    global_options(p, inherited=False)
    p.add_argument("--version", action=Version, help="print the installed version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    def cmd(parent: Any, name: str, help: str, epilog: str | None = None) -> argparse.ArgumentParser:
        if parent is SKIPPED or (parent is sub and only is not None and only != name):
            return SKIPPED  # type: ignore[return-value]
        parser: argparse.ArgumentParser = parent.add_parser(
            name,
            help=help,
            description=help,
            epilog=epilog,
            formatter_class=RawFormatter if epilog else Formatter,
        )
        global_options(parser, inherited=True)
        return parser

    return p, sub, cmd


def rows_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--rows",
        type=int,
        default=DEFAULT_ROWS,
        metavar="N",
        help=f"past N {what}: a count line, the busy ones first, the rest counted (0: every row)",
    )


def named(value: str) -> str:
    """A member's name that must be given: '' (an unset variable in a script) would mean the
    lead to the operation, which takes an empty name for "yourself"."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the name is empty; give a member's name")
    return value


def add_send(cmd: Command, sub: Any) -> None:
    send = cmd(sub, "send", "send a message (RECIPIENT '*' broadcasts)")
    send.add_argument("team")
    send.add_argument("recipient")
    send.add_argument("text", help="the text; '-' reads standard input, '@FILE' reads a file")
    send.add_argument("--summary", required=True)
    send.add_argument("--from", dest="sender", default=LEAD_NAME)


def add_task(cmd: Command, sub: Any, only: str | None = None) -> None:
    """``task`` and its subcommands, or with ``only`` just that one's parser."""
    task = cmd(sub, "task", "create, get, update, list, claim or delete tasks")
    task_sub = task.add_subparsers(dest="task_command", required=True, parser_class=Parser)

    def sub_cmd(parent: Any, name: str, help: str) -> argparse.ArgumentParser:
        return cmd(parent, name, help) if only in (None, name) else SKIPPED  # type: ignore[return-value]

    t_create = sub_cmd(task_sub, "create", "create a task")
    t_create.add_argument("team")
    t_create.add_argument("subject")
    t_create.add_argument("--description", default="")
    t_create.add_argument(
        "--command", dest="shell", default=None, help="shell command an offline teammate runs"
    )
    t_create.add_argument(
        "--subagent",
        default=None,
        metavar="PROMPT",
        help="an offline teammate gives the task to a subagent with this prompt (it runs the `backticked` commands)",
    )
    t_create.add_argument("--blocked-by", nargs="*", default=[])
    t_create.add_argument("--active-form", default=None)
    t_create.add_argument(
        "--owner", default=None, help="a member who owns it from the start (told in its inbox)"
    )
    t_get = sub_cmd(task_sub, "get", "show a task")
    t_get.add_argument("team")
    t_get.add_argument("id")
    t_update = sub_cmd(task_sub, "update", "update a task (--status pending retries a failed one)")
    t_update.add_argument("team")
    t_update.add_argument("id")
    t_update.add_argument("--status", choices=("pending", "in_progress", "completed", "deleted"))
    t_update.add_argument("--subject")
    t_update.add_argument("--description")
    t_update.add_argument("--owner")
    t_update.add_argument("--add-blocks", nargs="*", metavar="ID", help="tasks that wait for this one")
    t_update.add_argument("--add-blocked-by", nargs="*", metavar="ID", help="tasks this one waits for")
    t_update.add_argument("--remove-blocks", nargs="*", metavar="ID", help="tasks that no longer wait for it")
    t_update.add_argument("--remove-blocked-by", nargs="*", metavar="ID", help="tasks it no longer waits for")
    t_update.add_argument(
        "--command",
        dest="shell",
        default=None,
        help="the shell command an offline teammate runs ('' removes it)",
    )
    t_update.add_argument(
        "--subagent",
        default=None,
        metavar="PROMPT",
        help="the prompt of the subagent an offline teammate gives the task to ('' removes it)",
    )
    t_list = sub_cmd(task_sub, "list", "list tasks")
    t_list.add_argument("team")
    t_list.add_argument("--all", action="store_true", help="also Claude Code's hidden teammate tasks")
    rows_option(t_list, "tasks")
    t_claim = sub_cmd(task_sub, "claim", "claim a task for an agent")
    t_claim.add_argument("team")
    t_claim.add_argument("id")
    t_claim.add_argument("agent", type=named)
    t_claim.add_argument("--check-busy", action="store_true")
    t_delete = sub_cmd(task_sub, "delete", "delete a task")
    t_delete.add_argument("team")
    t_delete.add_argument("id")


def quick_parser(command: str, task_command: str | None = None) -> Parser:
    """The whole command line's parser with only ``command`` (send or task, and of task's
    only ``task_command``) built, as :func:`supervisor.cli.main.build_parser` builds them."""
    p, sub, cmd = skeleton(command)
    if command == "send":
        add_send(cmd, sub)
    else:
        add_task(cmd, sub, task_command)
    return p


def task_metadata(args: Any, *, update: bool = False) -> dict[str, str | None] | None:
    """What ``task create``'s (or ``update``'s) --command and --subagent put in the task's
    metadata (None: nothing). In an update, '' removes the key (None deletes it)."""
    given = (("command", args.shell), ("subagent", args.subagent))
    if update:
        return {key: value or None for key, value in given if value is not None} or None
    return {key: value for key, value in given if value} or None


def created_line(task_id: str, subject: str) -> str:
    """What ``task create`` prints (both paths)."""
    return f"created task #{task_id}: {subject}"
