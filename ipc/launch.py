"""How an agent process and a team supervisor are started, defined once: each Struct writes
and parses its own argv (and environment), so the starter and the started can never
disagree.

- :class:`LaunchSpec`: everything one agent process needs: Claude Code's teammate flags
  (``--agent-id --agent-name …``) plus agentteams' environment.
- :class:`LeadLaunch`: a lead agent's process: its LaunchSpec, plus what only a lead is
  started with (its goal, where its result goes, how it runs).
- :class:`SupervisorOptions`: a team supervisor's settings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

import msgspec

from ipc.boundary import input_errors
from ipc.errors import InvalidInput
from ipc.model_specs import check_effort, check_model
from ipc.options import Backend, check_permission_mode, runs_claude_code
from ipc.paths import TeamPaths
from ipc.schemas import struct_fields

WakeMode = Literal["zmq", "poll"]
RestartMode = Literal["never", "on-failure"]
SpawnMethod = Literal["forkserver", "exec"]
PlanApproval = Literal["auto", "lead", "human"]
Role = Literal["teammate", "subagent", "lead"]
TeammateMode = Literal["auto", "process", "tmux", "in-process"]
DEFAULT_FALLBACK_POLL = 5.0
POLL_INTERVAL = 0.5  # Claude Code's inbox poll
EXIT_GAVE_UP = 3  # a teammate whose turns kept failing: the supervisor marks it failed, no restart

S = TypeVar("S", bound=msgspec.Struct)


class LaunchSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One teammate process: Claude Code's flags, then agentteams' environment."""

    # Claude Code's teammate flags, in the order Claude Code passes them: inspection tools
    # find a teammate by them.
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
    claude_peers: str = ""  # a Claude Code config dir whose sessions may list and message this agent
    nofile: int = 0  # the open-file soft limit to run with (its supervisor may have raised its own)
    allowed_tools: str = ""  # Claude Code's --allowedTools: allow rules
    disallowed_tools: str = ""  # Claude Code's --disallowedTools: tools withheld, deny rules
    fork_subagents: bool = False  # the team's fork gate: an Agent call without a type forks this agent
    fork: bool = False  # a subagent that is a fork worker (its parent's conversation, tools and model)
    bubble: bool = False  # a subagent whose permission requests go up to its parent
    effort: str = ""  # output_config.effort of its requests (wins over its definition's)
    agents: str = ""  # the team's --agents JSON: agent definitions that win over .claude/agents

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
        return cls._from_flags(_from_argv(_fields(cls, cls.FLAGS), argv), environ)

    @classmethod
    def _from_flags(cls, values: dict[str, Any], environ: Mapping[str, str] | None) -> LaunchSpec:
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
        check_effort(spec.effort, "AGENTTEAMS_EFFORT")
        return spec

    @property
    def name(self) -> str:
        return self.agent_name

    @property
    def runs_claude(self) -> bool:
        """This process runs the real ``claude`` (hidden, or in its tmux pane)."""
        return runs_claude_code(self.backend, self.model)

    def team_paths(self) -> TeamPaths:
        """Where this agent's team lives: every store and socket of the agent starts here."""
        return TeamPaths(self.root, self.team_name)


RESULT_DIR_PREFIX = "agentteams-lead-"  # the folder a lead command makes for its lead's result


class LeadLaunch(msgspec.Struct, kw_only=True, frozen=True):
    """A lead agent's process (``python -m agentproc.lead``): Claude Code's flags and
    agentteams' environment of its :class:`LaunchSpec` (role ``lead``), then the lead's own
    flags."""

    spec: LaunchSpec
    result_file: str  # where the lead writes its LeadResult
    prompt: str = ""  # the goal, its first turn
    timeout: float | None = None  # s, then it stops with the work unfinished
    interactive: bool = False  # a person types to it (``agentteams chat``)
    verbose: bool = False  # show what arrives and what the lead says (chat always does)
    owns_team: bool = False  # the team was made for this run: TeamDelete may remove it
    keep_reason: str = ""  # why it is not (said when TeamDelete is refused); "": not known here

    FLAGS: ClassVar[tuple[str, ...]] = (
        "result_file",
        "prompt",
        "timeout",
        "interactive",
        "verbose",
        "owns_team",
        "keep_reason",
    )

    def to_argv(self) -> list[str]:
        return [*self.spec.to_argv(), *_to_argv(self, self.FLAGS)]

    def to_env(self) -> dict[str, str]:
        return self.spec.to_env()

    @classmethod
    def from_argv(cls, argv: list[str], environ: Mapping[str, str] | None = None) -> LeadLaunch:
        """Parse what :meth:`to_argv` and :meth:`to_env` wrote; InvalidInput on anything else."""
        values = _from_argv({**_fields(LaunchSpec, LaunchSpec.FLAGS), **_fields(cls, cls.FLAGS)}, argv)
        spec = LaunchSpec._from_flags({k: v for k, v in values.items() if k not in cls.FLAGS}, environ)
        if spec.role != "lead":
            raise InvalidInput(f"a lead agent is started with the role lead, not {spec.role!r}")
        own = {k: v for k, v in values.items() if k in cls.FLAGS}
        return _convert({**own, "spec": spec}, cls, "lead flags")


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
    claude_peers: str = ""
    teammate_mode: TeammateMode = "process"
    tmux_server: str = ""  # "": $TMUX's server (inside tmux) or tmux's default; NAME: -L NAME; PATH: -S PATH
    tmux_pane: str = ""  # the caller's pane, that teammates' panes are split beside (inside tmux)
    fork_subagents: bool = False  # the fork gate: an Agent call without subagent_type forks its caller
    agents: str = (
        ""  # agent definitions as JSON, as Claude Code's --agents: every agent of the team resolves them
    )
    owner_pid: int = 0  # a process whose end brings the team down (lead and run pass their own); 0: none

    HELP: ClassVar[dict[str, str]] = {
        "wake": "zmq: wake over sockets; poll: Claude Code's 500 ms inbox poll",
        "fallback_poll": "seconds between a teammate's safety re-reads of its inbox",
        "restart": "restart a crashed teammate (on-failure) or let it go (never)",
        "intensity": "restarts allowed within --period before a teammate is marked failed",
        "period": "seconds over which restarts are counted",
        "spawn": "forkserver: fork from a warm fork server; exec: a fresh interpreter",
        "plan_approval": "who approves plans: auto (as Claude Code), an offline lead, or a person",
        "lead_permission_mode": "the permission mode an approved plan hands the teammate",
        "claude_peers": "a Claude Code config dir (e.g. ~/.claude) whose sessions may list and message "
        "the lead and the teammates (ListAgents, SendMessage)",
        "teammate_mode": "how a teammate spawned without --backend runs: process, tmux (a pane), "
        "in-process (a thread of the team's host process), or auto (tmux inside tmux, else process)",
        "tmux_server": "the tmux server for teammates' panes: a socket name (tmux -L) or path (tmux -S); "
        "default: yours inside tmux, else tmux's default",
        "tmux_pane": "the pane teammates' panes are split beside (default: $TMUX_PANE)",
        "fork_subagents": "an Agent call without subagent_type forks the calling agent (its conversation, "
        "tools and model, in the background) instead of starting a general-purpose subagent",
        "agents": "agent definitions as JSON, as Claude Code's --agents: "
        '{"NAME": {"description": "...", "prompt": "...", "tools": [...], "model": "..."}}; '
        "they win over .claude/agents",
        "owner_pid": "bring the team down when this process ends, however it ends (0: never)",
    }

    def checked(self) -> SupervisorOptions:
        from ipc.agents import parse_json_definitions  # YAML and rules: not on every command's start

        check_permission_mode(self.lead_permission_mode)
        parse_json_definitions(self.agents)
        if self.claude_peers and not os.path.isdir(os.path.expanduser(self.claude_peers)):
            raise InvalidInput(
                f"--claude-peers {self.claude_peers!r} is not a directory; give a Claude Code config dir"
            )
        for name, value, least in (
            ("fallback-poll", self.fallback_poll, "above 0"),
            ("period", self.period, "above 0"),
        ):
            if not value > 0:  # NaN too
                raise InvalidInput(f"--{name} {value:g}: give a number of seconds {least}")
        server_dir = os.path.dirname(self.tmux_server) if "/" in self.tmux_server else ""
        if server_dir and not os.path.isdir(server_dir):
            raise InvalidInput(
                f"--tmux-server {self.tmux_server!r}: no directory {server_dir!r} for its socket; "
                "give a socket name (tmux -L) or a path in an existing directory (tmux -S)"
            )
        if self.owner_pid and (self.owner_pid < 0 or not os.path.exists(f"/proc/{self.owner_pid}")):
            raise InvalidInput(f"--owner-pid {self.owner_pid}: no such process; give a running process's pid")
        if self.intensity < 0:
            raise InvalidInput(
                f"--intensity {self.intensity}: give the restarts allowed per period, 0 or more"
            )
        checked = self
        if self.claude_peers:  # the supervisor's cwd is not the caller's
            checked = msgspec.structs.replace(
                checked, claude_peers=os.path.abspath(os.path.expanduser(self.claude_peers))
            )
        if self.teammate_mode == "auto":  # decided where the caller is, once
            inside = bool(os.environ.get("TMUX"))
            checked = msgspec.structs.replace(checked, teammate_mode="tmux" if inside else "process")
        if checked.teammate_mode == "tmux" and not checked.tmux_pane and not checked.tmux_server:
            checked = msgspec.structs.replace(checked, tmux_pane=os.environ.get("TMUX_PANE", ""))
        return checked

    def to_argv(self) -> list[str]:
        return _to_argv(self, tuple(self.__struct_fields__), always=True)

    @classmethod
    def from_argv(cls, argv: list[str]) -> SupervisorOptions:
        return _convert(
            _from_argv(_fields(cls, tuple(cls.__struct_fields__)), argv), cls, "supervisor options"
        ).checked()


def agents_json(value: Any) -> str:
    """``agents`` (Claude Code's ``--agents``) as JSON text: a dict, the Python API's form,
    is written as JSON; the text is checked by :meth:`SupervisorOptions.checked`."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return value
    raise InvalidInput(
        f"agents must be JSON text or a dict of agent names to definitions, not {type(value).__name__}"
    )


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


def _fields(cls: type[msgspec.Struct], names: tuple[str, ...]) -> dict[str, msgspec.structs.FieldInfo]:
    return {f.name: f for f in struct_fields(cls) if f.name in names}


def _to_argv(obj: msgspec.Struct, names: tuple[str, ...], always: bool = False) -> list[str]:
    """``names`` as flags: a false boolean, and an optional field that is empty or None,
    left out (unless ``always``: then ``--no-NAME`` for a false boolean)."""
    required = {f.name for f in struct_fields(type(obj)) if f.required}
    argv: list[str] = []
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool):
            if value:
                argv.append(_flag(name))
            elif always:
                argv.append("--no-" + name.replace("_", "-"))
        elif value is not None and (value != "" or always or name in required):
            argv += [_flag(name), _text(value)]
    return argv


def _from_argv(fields: Mapping[str, msgspec.structs.FieldInfo], argv: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        negated = token.startswith("--no-")
        name = (token[5:] if negated else token[2:]).replace("-", "_") if token.startswith("--") else ""
        field = fields.get(name)
        if field is None:
            known = " ".join(_flag(n) for n in fields)
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
