"""The ``anthropic:MODEL`` backend: the official SDK, tool use with tool_use/tool_result
pairing, prompt caching, context compaction, the team's budgets and shared rate limiter
(:mod:`agentproc.models.api_calls`), the definition's maxTurns as the only cap on a turn,
the model's own output limit, and API errors that end the turn as a
``failed`` idle notification."""

from __future__ import annotations

import logging
import os
from typing import Any

from agentproc import checkins, conversation
from agentproc.models import caching, compaction
from agentproc.models.api_calls import ApiCaller, ApiFailure, OverBudget
from agentproc.models.base import ModelContext, Turn, TurnOutcome
from agentproc.models.prompts import system_prompt
from agentproc.tools import ToolBox
from ipc.model_specs import output_limit

log = logging.getLogger("agentteams.model")
CHECK_IN_TOKENS = 1024  # a check-in's answer is a tool call or a word


def _block(block: Any) -> dict[str, Any]:
    data: dict[str, Any] = block.model_dump(exclude_none=True)
    return data


class AnthropicModel:
    def __init__(self, model_name: str, context: ModelContext) -> None:
        self.model_name = model_name
        spec = context.spec
        usage_name = spec.agent_name if spec.role != "subagent" else f"{spec.parent}.{spec.subagent_id}"
        self.api = ApiCaller(spec.team_paths(), usage_name, model_name)
        # As Claude Code's teammates: no cap on a turn's tool rounds but the definition's maxTurns.
        self.max_turns = context.definition.max_turns
        self.max_tokens = int(os.environ.get("AGENTTEAMS_MAX_TOKENS") or output_limit(model_name))
        self.system = system_prompt(spec, context.definition)
        # The spawn's effort, else the definition's; none: the model's own default.
        effort = spec.effort or context.definition.effort
        self.output_config: dict[str, Any] = {"effort": effort} if effort else {}
        self.transcript = context.transcript
        self.cache = caching.enabled()
        # A restarted teammate continues its conversation (from its last compaction); the
        # loop records the new user turn.
        self.messages: list[dict[str, Any]] = self.transcript.messages()
        self._answered: list[dict[str, Any]] = []  # the tool results of the calls being run

    def over_budget(self) -> str:
        """Why no turn may start now ("" if one may): the loop stays idle while it is set."""
        return self.api.budget_problem()

    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        conversation.add(self.messages, {"role": "user", "content": turn.text})
        try:
            return self._run(tools)
        except OverBudget as exc:
            return TurnOutcome(failure_reason=f"budget: {exc}", budget_reached=True)
        except ApiFailure as exc:
            return TurnOutcome(failure_reason=str(exc))

    def _request(self, tools: ToolBox, messages: list[dict[str, Any]], max_tokens: int = 0) -> Any:
        params = caching.request(self.system, tools.schemas(), messages, cache=self.cache)
        if self.output_config:
            params["output_config"] = self.output_config
        return self.api.create(max_tokens=max_tokens or self.max_tokens, **params)

    def check_in(self, check: checkins.CheckIn, tools: ToolBox) -> bool:
        """Ask this model, aside, whether to stop waiting for the subagent its Agent call runs:
        its conversation through that call (a cache read), then the offer. Not kept."""
        messages = checkins.side_messages(self.messages, self._answered, check)
        try:
            response = self._request(tools, messages, max_tokens=min(self.max_tokens, CHECK_IN_TOKENS))
        except (OverBudget, ApiFailure) as exc:
            return checkins.logged(tools.ctx.name, check, False, f"no answer: {exc}")
        content = [_block(b) for b in response.content]
        moved = checkins.chose_background(content, check.subagent)
        return checkins.logged(
            tools.ctx.name, check, moved, "its model called TaskBackground" if moved else "its model"
        )

    def _run(self, tools: ToolBox) -> TurnOutcome:
        rounds = 0
        while self.max_turns is None or rounds < self.max_turns:
            rounds += 1
            if (
                self.api.last.input + self.api.last.cache_read + self.api.last.cache_write
                > compaction.threshold()
            ):
                self._compact(tools)
            response = self._request(tools, self.messages)
            content = [_block(b) for b in response.content]
            self.messages.append({"role": "assistant", "content": content})
            self.transcript.append("assistant", content)
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                return TurnOutcome(final_text="".join(b.text for b in response.content if b.type == "text"))
            results: list[dict[str, Any]] = []
            self._answered = results  # what a check-in during these calls shows as run
            for use in uses:  # every tool_use answered, in order, in the next user message
                result = tools.call(
                    use.name, dict(use.input) if isinstance(use.input, dict) else {}, tool_use_id=use.id
                )
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": result.content,
                }
                if result.is_error:
                    block["is_error"] = True
                results.append(block)
            self.messages.append({"role": "user", "content": results})
            self.transcript.append("user", results)
        return TurnOutcome(failure_reason=f"reached maxTurns ({self.max_turns}) without finishing the turn")

    def _compact(self, tools: ToolBox) -> None:
        """Replace the older turns by a summary the model writes (the last message is a user
        message here: a new turn or tool results)."""
        if compaction.tail_start(self.messages) == 0:
            return  # nothing before the latest exchange to replace
        response = self._request(tools, compaction.summary_request(self.messages))
        summary = "".join(b.text for b in response.content if b.type == "text").strip()
        if not summary:
            log.warning("compaction: the model wrote no summary; the conversation is kept whole")
            return
        replaced = compaction.tail_start(self.messages)
        self.messages = compaction.compacted(self.messages, summary)
        self.transcript.compaction(summary, self.messages, replaced)
        log.info("compacted %d messages into a summary of %d characters", replaced, len(summary))
