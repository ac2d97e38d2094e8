"""What a team's models cost: tokens per agent and model, prices, and budgets.

Each agent that calls the Messages API keeps its totals beside its transcript
(``transcripts/{agent}.usage.json``, rewritten after each request, so they survive a
restart); a team's usage is the sum over those files. Prices are USD per million tokens by
model-id prefix, overridable with ``AGENTTEAMS_PRICES`` (a JSON file of the same shape).
Budgets (``budget.json`` in the team directory) cap the team, and each teammate, in tokens
or dollars; an agent checks them before each request (:mod:`ipc.budget_check`).
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

import msgspec

from ipc.errors import InvalidInput
from ipc.locks import locked
from ipc.paths import TeamPaths
from ipc.storage import atomic_write, read_settled


class Tokens(msgspec.Struct, kw_only=True):
    """One model's usage, as the Messages API reports it (``usage``), summed."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    requests: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, other: Tokens) -> None:
        for field in self.__struct_fields__:
            setattr(self, field, getattr(self, field) + getattr(other, field))


class Price(msgspec.Struct, kw_only=True):
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, tokens: Tokens) -> float:
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write * self.cache_write
        ) / 1e6


def _price(inp: float, out: float) -> Price:
    # Prompt caching: a 5-minute cache write costs 1.25x input, a read 0.1x.
    return Price(input=inp, output=out, cache_read=inp / 10, cache_write=inp * 1.25)


DEFAULT_PRICES: dict[str, Price] = {  # longest matching prefix wins
    "claude-opus-4-5": _price(5, 25),
    "claude-opus-4": _price(15, 75),
    "claude-sonnet-4": _price(3, 15),
    "claude-haiku-4": _price(1, 5),
    "claude-3-5-haiku": _price(0.8, 4),
    "claude-3-7-sonnet": _price(3, 15),
}
_prices = msgspec.json.Decoder(dict[str, Price])


def prices() -> dict[str, Price]:
    path = os.environ.get("AGENTTEAMS_PRICES")
    if not path:
        return DEFAULT_PRICES
    try:
        return {**DEFAULT_PRICES, **_prices.decode(Path(path).read_bytes())}
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidInput(
            f"AGENTTEAMS_PRICES={path}: {exc}; it must be a JSON object of "
            '{"model-prefix": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}'
        ) from None


def cost(model: str, tokens: Tokens, table: dict[str, Price] | None = None) -> float | None:
    """USD for ``tokens`` of ``model``, or None if no price is known for it."""
    table = prices() if table is None else table
    match = max((p for p in table if model.startswith(p)), key=len, default=None)
    return None if match is None else table[match].cost(tokens)


Ledger = dict[str, Tokens]  # model id -> tokens
_ledger = msgspec.json.Decoder(Ledger)


def ledger_path(paths: TeamPaths, agent: str) -> Path:
    return paths.transcript(agent).with_suffix(".usage.json")


def read_ledger(path: Path) -> Ledger:
    return read_settled(path, _ledger.decode, "usage") or {}


class UsageBook:
    """One agent's usage: loaded at start, added to after each request, written through."""

    def __init__(self, paths: TeamPaths, agent: str) -> None:
        self.paths = paths
        self.path = ledger_path(paths, agent)
        self.by_model: Ledger = read_ledger(self.path)

    def record(self, model: str, tokens: Tokens) -> None:
        self.by_model.setdefault(model, Tokens()).add(tokens)
        if self.paths.team_dir.is_dir():  # not after the team was deleted
            atomic_write(self.path, msgspec.json.encode(self.by_model))


class AgentUsage(msgspec.Struct, kw_only=True):
    agent: str
    model: str
    tokens: Tokens
    usd: float | None


class TeamUsage(msgspec.Struct, kw_only=True):
    team: str
    agents: list[AgentUsage]
    tokens: Tokens  # everything, all models
    usd: float  # what is priced
    unpriced_models: list[str]


def spent(tokens: Tokens, usd: float | None) -> str:
    """One line: ``12,345 tokens (in 1,000 · out 345 · cache read 10,000 · write 1,000) $0.0123``."""
    money = "" if usd is None else f"  ${usd:.4f}"
    return (
        f"{tokens.total:,} tokens (in {tokens.input:,} · out {tokens.output:,} · cache read "
        f"{tokens.cache_read:,} · write {tokens.cache_write:,}; {tokens.requests:,} requests){money}"
    )


def team_usage(paths: TeamPaths) -> TeamUsage:
    """Every agent's usage in the team, per model, and the sums."""
    table = prices()
    rows: list[AgentUsage] = []
    total, usd, unpriced = Tokens(), 0.0, set()
    directory = paths.transcript("x").parent
    for path in sorted(directory.glob("*.usage.json")) if directory.is_dir() else []:
        agent = path.name.removesuffix(".usage.json")
        for model, tokens in sorted(read_ledger(path).items()):
            dollars = cost(model, tokens, table)
            rows.append(AgentUsage(agent=agent, model=model, tokens=tokens, usd=dollars))
            total.add(tokens)
            if dollars is None:
                unpriced.add(model)
            else:
                usd += dollars
    return TeamUsage(team=paths.team, agents=rows, tokens=total, usd=usd, unpriced_models=sorted(unpriced))


# ---------------------------------------------------------------- budgets


class Limit(msgspec.Struct, kw_only=True, omit_defaults=True):
    tokens: int | None = None
    usd: float | None = None


class Budget(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``budget.json``: the team's limit and each teammate's."""

    team: Limit = msgspec.field(default_factory=Limit)
    agents: dict[str, Limit] = msgspec.field(default_factory=dict)


_budget = msgspec.json.Decoder(Budget)


def budget_path(paths: TeamPaths) -> Path:
    return paths.team_dir / "budget.json"


def read_budget(paths: TeamPaths) -> Budget:
    return read_settled(budget_path(paths), _budget.decode, "budget") or Budget()


def check_limit(tokens: int | None, usd: float | None) -> Limit:
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0):
        raise InvalidInput(f"a token budget must be a positive whole number, not {tokens!r}")
    if usd is not None and (
        isinstance(usd, bool) or not isinstance(usd, int | float) or not math.isfinite(usd) or usd <= 0
    ):
        raise InvalidInput(f"a dollar budget must be a positive number of dollars, not {usd!r}")
    return Limit(tokens=tokens, usd=None if usd is None else float(usd))


def set_budget(paths: TeamPaths, agent: str | None, limit: Limit | None) -> None:
    """Set the team's limit (``agent`` None) or one teammate's; a teammate's limit None
    removes its entry (a spawn that failed takes back the one it wrote)."""
    with locked(budget_path(paths), root=paths.root):
        budget = read_budget(paths)
        if agent is None:
            budget.team = limit if limit is not None else Limit()
        elif limit is None:
            budget.agents.pop(agent, None)
        else:
            budget.agents[agent] = limit
        if budget == Budget():  # no limit left: no file, as before the first was set
            with contextlib.suppress(FileNotFoundError):
                os.unlink(budget_path(paths))
            return
        atomic_write(budget_path(paths), msgspec.json.format(msgspec.json.encode(budget), indent=2) + b"\n")
