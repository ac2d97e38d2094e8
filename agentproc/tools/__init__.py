"""Tools a teammate's model can call, filtered by its agent type."""

from __future__ import annotations

from agentproc.agents import AgentDefinition, allowed_tools
from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolBox, ToolFailure, ToolResult
from agentproc.tools.bash import BASH
from agentproc.tools.files import EDIT, GLOB, GREP, READ, WRITE
from agentproc.tools.plan import EXIT_PLAN_MODE
from agentproc.tools.team import SEND_MESSAGE, TASK_CREATE, TASK_GET, TASK_LIST, TASK_UPDATE

ALL_TOOLS: list[Tool] = [
    SEND_MESSAGE, TASK_CREATE, TASK_GET, TASK_UPDATE, TASK_LIST,
    BASH, READ, WRITE, EDIT, GLOB, GREP, EXIT_PLAN_MODE,
]


def toolbox_for(ctx: AgentContext, definition: AgentDefinition) -> ToolBox:
    names = set(allowed_tools(definition))
    return ToolBox(ctx, [t for t in ALL_TOOLS if t.name in names])


__all__ = ["ALL_TOOLS", "Tool", "ToolBox", "ToolFailure", "ToolResult", "toolbox_for"]
