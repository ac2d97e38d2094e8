"""Model backends behind one interface."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentproc.models.base import Model, Turn, TurnOutcome, wrap_message
from agentproc.models.offline import OfflineModel

if TYPE_CHECKING:
    from agentproc.loop import AgentLoop


def load_model(spec: str, agent: AgentLoop) -> Model:
    """``offline`` or ``anthropic:MODEL``."""
    if spec == "offline":
        return OfflineModel()
    if spec.startswith("anthropic:") and len(spec) > len("anthropic:"):
        from agentproc.models.anthropic_model import AnthropicModel

        return AnthropicModel(spec.partition(":")[2], agent.identity, agent.definition, agent.ctx.transcript)
    raise SystemExit(f"unknown model {spec!r}; use offline or anthropic:MODEL (e.g. anthropic:claude-sonnet-4-5)")


__all__ = ["Model", "OfflineModel", "Turn", "TurnOutcome", "load_model", "wrap_message"]
