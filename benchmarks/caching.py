"""Prompt caching over a 50-turn conversation: input tokens billed per turn with and without
cache breakpoints, through the real SDK and agentteams' request building and usage books,
against the local Messages API server whose cache and token counts are scripted (a quarter
of a block's JSON length per token, caching as the API does it at breakpoints)."""

from __future__ import annotations

from typing import Any

from agentproc.models import caching
from agentproc.models.api_calls import ApiCaller
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
    return {
        "turns": turns,
        "rows": rows,
        "billed_input_cached": cached,
        "billed_input_uncached": uncached,
        "targets": [
            {
                "target": f"caching bills ≤ 30% of the uncached input over {turns} turns",
                "value": cached / uncached,
                "met": cached <= 0.3 * uncached,
            }
        ],
    }
