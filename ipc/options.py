"""What a caller asks for, checked before anything is written: a teammate
(:class:`TeammateOptions`), a subagent (:class:`SubagentOptions`), and the permission modes."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from ipc.engine.marker import host_name
from ipc.errors import InvalidInput
from ipc.model_specs import check_effort, check_model, claude_code_model
from ipc.paths import normalise_agent_name
from ipc.permission_rules import parse_tool_list

Backend = Literal["process", "claude-code", "tmux", "in-process"]
SpawnBackend = Literal["", "process", "claude-code", "tmux", "in-process"]  # "": the team's --teammate-mode
Isolation = Literal["none", "worktree"]  # worktree: its own git worktree of the team's cwd
# delegate: Claude Code's lead that coordinates only (its teammates do the work).
PERMISSION_MODES: tuple[str, ...] = (
    "default",
    "acceptEdits",
    "bypassPermissions",
    "plan",
    "dontAsk",
    "delegate",
)


def check_permission_mode(mode: str) -> str:
    if mode and mode not in PERMISSION_MODES:
        raise InvalidInput(f"permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}")
    return mode


def runs_claude_code(backend: str, model: str) -> bool:
    """The teammate is the real ``claude``: the ``claude-code`` backend (a hidden terminal),
    or a ``claude-code[:MODEL]`` model in a tmux pane (``--backend tmux``)."""
    return backend == "claude-code" or model.startswith("claude-code")


class TeammateOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A teammate as a caller asks for it."""

    name: str
    # No prompt is a teammate that starts idle: it takes tasks from the list and answers messages.
    prompt: Annotated[
        str,
        msgspec.Meta(
            description="its first message, from the lead; '' for none: it starts idle, takes tasks "
            "from the list and answers messages"
        ),
    ] = ""
    model: str = "offline"
    agent_type: str = "general-purpose"
    plan_mode_required: bool = False
    permission_mode: str = ""
    cwd: str = ""
    backend: SpawnBackend = ""
    host: str = ""  # the host to run it on, in a team on the engine ("": this one)
    rename: bool = False  # a taken name gets -2, -3… instead of being refused
    isolation: Isolation = "none"
    # Claude Code's --allowedTools / --disallowedTools ("Bash(git:*) Edit"): allow rules;
    # tools withheld (bare names) and deny rules (patterns).
    allowed_tools: str = ""
    disallowed_tools: str = ""
    effort: str = ""  # the Messages API's output_config.effort (wins over its definition's)

    def checked(self) -> TeammateOptions:
        """These options with the name normalised; InvalidInput (nothing written) if any
        field is wrong. The agent type and cwd are checked by the supervisor, which knows
        the team's project directory."""
        if self.prompt and not self.prompt.strip():  # it would be the first message, and say nothing
            raise InvalidInput(
                "a prompt of only blanks; give the teammate its goal, or no prompt ('') for one "
                "that starts idle and takes tasks from the list"
            )
        check_model(self.model)
        check_permission_mode(self.permission_mode)
        check_effort(self.effort)
        for flag, value in (
            ("allowed_tools", self.allowed_tools),
            ("disallowed_tools", self.disallowed_tools),
        ):
            try:
                parse_tool_list(value, flag)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        # A claude-code model runs the real `claude`: in its hidden terminal, or in a tmux pane.
        claude = self.model.startswith("claude-code")
        backend = "claude-code" if claude and self.backend != "tmux" else self.backend
        if runs_claude_code(backend, self.model) and claude_code_model(self.model) is None:
            raise InvalidInput(
                f"a claude-code teammate runs Claude models; model {self.model!r} is not one (use sonnet, opus, haiku or a Claude model id)"
            )
        if self.host:
            host_name(self.host)  # refused, never rewritten into another host's name
        return msgspec.structs.replace(self, name=normalise_agent_name(self.name), backend=backend)


class SubagentOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A subagent as its parent asks for it (the Agent tool without a teammate name)."""

    parent: str
    prompt: str
    description: str = ""
    agent_type: str = "general-purpose"
    model: str = "inherit"
    parent_model: str = ""  # what ``inherit`` means: the parent's own model
    permission_mode: str = ""  # forced on it (a planning or bypassing parent's), else its definition's
    parent_permission_mode: str = ""  # the parent's mode now: what a definition without one gets
    resume: str = ""  # the id of an ended subagent of the parent's to continue from its sidechain
    name: str = ""  # what its parent calls it (SendMessage finds it by it)
    tool_use_id: str = ""  # the parent's Agent call
    background: bool = False
    fork: bool = (
        False  # a fork of its parent: the parent's conversation up to tool_use_id, its tools, its model
    )
    bubble: bool = False  # its permission requests go up to its parent (a fork's always do)
