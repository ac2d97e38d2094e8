"""The parser's building blocks beyond the skeleton (:mod:`supervisor.cli.parsers`): options
derived from a Struct's fields, budgets, ``--agents``."""

from __future__ import annotations

import argparse
import json
import typing
from typing import Any

import msgspec

from ipc.launch import SupervisorOptions


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
