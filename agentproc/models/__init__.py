"""Model backends behind one interface."""

from __future__ import annotations

from agentproc.models.base import Model, Turn, TurnOutcome, wrap_message
from agentproc.models.offline import OfflineModel


def load_model(spec: str) -> Model:
    """``offline`` or ``anthropic:MODEL``."""
    if spec == "offline":
        return OfflineModel()
    raise SystemExit(f"unknown model {spec!r}; use offline (anthropic:MODEL is not implemented yet)")


__all__ = ["Model", "OfflineModel", "Turn", "TurnOutcome", "load_model", "wrap_message"]
