"""Fork workers, as Claude Code's AgentTool fork: a subagent that goes on from its parent's
conversation (up to the Agent call that forked it), with its parent's system prompt, tool
definitions and model, so that its first request begins with the very prefix its parent's
requests wrote to the prompt cache and reads it from there.

Like Claude Code's ``buildForkedMessages``: the parent's assistant message that made the
call, then one user message answering each of its tool calls with the same placeholder and
ending with the fork's directive; only the directive differs between forks of one message.
The fork keeps its parent's tool definitions (changing them would change the prefix) but
cannot fork again: its Agent calls are refused.
"""

from __future__ import annotations

from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.base import PermissionPolicy, Tool, ToolBox
from agentproc.transcript import Transcript
from ipc import subagents
from ipc.launch import LaunchSpec
from ipc.replies import SubagentResult

PLACEHOLDER = "Fork started: processing in the background"
BOILERPLATE = (
    "<fork-boilerplate>\n"
    "You are a fork worker: a copy of the agent whose conversation is above, started by its Agent "
    "call to do one task, in the background. You are not that agent and cannot fork or start agents "
    "yourself: do the task below with your tools, then end with your final answer, which is all "
    "your parent receives (as a <task-notification>).\n"
    "</fork-boilerplate>"
)
NO_FORK = "a fork worker cannot fork again (nor start other agents): do the task yourself"


def directive(prompt: str) -> str:
    return f"{BOILERPLATE}\n\n{prompt}"


def seed(spec: LaunchSpec, record: SubagentResult) -> None:
    """Write the fork's start into its sidechain (once: a resumed fork goes on from there):
    its parent's conversation through the forking call, and the placeholder answers."""
    own = Transcript(spec.team_paths(), spec.parent, sidechain=spec.agent_name)
    if own.messages():
        return
    messages = Transcript(spec.team_paths(), spec.parent).through(record.fork_call)
    calls = messages[-1]["content"]
    answers = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": PLACEHOLDER}
        for b in calls
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    own.compaction(
        f"(forked from {spec.parent}'s conversation)", [*messages, {"role": "user", "content": answers}], 0
    )


class ForkToolBox(ToolBox):
    """The tools a fork runs, shown to its model as its parent's were (the same definitions,
    in the same order); a call of a tool it cannot run is an error the model reads."""

    def __init__(
        self, ctx: AgentContext, tools: list[Tool[Any]], policy: PermissionPolicy, shown: list[dict[str, Any]]
    ) -> None:
        super().__init__(ctx, tools, policy)
        self.shown = shown

    def schemas(self) -> list[dict[str, Any]]:
        return self.shown


def base_of(spec: LaunchSpec, record: SubagentResult) -> subagents.ForkBase:
    return subagents.read_fork_base(spec.team_paths(), spec.parent, record.fork_call)
