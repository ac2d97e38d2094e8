"""Which models an agent can run, written once: the forms a model is named by (``offline``,
``sonnet``, ``anthropic:ID``, ``claude-code[:MODEL]``, ``python:MODULE:CLASS``…), what each
resolves to, and whether it needs an API key where it runs."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ipc.errors import InvalidInput

MODEL_ALIASES: dict[str, tuple[str, str]] = {
    # alias: (environment variable, default model id)
    "sonnet": ("AGENTTEAMS_MODEL_SONNET", "claude-sonnet-4-5"),
    "opus": ("AGENTTEAMS_MODEL_OPUS", "claude-opus-4-5"),
    "haiku": ("AGENTTEAMS_MODEL_HAIKU", "claude-haiku-4-5"),
}
# The most output tokens a model writes in one response, by model-id prefix (the longest
# prefix that fits wins), as the Messages API documents them; a model not listed gets
# DEFAULT_OUTPUT_LIMIT, the output cap Claude Code itself asks for by default.
OUTPUT_LIMITS: dict[str, int] = {
    "claude-opus-4-5": 64_000,
    "claude-opus-4": 32_000,
    "claude-sonnet-4": 64_000,
    "claude-haiku-4": 64_000,
    "claude-3-7-sonnet": 64_000,
    "claude-3-5-sonnet": 8_192,
    "claude-3-5-haiku": 8_192,
    "claude-3-haiku": 4_096,
    "claude-3-opus": 4_096,
}
DEFAULT_OUTPUT_LIMIT = 32_000
MODEL_FORMS = (
    "offline, anthropic:MODEL (e.g. anthropic:claude-sonnet-4-5), a Claude model id, "
    "sonnet, opus, haiku, inherit, claude-code[:MODEL] or python:MODULE:CLASS"
)
# The Messages API's ``output_config.effort`` levels (how much the model puts into a reply).
EFFORTS = ("low", "medium", "high", "xhigh", "max")
_MODEL_ID = re.compile(r"^claude-[a-z0-9][a-z0-9.\-]*$")
_PYTHON_MODEL = re.compile(r"^python:[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def check_model(spec: str) -> str:
    """``spec`` if it names a model agentteams can run; InvalidInput naming the forms if not."""
    if spec in ("offline", "inherit", "claude-code") or spec in MODEL_ALIASES:
        return spec
    kind, sep, rest = spec.partition(":")
    if sep and kind in ("anthropic", "claude-code") and rest and not rest.startswith(":"):
        return spec
    if _MODEL_ID.match(spec) or _PYTHON_MODEL.match(spec):
        return spec
    raise InvalidInput(f"unknown model {spec!r}; use {MODEL_FORMS}")


def check_effort(value: object, where: str = "effort") -> str:
    """``value`` if it is an effort level the Messages API takes ('' for none); InvalidInput
    naming the levels if not (a number, Claude Code's internal form, is not sent to the API)."""
    if value in (None, ""):
        return ""
    if isinstance(value, str) and value in EFFORTS:
        return value
    raise InvalidInput(f"{where} {value!r} is not an effort level; use one of {', '.join(EFFORTS)}")


def resolve_model(spec: str, environ: Mapping[str, str] | None = None) -> str:
    """The Messages API model id behind an alias (``sonnet`` → ``$AGENTTEAMS_MODEL_SONNET``),
    a bare Claude id or ``anthropic:ID``; other specs are returned unchanged."""
    env = os.environ if environ is None else environ
    if spec in MODEL_ALIASES:
        variable, default = MODEL_ALIASES[spec]
        return env.get(variable) or default
    if spec.startswith("anthropic:"):
        return resolve_model(spec.partition(":")[2], env)
    return spec


def output_limit(model_id: str) -> int:
    """The ``max_tokens`` to ask of ``model_id``: its own output limit."""
    fits = [prefix for prefix in OUTPUT_LIMITS if model_id.startswith(prefix)]
    return OUTPUT_LIMITS[max(fits, key=len)] if fits else DEFAULT_OUTPUT_LIMIT


def claude_code_model(spec: str) -> str | None:
    """The ``--model`` a Claude Code teammate is given for ``spec``: an alias or a Claude
    model id as Claude Code takes them, "" for Claude Code's own choice (``claude-code``,
    ``inherit``), None if ``spec`` is not a Claude model."""
    if spec in ("claude-code", "inherit"):
        return ""
    for prefix in ("claude-code:", "anthropic:"):
        if spec.startswith(prefix):
            return claude_code_model(spec.removeprefix(prefix)) or None
    return spec if spec in MODEL_ALIASES or _MODEL_ID.match(spec) else None


def uses_api(spec: str) -> bool:
    """True if ``spec`` is answered by the Anthropic Messages API."""
    return spec in MODEL_ALIASES or spec.startswith("anthropic:") or bool(_MODEL_ID.match(spec))


def check_api_key(model: str, remedy: str) -> None:
    """A model that calls the Anthropic API needs a key where it will run."""
    if uses_api(model) and not (
        os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    ):
        raise InvalidInput(f"model {model!r} needs ANTHROPIC_API_KEY in the team's environment {remedy}")
