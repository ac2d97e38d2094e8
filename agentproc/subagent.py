"""A subagent's process, as Claude Code runs a subagent: one conversation on the prompt its
parent gave, with its agent definition's tools, then its final text recorded for the parent,
who is woken.

It is not a member of the team and has no inbox; its transcript lines go into its parent's
transcript as a sidechain. What would need approval is denied, not asked: a subagent has no
one of its own to ask (Claude Code denies a background subagent's requests the same way).
"""

from __future__ import annotations

from agentproc.channel import Channel
from agentproc.models import Model, Turn
from agentproc.permissions import NoAskPolicy
from agentproc.runner import AgentRunner
from ipc import subagents
from ipc.launch import LaunchSpec
from ipc.schemas import LEAD_NAME
from ipc.wake import LEAD_AGENT

DELEGATION = ("Agent", "TaskOutput", "TaskStop")


class SubagentRun(AgentRunner):
    def __init__(self, spec: LaunchSpec, channel: Channel, model: Model | None = None) -> None:
        # A subagent gets no delegation tools: the roster is flat (Claude Code does the same).
        super().__init__(spec, channel, policy=NoAskPolicy(), model=model, withheld=DELEGATION)

    def run(self) -> int:
        self.hello()
        record = subagents.read(self.ctx.paths, self.name)
        turn = Turn(kind="user", text=record.prompt, sender=self.spec.parent, content=record.prompt)
        self.ctx.channel.state("running")
        outcome = self.take_turn(turn)  # a failed turn ends this subagent as failed, told to its parent
        if outcome.failure_reason:
            subagents.finish(self.ctx.paths, self.name, "failed", error=outcome.failure_reason)
        else:
            subagents.finish(self.ctx.paths, self.name, "completed", result=outcome.final_text)
        waker = self.ctx.channel.waker()
        if waker is not None:  # the supervisor also wakes the parent when we are reaped; this is sooner
            waker.wake(LEAD_AGENT if self.spec.parent == LEAD_NAME else self.spec.parent)
        self.ctx.close()
        return 0
