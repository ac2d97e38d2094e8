"""Prompt caching over a 50-turn conversation: input tokens billed per turn with and without
cache breakpoints, through the real SDK and agentteams' request building and usage books,
against the local Messages API server whose cache and token counts are scripted (a quarter
of a block's JSON length per token, caching as the API does it at breakpoints).

Then forks: the first requests of N fork workers of one parent after a 10-turn
conversation, built as agentproc.fork builds them (the parent's prefix, its call, the
placeholder answers and each fork's directive), sharing the parent's cached prefix; against
the same requests whose prefix is not the parent's (another system prompt, as a subagent's
is): the first of those writes the conversation again, the others read what it wrote.

Then check-ins: the side requests a parent 10 turns in makes while its synchronous subagent
runs, built as agentproc.checkins builds them (the conversation through the Agent call,
placeholder results and the offer; TaskBackground among the tools throughout), against the
same requests without caching."""

from __future__ import annotations

from typing import Any

from agentproc import checkins, fork
from agentproc.models import caching
from agentproc.models.api_calls import ApiCaller
from agentproc.tools.agent import TASK_BACKGROUND
from benchmarks.common import env, scratch
from ipc.paths import TeamPaths
from ipc.usage import DEFAULT_PRICES, Tokens
from tests.fake_anthropic import FakeAnthropic, PromptCache, text

SYSTEM = "You are a teammate in an agent team. " + "Follow the team's conventions. " * 120
TOOLS = [
    {
        "name": f"Tool{i}",
        "description": f"Tool number {i}. " + "It does one thing well. " * 30,
        "input_schema": {"type": "object", "properties": {"arg": {"type": "string"}}},
    }
    for i in range(12)
]
PRICE = DEFAULT_PRICES["claude-sonnet-4"]  # what the bill is priced at


def billed_input(tokens: Tokens) -> float:
    """Input tokens at the input price's rate: reads cost 0.1x, writes 1.25x."""
    return (
        tokens.input
        + tokens.cache_read * PRICE.cache_read / PRICE.input
        + (tokens.cache_write * PRICE.cache_write / PRICE.input)
    )


def conversation(turns: int, cache: bool) -> list[Tokens]:
    server = PromptCache(output_tokens=60)
    reply = "Noted; " + "here is what I did and what comes next. " * 6
    api = FakeAnthropic(lambda request, n: text(reply), usage=server)
    with scratch() as root, api, env(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench"):
        caller = ApiCaller(TeamPaths(root, "bench"), "bench", "claude-sonnet-4-5")
        messages: list[dict[str, Any]] = []
        per_turn = []
        for k in range(turns):
            messages.append({"role": "user", "content": f"Turn {k}: " + "new information to act on. " * 14})
            params = caching.request(SYSTEM, TOOLS, messages, cache=cache)
            response = caller.create(max_tokens=256, **params)
            messages.append({"role": "assistant", "content": [b.model_dump() for b in response.content]})
            per_turn.append(caller.last)
        return per_turn


def forks(n: int, shared: bool, turns: int = 10) -> list[Tokens]:
    """The first request of each of ``n`` forks of a parent ``turns`` turns in."""
    server = PromptCache(output_tokens=60)
    api = FakeAnthropic(lambda request, k: text("Noted; " + "what I did. " * 6), usage=server)
    with scratch() as root, api, env(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench"):
        caller = ApiCaller(TeamPaths(root, "bench"), "bench", "claude-sonnet-4-5")
        messages: list[dict[str, Any]] = []
        for k in range(turns):  # the parent's conversation, cached as it goes
            messages.append({"role": "user", "content": f"Turn {k}: " + "new information to act on. " * 14})
            response = caller.create(max_tokens=256, **caching.request(SYSTEM, TOOLS, messages, cache=True))
            messages.append({"role": "assistant", "content": [b.model_dump() for b in response.content]})
        calls = [
            {"type": "tool_use", "id": f"f{i}", "name": "Agent", "input": {"prompt": f"Part {i}."}}
            for i in range(n)
        ]
        messages[-1] = {"role": "assistant", "content": [*messages[-1]["content"], *calls]}
        answers = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": fork.PLACEHOLDER} for c in calls
        ]
        system = SYSTEM if shared else "You are a subagent. " + SYSTEM
        billed = []
        for i in range(n):
            directive = {"type": "text", "text": fork.directive(f"Part {i}: look into it and report.")}
            first = [*messages, {"role": "user", "content": [*answers, directive]}]
            caller.create(max_tokens=256, **caching.request(system, TOOLS, first, cache=True))
            billed.append(caller.last)
        return billed


def check_ins(n: int, cache: bool, turns: int = 10) -> list[Tokens]:
    """``n`` check-ins of a parent ``turns`` turns in, waiting on its synchronous subagent."""
    server = PromptCache(output_tokens=60)
    api = FakeAnthropic(lambda request, k: text("Noted; " + "what I did. " * 6), usage=server)
    tools = [*TOOLS, TASK_BACKGROUND.schema()]  # offered in every request while check-ins are on
    with scratch() as root, api, env(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench"):
        caller = ApiCaller(TeamPaths(root, "bench"), "bench", "claude-sonnet-4-5")
        messages: list[dict[str, Any]] = []
        for k in range(turns):
            messages.append({"role": "user", "content": f"Turn {k}: " + "new information to act on. " * 14})
            response = caller.create(max_tokens=256, **caching.request(SYSTEM, tools, messages, cache=cache))
            content = [b.model_dump() for b in response.content]
            messages.append({"role": "assistant", "content": content})
        call = {"type": "tool_use", "id": "a1", "name": "Agent", "input": {"prompt": "Look into it."}}
        messages[-1] = {"role": "assistant", "content": [*messages[-1]["content"], call]}
        billed = []
        for number in range(1, n + 1):
            check = checkins.CheckIn(
                "sub-1", "look into it", "Look into it.", 30 * number, "Read 3 files.", number
            )
            side = checkins.side_messages(messages, [], check)
            caller.create(max_tokens=256, **caching.request(SYSTEM, tools, side, cache=cache))
            billed.append(caller.last)
        return billed


def run(quick: bool) -> dict[str, Any]:
    turns = 50
    runs = {"cached": conversation(turns, True), "uncached": conversation(turns, False)}
    rows = [
        {
            "turn": k + 1,
            **{
                f"{mode}_{field}": getattr(runs[mode][k], field)
                for mode in runs
                for field in ("input", "cache_read", "cache_write")
            },
            "cached_billed": round(billed_input(runs["cached"][k])),
            "uncached_billed": round(billed_input(runs["uncached"][k])),
        }
        for k in range(turns)
    ]
    cached = sum(r["cached_billed"] for r in rows)
    uncached = sum(r["uncached_billed"] for r in rows)
    fork_rows = []
    for n in (1, 2, 4, 8):
        with_prefix = [billed_input(t) for t in forks(n, True)]
        without = [billed_input(t) for t in forks(n, False)]
        fork_rows.append(
            {"forks": n, "shared_billed": round(sum(with_prefix)), "unshared_billed": round(sum(without))}
        )
    one = fork_rows[0]
    cached_checks = [billed_input(t) for t in check_ins(3, True)]
    uncached_checks = [billed_input(t) for t in check_ins(3, False)]
    check_rows = [
        {"check_in": k + 1, "cached_billed": round(c), "uncached_billed": round(u)}
        for k, (c, u) in enumerate(zip(cached_checks, uncached_checks, strict=True))
    ]
    return {
        "fork_rows": fork_rows,
        "check_in_rows": check_rows,
        "turns": turns,
        "rows": rows,
        "billed_input_cached": cached,
        "billed_input_uncached": uncached,
        "targets": [
            {
                "target": f"caching bills ≤ 30% of the uncached input over {turns} turns",
                "value": cached / uncached,
                "met": cached <= 0.3 * uncached,
            },
            {
                "target": "a fork sharing its parent's prefix bills ≤ 25% of the input of one that does not",
                "value": one["shared_billed"] / one["unshared_billed"],
                "met": one["shared_billed"] <= 0.25 * one["unshared_billed"],
            },
            {
                "target": "a check-in bills ≤ 25% of the same side request uncached",
                "value": check_rows[0]["cached_billed"] / check_rows[0]["uncached_billed"],
                "met": check_rows[0]["cached_billed"] <= 0.25 * check_rows[0]["uncached_billed"],
            },
        ],
    }
