"""The ``anthropic:MODEL`` backend: the official SDK, tool use with tool_use/tool_result
pairing, retries with backoff on 429 and 5xx (the SDK's, honouring retry-after), maxTurns,
and API errors that end the turn as a ``failed`` idle notification."""

from __future__ import annotations

import os
from typing import Any

import anthropic

from agentproc.models.base import ModelContext, Turn, TurnOutcome
from agentproc.models.prompts import system_prompt
from agentproc.tools import ToolBox


def _block(block: Any) -> dict[str, Any]:
    data: dict[str, Any] = block.model_dump(exclude_none=True)
    return data


class AnthropicModel:
    def __init__(self, model_name: str, context: ModelContext) -> None:
        self.model_name = model_name
        self.client = anthropic.Anthropic(
            max_retries=int(os.environ.get("AGENTTEAMS_API_RETRIES", "4")),
            timeout=float(os.environ.get("AGENTTEAMS_API_TIMEOUT", "120")),
        )
        self.max_turns = context.definition.max_turns or int(os.environ.get("AGENTTEAMS_MAX_TURNS", "50"))
        self.max_tokens = int(os.environ.get("AGENTTEAMS_MAX_TOKENS", "4096"))
        self.system = system_prompt(context.spec, context.definition)
        self.transcript = context.transcript
        # A restarted teammate continues its conversation; the loop records the new user turn.
        self.messages: list[dict[str, Any]] = self.transcript.messages()

    def run_turn(self, turn: Turn, tools: ToolBox) -> TurnOutcome:
        self.messages.append({"role": "user", "content": turn.text})
        for _ in range(self.max_turns):
            try:
                response = self.client.messages.create(
                    model=self.model_name,
                    max_tokens=self.max_tokens,
                    system=self.system,
                    tools=tools.schemas(),  # type: ignore[arg-type]
                    messages=self.messages,  # type: ignore[arg-type]
                )
            except anthropic.APIStatusError as exc:
                return TurnOutcome(failure_reason=f"Anthropic API error {exc.status_code}: {exc.message}")
            except anthropic.APIError as exc:
                return TurnOutcome(failure_reason=f"Anthropic API error: {exc.message}")
            content = [_block(b) for b in response.content]
            self.messages.append({"role": "assistant", "content": content})
            self.transcript.append("assistant", content)
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                return TurnOutcome(final_text="".join(b.text for b in response.content if b.type == "text"))
            results = []
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
