"""Model backends behind one interface, chosen by the ``--model`` spec."""

from __future__ import annotations

import importlib

from agentproc.models.base import Model, ModelContext, Turn, TurnOutcome, wrap_message
from agentproc.models.offline import OfflineModel
from ipc.errors import InvalidInput
from ipc.model_specs import MODEL_FORMS, check_model, resolve_model, uses_api


def load_model(spec: str, context: ModelContext) -> Model:
    """``offline``; an Anthropic model (``anthropic:ID``, an alias such as ``sonnet``, or a
    bare Claude id); or ``python:MODULE:CLASS``, a class taking a ModelContext."""
    check_model(spec)
    if spec == "offline":
        if context.spec.role == "lead":
            from agentproc.models.offline_lead import OfflineLead

            return OfflineLead(context)
        return OfflineModel()
    if uses_api(spec):
        from agentproc.models.anthropic_model import AnthropicModel

        return AnthropicModel(resolve_model(spec), context)
    if spec.startswith("python:"):
        _, module_name, class_name = spec.split(":")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise InvalidInput(f"model {spec!r}: cannot load {module_name}.{class_name} ({exc})") from None
        model: Model = cls(context)
        return model
    raise InvalidInput(f"model {spec!r} cannot run in a process teammate; use {MODEL_FORMS}")


__all__ = ["Model", "ModelContext", "OfflineModel", "Turn", "TurnOutcome", "load_model", "wrap_message"]
