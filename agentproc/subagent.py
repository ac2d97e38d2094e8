"""A subagent's process (seed 002, SPEC §12): one conversation on the prompt its parent gave,
with its agent definition's tools, then its final text recorded for the parent, who is woken.

It is not a member of the team and has no inbox; its transcript lines go into its parent's
transcript as a sidechain. What would need approval is denied, not asked: a subagent has no
one of its own to ask (Claude Code denies a background subagent's requests the same way).
"""

from __future__ import annotations

import dataclasses
import logging
import os

from agentproc.channel import Channel
from agentproc.context import AgentContext
from agentproc.models import Model, ModelContext, Turn, TurnOutcome, load_model
from agentproc.permissions import NoAskPolicy
from agentproc.tools import toolbox_for
from agentproc.transcript import Transcript
from ipc import subagents
from ipc.agents import resolve as resolve_agent_type
from ipc.launch import LaunchSpec
from ipc.schemas import LEAD_NAME
from ipc.wake import LEAD_AGENT

log = logging.getLogger("agentteams.subagent")
DELEGATION = ("Agent", "TaskOutput", "TaskStop")


class SubagentRun:
    def __init__(self, spec: LaunchSpec, channel: Channel, model: Model | None = None) -> None:
        self.spec = spec
        self.ctx = AgentContext(spec=spec, channel=channel)
        # A subagent gets no delegation tools: the roster is flat (Claude Code does the same).
        definition = resolve_agent_type(spec.agent_type, self.ctx.cwd)
        definition = dataclasses.replace(
            definition, disallowed_tools=(*definition.disallowed_tools, *DELEGATION)
        )
        self.ctx.permission_mode = spec.permission_mode or definition.permission_mode or "acceptEdits"
        self.ctx.transcript = Transcript(self.ctx.paths, spec.parent, sidechain=spec.agent_name)
        self.tools = toolbox_for(self.ctx, definition, NoAskPolicy())
        self.model = model or load_model(spec.model, ModelContext(spec, definition, self.ctx.transcript))

    def run(self) -> int:
        self.ctx.channel.hello(self.spec.agent_name, os.getpid())
        record = subagents.read(self.ctx.paths, self.spec.agent_name)
        turn = Turn(kind="user", text=record.prompt, sender=self.spec.parent, content=record.prompt)
        assert self.ctx.transcript is not None
        self.ctx.transcript.append("user", turn.text)
        self.ctx.channel.state("running")
        try:
            outcome = self.model.run_turn(turn, self.tools)
        except Exception as exc:  # a model bug ends this subagent as failed, told to its parent
            log.exception("%s: turn failed", self.spec.agent_name)
            outcome = TurnOutcome(failure_reason=f"{type(exc).__name__}: {exc}")
        if outcome.failure_reason:
            subagents.finish(self.ctx.paths, self.spec.agent_name, "failed", error=outcome.failure_reason)
        else:
            subagents.finish(self.ctx.paths, self.spec.agent_name, "completed", result=outcome.final_text)
        waker = self.ctx.channel.waker()
        if waker is not None:  # the supervisor also wakes the parent when we are reaped; this is sooner
            waker.wake(LEAD_AGENT if self.spec.parent == LEAD_NAME else self.spec.parent)
        self.ctx.close()
        return 0
