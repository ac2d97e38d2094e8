"""Whether an agent may make another model request under ``budget.json``: the team's limits,
the agent's own, and those of the agents it is a subagent of. A teammate's limit covers its
subagents' usage (recorded under their own names, ``{parent}.{id}``) with its own."""

from __future__ import annotations

from ipc.paths import TeamPaths, normalise_agent_name
from ipc.storage import read_bytes
from ipc.subagents import parent_of
from ipc.usage import budget_path, read_budget, team_usage


def spends_for(paths: TeamPaths, agent: str) -> list[str]:
    """``agent`` (a usage file's name) and every agent whose budget its usage counts against
    besides: a subagent's parent, and that one's parent if it is a subagent too."""
    chain = [agent]
    while (parent := parent_of(paths, chain[-1])) is not None and parent not in chain:
        chain.append(parent)
    return chain


def over_budget(paths: TeamPaths, agent: str) -> str:
    """Why ``agent`` may not make another request ("" if it may): a limit of the team, of the
    agent, or of an agent it is a subagent of, that its usage has reached. An agent's own
    limit covers its subagents' usage (and theirs) with its own."""
    if read_bytes(budget_path(paths)) is None:
        return ""
    budget = read_budget(paths)
    usage = team_usage(paths)
    checks = [
        ("the team's token budget", budget.team.tokens, usage.tokens.total, "tokens"),
        ("the team's dollar budget", budget.team.usd, usage.usd, "USD"),
    ]
    if budget.agents:
        lines = {row.agent: spends_for(paths, row.agent) for row in usage.agents}
        for who in spends_for(paths, normalise_agent_name(agent)):
            own = budget.agents.get(who)
            if own is None:
                continue
            rows = [row for row in usage.agents if who in lines[row.agent]]
            checks += [
                (f"{who}'s token budget", own.tokens, sum(row.tokens.total for row in rows), "tokens"),
                (f"{who}'s dollar budget", own.usd, sum(row.usd or 0.0 for row in rows), "USD"),
            ]
    for name, limit, used, unit in checks:
        if limit is not None and used >= limit:
            shown = f"{used:,}" if unit == "tokens" else f"{used:.4f}"
            return f"{name} of {limit:,} {unit} is reached ({shown} used)"
    return ""
