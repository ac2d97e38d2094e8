"""The parser's building blocks: one-line usage errors, the options every command takes,
and options derived from a Struct's fields."""

from __future__ import annotations

import argparse
import json
import typing
from typing import Any, NoReturn

import msgspec

from ipc.launch import SupervisorOptions
from supervisor.cli import exits


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: scripts read the last line of stderr.
        self.exit(exits.USAGE, f"agentteams: error: {message} (see '{self.prog} --help')\n")


class Skipped:
    """A parser left unbuilt (see build_parser): every call does nothing and returns itself."""

    def __getattr__(self, name: str) -> Any:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


SKIPPED = Skipped()


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


def struct_arguments(
    parser: argparse.ArgumentParser, kind: type[msgspec.Struct], help: dict[str, str]
) -> None:
    """One option per field of ``kind``: its type, default and choices come from the Struct."""
    if not isinstance(parser, argparse.ArgumentParser):  # a parser left unbuilt
        return
    from ipc.options import PERMISSION_MODES

    hints = typing.get_type_hints(kind)
    for field in msgspec.structs.fields(kind):
        flag = "--" + field.name.replace("_", "-")
        hint = hints[field.name]
        if hint is bool:
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=field.default, help=help.get(field.name)
            )
            continue
        choices = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None
        if field.name.endswith("permission_mode"):
            choices = PERMISSION_MODES
        convert: Any = type(field.default) if field.default is not msgspec.NODEFAULT else str
        if field.name == "agents":
            convert = agents_argument
        parser.add_argument(
            flag, type=convert, choices=choices, default=field.default, help=help.get(field.name)
        )


def budget_arguments(parser: argparse.ArgumentParser, whom: str) -> None:
    parser.add_argument(
        "--budget-tokens", type=int, default=None, help=f"stop {whom}'s model calls at this many tokens"
    )
    parser.add_argument(
        "--budget-usd", type=float, default=None, help=f"stop {whom}'s model calls at this cost in USD"
    )


def agents_argument(text: str) -> str:
    """``--agents JSON``, checked as the command line is read: a bad one is a usage error."""
    from ipc.agents import json_definitions

    try:
        json_definitions(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def agents_option(parser: argparse.ArgumentParser) -> None:
    """``--agents JSON`` of a command that starts a team's supervisor (lead, chat)."""
    parser.add_argument(
        "--agents", type=agents_argument, default="", metavar="JSON", help=SupervisorOptions.HELP["agents"]
    )


def json_value(text: str) -> Any:
    """An option's JSON (a permission update): text that is not JSON is a usage error; what
    the value must be, the operation says (as it does at every door)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
