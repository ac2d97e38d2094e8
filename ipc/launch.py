"""How a teammate is described, started and reported, defined once.

- :class:`TeammateOptions`: what a caller asks for (CLI, Python API, scenario, lead's Agent
  tool); validated before anything is written.
- :class:`LaunchSpec`: everything one teammate process needs: Claude Code's teammate flags
  (``--agent-id --agent-name …``) plus agentteams' environment. It writes and parses its own
  argv and environment, so the supervisor and the teammate can never disagree.
- :class:`SupervisorOptions`: a team supervisor's settings, with its own argv.
- :class:`TeammateStatus`, :class:`TeamStatus`, :class:`SpawnReply`: what the supervisor
  reports.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

import msgspec

from ipc.boundary import input_errors
from ipc.errors import InvalidInput
from ipc.paths import normalise_agent_name
from ipc.usage import TeamUsage

WakeMode = Literal["zmq", "poll"]
Backend = Literal["process", "claude-code"]
RestartMode = Literal["never", "on-failure"]
SpawnMethod = Literal["forkserver", "exec"]
PlanApproval = Literal["auto", "lead", "human"]
Role = Literal["teammate", "subagent", "lead"]
PERMISSION_MODES: tuple[str, ...] = ("default", "acceptEdits", "bypassPermissions", "plan", "dontAsk")
DEFAULT_FALLBACK_POLL = 5.0
POLL_INTERVAL = 0.5  # Claude Code's inbox poll (seed 000 §5)
EXIT_GAVE_UP = 3  # a teammate whose turns kept failing: the supervisor marks it failed, no restart

S = TypeVar("S", bound=msgspec.Struct)

# ---------------------------------------------------------------- models

MODEL_ALIASES: dict[str, tuple[str, str]] = {
    # alias: (environment variable, default model id)
    "sonnet": ("AGENTTEAMS_MODEL_SONNET", "claude-sonnet-4-5"),
    "opus": ("AGENTTEAMS_MODEL_OPUS", "claude-opus-4-5"),
    "haiku": ("AGENTTEAMS_MODEL_HAIKU", "claude-haiku-4-5"),
}
MODEL_FORMS = (
    "offline, anthropic:MODEL (e.g. anthropic:claude-sonnet-4-5), a Claude model id, "
    "sonnet, opus, haiku, inherit, claude-code[:MODEL] or python:MODULE:CLASS"
)
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


# ---------------------------------------------------------------- options


def check_permission_mode(mode: str) -> str:
    if mode and mode not in PERMISSION_MODES:
        raise InvalidInput(f"permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}")
    return mode


class TeammateOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A teammate as a caller asks for it."""

    name: str
    prompt: str = ""
    model: str = "offline"
    agent_type: str = "general-purpose"
    plan_mode_required: bool = False
    permission_mode: str = ""
    cwd: str = ""
    backend: Backend = "process"

    def checked(self) -> TeammateOptions:
        """These options with the name normalised; InvalidInput (nothing written) if any
        field is wrong. The agent type and cwd are checked by the supervisor, which knows
        the team's project directory."""
        check_model(self.model)
        check_permission_mode(self.permission_mode)
        backend = "claude-code" if self.model.startswith("claude-code") else self.backend
        if backend == "claude-code" and claude_code_model(self.model) is None:
            raise InvalidInput(
                f"a claude-code teammate runs Claude models; model {self.model!r} is not one (use sonnet, opus, haiku or a Claude model id)"
            )
        return msgspec.structs.replace(self, name=normalise_agent_name(self.name), backend=backend)


class LaunchSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One teammate process: Claude Code's flags, then agentteams' environment."""

    # Claude Code's teammate flags, in its order (SPEC §7).
    agent_id: str
    agent_name: str
    team_name: str
    agent_color: str
    parent_session_id: str
    agent_type: str = "general-purpose"
    model: str = "offline"
    plan_mode_required: bool = False
    permission_mode: str = ""
    # agentteams' environment (AGENTTEAMS_*).
    root: str
    cwd: str
    wake: WakeMode = "zmq"
    fallback_poll: float = DEFAULT_FALLBACK_POLL
    incarnation_ms: int = 0
    supervisor_pid: int = 0
    role: Role = "teammate"
    parent: str = ""  # a subagent's parent agent
    subagent_id: str = ""
    backend: Backend = "process"  # claude-code: this process runs the real `claude` CLI

    FLAGS: ClassVar[tuple[str, ...]] = (
        "agent_id",
        "agent_name",
        "team_name",
        "agent_color",
        "parent_session_id",
        "agent_type",
        "model",
        "plan_mode_required",
        "permission_mode",
    )

    def to_argv(self) -> list[str]:
        """Claude Code's flags; a false boolean and an empty mode are left out."""
        return _to_argv(self, self.FLAGS)

    def to_env(self) -> dict[str, str]:
        return {f"AGENTTEAMS_{name.upper()}": _text(getattr(self, name)) for name in _env_fields(type(self))}

    @classmethod
    def from_argv(cls, argv: list[str], environ: Mapping[str, str] | None = None) -> LaunchSpec:
        """Parse what :meth:`to_argv` and :meth:`to_env` wrote; InvalidInput on anything else."""
        values = _from_argv(cls, argv, cls.FLAGS)
        env = os.environ if environ is None else environ
        for name in _env_fields(cls):
            key = f"AGENTTEAMS_{name.upper()}"
            if key in env and env[key] != "":
                values[name] = env[key]
        values.setdefault("cwd", os.getcwd())
        values.setdefault("root", env.get("AGENTTEAMS_HOME") or os.path.expanduser("~/.agentteams"))
        spec = _convert(values, cls, "teammate flags")
        check_model(spec.model)
        check_permission_mode(spec.permission_mode)
        return spec

    @property
    def name(self) -> str:
        return self.agent_name


class SupervisorOptions(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """A team supervisor's settings; ``agentteams up`` and ``Team.up`` take these fields."""

    wake: WakeMode = "zmq"
    fallback_poll: float = DEFAULT_FALLBACK_POLL
    restart: RestartMode = "on-failure"
    intensity: int = 3
    period: float = 30.0
    spawn: SpawnMethod = "forkserver"
    plan_approval: PlanApproval = "auto"
    lead_permission_mode: str = "acceptEdits"

    HELP: ClassVar[dict[str, str]] = {
        "wake": "zmq: wake over sockets; poll: Claude Code's 500 ms inbox poll",
        "fallback_poll": "seconds between a teammate's safety re-reads of its inbox",
        "restart": "restart a crashed teammate (on-failure) or let it go (never)",
        "intensity": "restarts allowed within --period before a teammate is marked failed",
        "period": "seconds over which restarts are counted",
        "spawn": "forkserver: fork from a warm fork server; exec: a fresh interpreter",
        "plan_approval": "who approves plans: auto (as Claude Code), an offline lead, or a person",
        "lead_permission_mode": "the permission mode an approved plan hands the teammate",
    }

    def checked(self) -> SupervisorOptions:
        check_permission_mode(self.lead_permission_mode)
        if self.fallback_poll <= 0 or self.period <= 0 or self.intensity < 0:
            raise InvalidInput("fallback_poll and period must be positive, intensity zero or more")
        return self

    def to_argv(self) -> list[str]:
        return _to_argv(self, tuple(self.__struct_fields__), always=True)

    @classmethod
    def from_argv(cls, argv: list[str]) -> SupervisorOptions:
        return _convert(
            _from_argv(cls, argv, tuple(cls.__struct_fields__)), cls, "supervisor options"
        ).checked()


# ---------------------------------------------------------------- replies


class TeammateStatus(msgspec.Struct, kw_only=True):
    """One teammate as the supervisor sees it."""

    name: str
    pid: int | None
    state: str
    task: str = ""
    restarts: int = 0
    incarnation: int = 0
    color: str = ""
    last_exit: str = ""
    backend: str = "process"
    role: Role = "teammate"
    parent: str = ""


class TeamStatus(msgspec.Struct, kw_only=True):
    team: str
    supervisor: int
    forkserver: int | None
    wake: WakeMode
    started: float
    runtime: str
    lead_pid: int | None = None
    task_wakes: int = 0  # wakes sent to idle teammates for ready tasks
    lead_checks: int = 0  # looks the supervisor took at the lead's inbox
    lead_check_seconds: float = 0.0  # and the time they took, together
    teammates: list[TeammateStatus] = []

    def teammate(self, name: str) -> TeammateStatus | None:
        return next((t for t in self.teammates if t.name == name), None)


class SpawnReply(msgspec.Struct, kw_only=True):
    name: str
    pid: int | None
    color: str
    state: str
    renamed_from: str = ""  # the name asked for, when it was taken and a suffix was added


class StopReply(msgspec.Struct, kw_only=True):
    name: str
    stopped: bool = True
    exit: str = ""


# ---------------------------------------------------------------- subagents and the lead

SubagentStatus = Literal["running", "completed", "failed", "killed"]


class SubagentOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A subagent as its parent asks for it (the Agent tool without a teammate name)."""

    parent: str
    prompt: str
    description: str = ""
    agent_type: str = "general-purpose"
    model: str = "inherit"
    parent_model: str = ""  # what ``inherit`` means: the parent's own model
    permission_mode: str = ""
    background: bool = False


class SubagentReply(msgspec.Struct, kw_only=True):
    id: str  # also its agent name
    pid: int | None
    output_file: str


class SubagentResult(msgspec.Struct, kw_only=True):
    """``teams/{team}/subagents/{id}.json``: what a subagent came to, for its parent."""

    id: str
    parent: str
    description: str = ""
    prompt: str = ""
    agent_type: str = "general-purpose"
    status: SubagentStatus = "running"
    result: str = ""
    error: str = ""
    background: bool = False
    notified: bool = False  # its parent has been told (a <task-notification> or TaskOutput)
    started_ms: int = 0
    ended_ms: int = 0


class LeadResult(msgspec.Struct, kw_only=True):
    """What ``agentteams lead`` (and ``Team.lead``) report when the lead is done."""

    team: str
    answer: str
    stopped_by: Literal["done", "timeout", "budget", "error", "interrupted"]
    turns: int
    seconds: float
    teammates: list[str] = []
    tasks: list[dict[str, Any]] = []
    messages: int = 0
    error: str = ""
    usage: TeamUsage | None = None  # the team's model calls, as last seen before the end


# ---------------------------------------------------------------- argv helpers


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _env_fields(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    flags: tuple[str, ...] = getattr(cls, "FLAGS", ())
    return tuple(f for f in cls.__struct_fields__ if f not in flags)


def _to_argv(obj: msgspec.Struct, names: tuple[str, ...], always: bool = False) -> list[str]:
    argv: list[str] = []
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool):
            if value:
                argv.append(_flag(name))
            elif always:
                argv.append("--no-" + name.replace("_", "-"))
        elif value != "" or always:
            argv += [_flag(name), _text(value)]
    return argv


def _from_argv(cls: type[msgspec.Struct], argv: list[str], names: tuple[str, ...]) -> dict[str, Any]:
    fields = {f.name: f for f in msgspec.structs.fields(cls) if f.name in names}
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        negated = token.startswith("--no-")
        name = (token[5:] if negated else token[2:]).replace("-", "_") if token.startswith("--") else ""
        field = fields.get(name)
        if field is None:
            known = " ".join(_flag(n) for n in names)
            raise InvalidInput(f"unknown argument {token!r}; the flags are: {known}")
        if field.type is bool:
            values[name] = not negated
            i += 1
            continue
        if i + 1 >= len(argv):
            raise InvalidInput(f"{token} needs a value")
        values[name] = argv[i + 1]
        i += 2
    return values


def _convert(values: dict[str, Any], cls: type[S], what: str) -> S:
    with input_errors(what):
        return msgspec.convert(values, cls, strict=False)
