"""A subagent's process, as Claude Code runs a subagent: one conversation on the prompt its
parent gave, with its agent definition's tools, then its final text recorded for the parent,
who is woken.

It is not a member of the team and has no inbox: what its parent sends it (SendMessage) is
queued in its result file and is its next turn; once it has ended, a message or ``Agent
{resume}`` starts it again from its sidechain (its lines in its parent's transcript). What
would need approval goes up to its parent when its requests bubble (a fork's always do:
agentproc.bubble), else it is denied, saying why (Claude Code denies a background subagent's
requests the same way). A fork starts from its parent's conversation (agentproc.fork).
"""

from __future__ import annotations

from agentproc import fork, hooks
from agentproc.bubble import BubblePolicy
from agentproc.channel import Channel
from agentproc.models import Model, Turn, TurnOutcome, wrap_message
from agentproc.permissions import ModePolicy, NoAskPolicy
from agentproc.runner import AgentRunner
from ipc import subagents
from ipc.launch import LaunchSpec
from ipc.schemas import LEAD_NAME
from ipc.usage import ledger_path, read_ledger
from ipc.wake import LEAD_AGENT

DELEGATION = ("Agent", "TaskOutput", "TaskStop")
MAX_STOP_BLOCKS = 5  # then it ends anyway, as a teammate goes idle after as many TeammateIdle blocks


class SubagentRun(AgentRunner):
    def __init__(self, spec: LaunchSpec, channel: Channel, model: Model | None = None) -> None:
        base = None
        if spec.fork:  # before the model reads its conversation: it starts as its parent's
            record = subagents.read(spec.team_paths(), spec.agent_name)
            base = fork.base_of(spec, record)
            fork.seed(spec, record)
        # A subagent gets no delegation tools: the roster is flat (Claude Code does the same).
        # A fork keeps its parent's (their definitions are part of the prefix) but they refuse.
        # Its permission requests go up to its parent (a fork's always), else what would ask is denied.
        policy: ModePolicy = BubblePolicy() if spec.bubble else NoAskPolicy()
        super().__init__(spec, channel, policy=policy, model=model, withheld=() if base else DELEGATION)
        if base is not None:
            self.tools = fork.ForkToolBox(self.ctx, list(self.tools.tools.values()), policy, base.tools)
            if isinstance(getattr(self.model, "system", None), str):
                self.model.system = base.system  # type: ignore[attr-defined]
            self.initial_prompt = ""

    def run(self) -> int:
        self.hello()
        record = subagents.read(self.ctx.paths, self.name)
        about = {"agent_id": self.name, "agent_type": self.spec.agent_type}
        started = hooks.run(self.ctx, "SubagentStart", about)  # what it adds, the subagent is told
        prompt = f"{record.prompt}\n\n{started.context}" if started.context else record.prompt
        if self.spec.fork:
            prompt = fork.directive(prompt)
        turn = Turn(kind="user", text=prompt, sender=self.spec.parent, content=record.prompt)
        self.ctx.channel.state("running")
        while True:
            outcome = self._until_stopped(turn, about)
            if outcome.failure_reason:
                subagents.finish(
                    self.ctx.paths,
                    self.name,
                    "failed",
                    error=outcome.failure_reason,
                    result=self._partial(),
                    tokens=self._tokens(),
                    tool_uses=self.ctx.tool_uses,
                )
                break
            # What its parent sent meanwhile is its next turn; with nothing, it has ended.
            queued = subagents.take_or_finish(
                self.ctx.paths,
                self.name,
                result=outcome.final_text,
                tokens=self._tokens(),
                tool_uses=self.ctx.tool_uses,
            )
            if not queued:
                break
            text = "\n\n".join(wrap_message(self.spec.parent, q) for q in queued)
            turn = Turn(kind="message", text=text, sender=self.spec.parent, content="\n\n".join(queued))
        waker = self.ctx.channel.waker()
        if waker is not None:  # the supervisor also wakes the parent when we are reaped; this is sooner
            waker.wake(LEAD_AGENT if self.spec.parent == LEAD_NAME else self.spec.parent)
        self.ctx.close()
        return 0

    def _until_stopped(self, turn: Turn, about: dict[str, str]) -> TurnOutcome:
        """A turn, and again while a SubagentStop hook (exit 2) sends it back, told why."""
        outcome = self.take_turn(turn)  # a failed turn ends this subagent as failed, told to its parent
        for again in range(MAX_STOP_BLOCKS):
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
        return outcome

    def _tokens(self) -> int:
        """Every token its requests used, over all its runs (its usage ledger)."""
        name = f"{self.spec.parent}.{self.spec.subagent_id}"
        return sum(t.total for t in read_ledger(ledger_path(self.ctx.paths, name)).values())

    def _partial(self) -> str:
        """What it had said when it failed: its latest text, for its parent to use."""
        for message in reversed(self.transcript.messages()):
            content = message.get("content")
            if message.get("role") == "assistant" and isinstance(content, list):
                said = "".join(
                    b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
                )
                if said.strip():
                    return said
        return ""
