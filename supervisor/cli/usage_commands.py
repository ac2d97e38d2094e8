"""The commands about what a team's model calls cost: ``usage`` and ``budget`` (and the
``--budget-*`` options of ``up`` and ``spawn``)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from ipc import operations as io
from ipc.paths import normalise_agent_name
from ipc.usage import set_budget, spent
from supervisor.cli.output import emit, open_team
from supervisor.client import operations as ops
from supervisor.client.team import Team


def set_budget_from(args: argparse.Namespace, team: Team, teammate: str | None = None) -> None:
    if args.budget_tokens is not None or args.budget_usd is not None:
        team.set_budget(args.budget_tokens, args.budget_usd, teammate)


@contextlib.contextmanager
def budget_while_spawning(args: argparse.Namespace, team: Team, name: str | None) -> Iterator[None]:
    """The budget of teammate ``name`` about to start, written before its first request; a
    spawn that fails takes it back (what that name had before, if anything, is put back)."""
    if name is None or (args.budget_tokens is None and args.budget_usd is None):
        yield
        return
    agent = normalise_agent_name(name)
    before = team.budget().agents.get(agent)
    team.set_budget(args.budget_tokens, args.budget_usd, agent, spawning=True)
    try:
        yield
    except BaseException:
        set_budget(team.paths, agent, before)
        raise


def cmd_budget(args: argparse.Namespace) -> int:
    team = open_team(args)
    if args.budget_tokens is not None or args.budget_usd is not None:
        team.set_budget(args.budget_tokens, args.budget_usd, args.teammate)
    elif args.teammate is not None:  # shown for a name that is no member, it reads as that one's budget
        team.store.require_member(args.teammate)
    budget = team.budget()
    limits = [("team", budget.team), *sorted(budget.agents.items())]
    emit(
        args,
        budget,
        "\n".join(
            f"{who}: {f'{lim.tokens:,} tokens' if lim.tokens else 'no token limit'}, "
            f"{f'${lim.usd:g}' if lim.usd else 'no dollar limit'}"
            for who, lim in limits
        ),
    )
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    usage = ops.usage(open_team(args), io.NoInput())

    def show() -> None:
        for row in usage.agents:
            print(f"{row.agent:<16} {row.model:<28} {spent(row.tokens, row.usd)}")
        print(f"{'total':<16} {'':<28} {spent(usage.tokens, usage.usd)}")
        if usage.unpriced_models:
            print(f"no price for {', '.join(usage.unpriced_models)}: set AGENTTEAMS_PRICES to count them")

    emit(args, usage, show if usage.agents else f"team {usage.team} has made no model calls")
    return 0
