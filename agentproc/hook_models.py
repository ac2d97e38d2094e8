"""The ``prompt`` and ``agent`` hooks (see :mod:`agentproc.hooks`): a question with a yes or
no answer, put to a model (through the team's budgets and rate limiter, counted against the
agent) or to a read-only subagent that may look at the files first."""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any

import anthropic

from agentproc import subagents
from agentproc.context import AgentContext
from agentproc.models.api_calls import ApiCaller, ApiFailure, OverBudget
from ipc.errors import AgentTeamsError
from ipc.model_specs import resolve_model
from ipc.options import SubagentOptions

log = logging.getLogger("agentteams.hooks")
SYSTEM = "You evaluate a condition for a hook of an AI agent's team, from the input you are given."
_OBJECT = re.compile(r"\{.*\}", re.S)


def verdict(text: str) -> tuple[bool, str] | None:
    """(ok, reason) from the answer's JSON (``ok``, or Claude Code's older ``decision``);
    None if there is none."""
    found = _OBJECT.search(text)
    try:
        answer = json.loads(found.group()) if found else None
    except ValueError:
        return None
    if not isinstance(answer, dict):
        return None
    reason = str(answer.get("reason") or "")
    if isinstance(answer.get("ok"), bool):
        return answer["ok"], reason
    if answer.get("decision") in ("approve", "block"):
        return answer["decision"] == "approve", reason
    return None


def ask(
    ctx: AgentContext, event: str, hook: dict[str, Any], data: str, instruction: str
) -> tuple[bool, str, str]:
    """(blocked, reason, added context) of one prompt or agent hook."""
    prompt = str(hook["prompt"])
    question = prompt.replace("$ARGUMENTS", data) if "$ARGUMENTS" in prompt else f"{prompt}\n\nInput:\n{data}"
    question = f"{question}\n\n{instruction}"
    try:
        if hook.get("type") == "agent":
            answer = _ask_agent(ctx, event, hook, question)
        else:
            answer = _ask_model(ctx, hook, question)
    except (ApiFailure, OverBudget, AgentTeamsError, anthropic.AnthropicError) as exc:
        log.error("%s %s hook could not run: %s", event, hook.get("type"), exc)
        return False, "", ""
    found = verdict(answer)
    if found is None:
        log.error(
            "%s %s hook: the answer is not the JSON asked for: %r", event, hook.get("type"), answer[:500]
        )
        return False, "", ""
    ok, reason = found
    return (not ok), reason or f"the {event} hook's condition does not hold", ""


def hook_model(hook: dict[str, Any]) -> str:
    return resolve_model(str(hook.get("model") or os.environ.get("AGENTTEAMS_HOOK_MODEL") or "haiku"))


def _ask_model(ctx: AgentContext, hook: dict[str, Any], question: str) -> str:
    spec = ctx.spec
    usage_name = spec.agent_name if spec.role != "subagent" else f"{spec.parent}.{spec.subagent_id}"
    api = ApiCaller(ctx.paths, usage_name, hook_model(hook))
    message = api.create(max_tokens=1024, system=SYSTEM, messages=[{"role": "user", "content": question}])
    return "".join(b.text for b in message.content if b.type == "text")


def _ask_agent(ctx: AgentContext, event: str, hook: dict[str, Any], question: str) -> str:
    if ctx.spec.role == "subagent":
        raise AgentTeamsError("a subagent cannot start the subagent an agent hook needs")
    started = subagents.start(
        ctx,
        SubagentOptions(
            parent=ctx.name,
            prompt=question,
            description=f"{event} hook",
            agent_type="Explore",  # it may look, never change
            model=str(hook.get("model") or "inherit"),
            parent_model=ctx.spec.model,
            parent_permission_mode=ctx.permission_mode,
        ),
    )
    result = subagents.wait(ctx, started.id, timeout=float(hook.get("timeout", 60)))
    if result.status == "running":
        subagents.stop(ctx, started.id)
        result = subagents.wait(ctx, started.id, timeout=10)
    subagents.mark_notified(ctx, result)
    if result.status != "completed":
        raise AgentTeamsError(f"its subagent {result.status}: {result.error or result.result}")
    return result.result
