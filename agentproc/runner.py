"""What every agent runner sets up the same way (a teammate's loop, the lead's, a subagent's
one turn): its context, permission mode, transcript, tools and model; and the one guarded
turn, so that a bug in a model ends that turn as failed, never the process."""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any

from agentproc import checkins, hooks, pane, subagents
from agentproc.channel import Channel
from agentproc.context import AgentContext
from agentproc.mcp_servers import McpServers
from agentproc.models import Model, ModelContext, Turn, TurnOutcome, load_model
from agentproc.tools import PermissionPolicy, Tool, ToolBox, toolbox_for
from agentproc.tools.agent import TASK_BACKGROUND
from agentproc.transcript import Transcript
from ipc import claude_settings
from ipc.agents import AgentDefinition
from ipc.agents import resolve as resolve_agent_type
from ipc.definition_context import memory_dir
from ipc.errors import Halted
from ipc.launch import LaunchSpec
from ipc.permission_rules import parse_tool_list

log = logging.getLogger("agentteams.agent")


class AgentRunner:
    """One agent's setup for its process lifetime. ``withheld`` tools are taken from its
    agent definition; ``extra`` tools are added to it."""

    def __init__(
        self,
        spec: LaunchSpec,
        channel: Channel,
        *,
        policy: PermissionPolicy,
        model: Model | None = None,
        extra: tuple[Tool[Any], ...] = (),
        withheld: tuple[str, ...] = (),
    ) -> None:
        self.spec = spec
        self.ctx = AgentContext(spec=spec, channel=channel)
        definition = resolve_agent_type(spec.agent_type, self.ctx.cwd, spec.agents)
        allowed = parse_tool_list(spec.allowed_tools, "--allowed-tools")
        disallowed = parse_tool_list(spec.disallowed_tools, "--disallowed-tools")
        withheld = (*withheld, *(r.tool for r in disallowed if r.specifier is None))
        if withheld:
            definition = dataclasses.replace(
                definition, disallowed_tools=(*definition.disallowed_tools, *withheld)
            )
        # A mode given on the command line wins, then the agent definition's, then the
        # settings files' defaultMode; an agent given none accepts edits inside its cwd
        # (see agentproc.permissions).
        settings = claude_settings.load(self.ctx.cwd)
        own_mode = definition.permission_mode if definition.permission_mode != "bubble" else None
        self.ctx.permission_mode = spec.permission_mode or own_mode or settings.default_mode or "acceptEdits"
        self.ctx.rules = settings.rules
        self.ctx.rules.add("deny", [*definition.denied, *(r for r in disallowed if r.specifier)])
        self.ctx.rules.add("allow", allowed)
        self.ctx.scopes = definition.scopes
        self.ctx.hooks = hooks.merged(settings.hooks, definition.hooks, subagent=spec.role == "subagent")
        self.ctx.directories = [self.ctx.resolve(d) for d in settings.directories]
        memory = memory_dir(definition, self.ctx.cwd)
        if memory is not None:  # its own memory is read and written without asking
            memory.mkdir(parents=True, exist_ok=True)
            self.ctx.directories.append(memory.resolve())
        self.ctx.plan_mode = spec.plan_mode_required
        self.transcript = _transcript(self.ctx, spec)
        self.ctx.transcript = self.transcript
        self.tools: ToolBox = toolbox_for(self.ctx, definition, policy, extra=list(extra))
        self.mcp = McpServers()  # the definition's mcpServers: their tools join the others
        self.mcp.start(self.ctx, definition)
        self.tools.tools.update(
            (t.name, t) for t in self.mcp.tools if t.name not in definition.disallowed_tools
        )
        model_spec = definition.model if spec.model == "inherit" and definition.model else spec.model
        try:
            self.model = model or load_model(model_spec, ModelContext(spec, definition, self.transcript))
        except BaseException:
            self.mcp.close()  # an agent that does not start leaves no server behind
            raise
        self.ctx.model_spec = model_spec
        self.ctx.request_base = lambda: (str(getattr(self.model, "system", "")), self.tools.schemas())
        self.ctx.tool_named = lambda name: self.tools.tools.get(name)
        self._check_ins(definition)
        if pane.in_pane(spec):
            self.ctx.show = pane.show
            pane.show(f"{spec.agent_name}@{spec.team_name} ({spec.model}) in {spec.cwd}", "●")
        # initialPrompt goes before the first turn of a conversation (not of a restart's).
        fresh = definition.initial_prompt and not self.transcript.messages()
        self.initial_prompt = definition.initial_prompt if fresh else ""

    def _check_ins(self, definition: AgentDefinition) -> None:
        """Check-ins on the synchronous subagents it waits for, when its model can answer one
        and it can start subagents: TaskBackground joins its tools for good (a check-in's
        request carries the same tool definitions as its turns', to read their cache)."""
        every = checkins.interval(definition.subagent_check_in)
        answer = getattr(self.model, "check_in", None)
        if (
            every is None
            or not callable(answer)
            or self.spec.role == "subagent"
            or "Agent" not in self.tools.tools
            or TASK_BACKGROUND.name in definition.disallowed_tools
        ):
            return
        self.ctx.check_in = lambda check: bool(answer(check, self.tools))
        self.ctx.check_in_every = every
        self.tools.tools[TASK_BACKGROUND.name] = TASK_BACKGROUND

    @property
    def name(self) -> str:
        return self.spec.agent_name

    def close(self) -> None:
        """Stop what this agent started for its life (its definition's MCP servers): at its
        process's exit anyway, but an in-process teammate's host lives on after it."""
        self.mcp.close()

    def hello(self) -> None:
        """Tell the supervisor this agent runs (its spawn succeeded)."""
        self.ctx.channel.hello(self.name, os.getpid())

    def take_turn(self, turn: Turn) -> TurnOutcome:
        """The model's turn on ``turn``, its input recorded first (the model records its own
        replies). An exception from the model ends the turn as failed, with the error as
        its reason, so the runner reports it as it reports any failed turn."""
        if self.initial_prompt:
            turn = dataclasses.replace(turn, text=f"{self.initial_prompt}\n\n{turn.text}")
            self.initial_prompt = ""
        self.transcript.append("user", turn.text)
        if turn.notifies is not None:
            # Told once it is in the transcript, not before: a crash between the two tells the
            # restarted agent again (subagents.take_up), where the other order would lose it.
            subagents.mark_notified(self.ctx, turn.notifies)
        show = self.ctx.show
        if show is not None:
            origin = f"from {turn.sender}" if turn.sender else turn.kind
            show(f"{origin}: {turn.content or turn.text}", "▶")
        try:
            outcome = self.model.run_turn(turn, self.tools)
        except Halted as exc:
            log.info("%s: %s; the turn ends there", self.name, exc.message)
            return TurnOutcome(halted=True)
        except Exception as exc:
            log.exception("%s: turn failed", self.name)
            outcome = TurnOutcome(failure_reason=f"{type(exc).__name__}: {exc}")
        if show is not None:
            if outcome.failure_reason:
                show(f"turn failed: {outcome.failure_reason}", "✖")
            else:
                show(outcome.final_text or "turn done", "◀")
        return outcome


def _transcript(ctx: AgentContext, spec: LaunchSpec) -> Transcript:
    """A subagent writes into its parent's transcript, as a sidechain (as Claude Code keeps
    subagent conversations); every other agent into its own."""
    if spec.role == "subagent":
        return Transcript(ctx.paths, spec.parent, sidechain=spec.agent_name)
    return Transcript(ctx.paths, spec.agent_name)
