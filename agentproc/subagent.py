"""A subagent's process, as Claude Code runs a subagent: one conversation on the prompt its
parent gave, with its agent definition's tools, then its final text recorded for the parent,
who is woken.

It is not a member of the team and has no inbox; its transcript lines go into its parent's
transcript as a sidechain. What would need approval is denied, not asked: a subagent has no
one of its own to ask (Claude Code denies a background subagent's requests the same way).
"""

from __future__ import annotations

from agentproc import hooks
from agentproc.channel import Channel
from agentproc.models import Model, Turn
from agentproc.permissions import NoAskPolicy
from agentproc.runner import AgentRunner
from ipc import subagents
from ipc.launch import LaunchSpec
from ipc.schemas import LEAD_NAME
from ipc.wake import LEAD_AGENT

DELEGATION = ("Agent", "TaskOutput", "TaskStop")
MAX_STOP_BLOCKS = 5  # then it ends anyway, as a teammate goes idle after as many TeammateIdle blocks


class SubagentRun(AgentRunner):
    def __init__(self, spec: LaunchSpec, channel: Channel, model: Model | None = None) -> None:
        # A subagent gets no delegation tools: the roster is flat (Claude Code does the same).
        super().__init__(spec, channel, policy=NoAskPolicy(), model=model, withheld=DELEGATION)

    def run(self) -> int:
        self.hello()
        record = subagents.read(self.ctx.paths, self.name)
        about = {"agent_id": self.name, "agent_type": self.spec.agent_type}
        started = hooks.run(self.ctx, "SubagentStart", about)  # what it adds, the subagent is told
        prompt = f"{record.prompt}\n\n{started.context}" if started.context else record.prompt
        turn = Turn(kind="user", text=prompt, sender=self.spec.parent, content=record.prompt)
        self.ctx.channel.state("running")
        outcome = self.take_turn(turn)  # a failed turn ends this subagent as failed, told to its parent
        for again in range(MAX_STOP_BLOCKS):  # SubagentStop exit 2: it goes on, told why
            if outcome.failure_reason:
                break
            stop = hooks.run(
                self.ctx,
                "SubagentStop",
                {**about, "stop_hook_active": again > 0, "last_assistant_message": outcome.final_text},
            )
            if not stop.blocked:
                break
            outcome = self.take_turn(Turn(kind="user", text=stop.feedback, content=stop.feedback))
        if outcome.failure_reason:
            subagents.finish(self.ctx.paths, self.name, "failed", error=outcome.failure_reason)
        else:
            subagents.finish(self.ctx.paths, self.name, "completed", result=outcome.final_text)
        waker = self.ctx.channel.waker()
        if waker is not None:  # the supervisor also wakes the parent when we are reaped; this is sooner
            waker.wake(LEAD_AGENT if self.spec.parent == LEAD_NAME else self.spec.parent)
        self.ctx.close()
        return 0
