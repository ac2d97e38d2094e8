"""Tools a teammate's model can call, and which agent types may call which."""

from __future__ import annotations

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolBox, ToolFailure, ToolResult
from agentproc.tools.bash import BASH
from agentproc.tools.team import SEND_MESSAGE, TASK_CREATE, TASK_GET, TASK_LIST, TASK_UPDATE

ALL_TOOLS: list[Tool] = [SEND_MESSAGE, TASK_CREATE, TASK_GET, TASK_UPDATE, TASK_LIST, BASH]


def toolbox_for(ctx: AgentContext) -> ToolBox:
    """The tools of the teammate's agent type (`Bash` agents get only Bash)."""
    agent_type = ctx.identity.agent_type
    if agent_type == "Bash":
        tools = [BASH]
    elif agent_type in ("Explore", "Plan"):
        tools = [t for t in ALL_TOOLS if t.read_only or t.name == "SendMessage"]
    else:
        tools = ALL_TOOLS
    return ToolBox(ctx, tools)


__all__ = ["ALL_TOOLS", "Tool", "ToolBox", "ToolFailure", "ToolResult", "toolbox_for"]
