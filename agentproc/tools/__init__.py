"""Tools an agent's model can call, filtered by its agent type, behind its permission policy."""

from __future__ import annotations

from typing import Any

from agentproc.context import AgentContext
from agentproc.tools.agent import AGENT, TASK_OUTPUT, TASK_STOP
from agentproc.tools.base import Decision, PermissionPolicy, Tool, ToolBox, ToolFailure, ToolResult
from agentproc.tools.bash import BASH
from agentproc.tools.files import EDIT, GLOB, GREP, READ, WRITE
from agentproc.tools.plan import ENTER_PLAN_MODE, EXIT_PLAN_MODE
from agentproc.tools.team import SEND_MESSAGE, TASK_CREATE, TASK_GET, TASK_LIST, TASK_UPDATE
from agentproc.tools.web import WEB_FETCH
from ipc.agents import AgentDefinition, allowed_tools

ALL_TOOLS: list[Tool[Any]] = [
    SEND_MESSAGE,
    TASK_CREATE,
    TASK_GET,
    TASK_UPDATE,
    TASK_LIST,
    BASH,
    READ,
    WRITE,
    EDIT,
    GLOB,
    GREP,
    WEB_FETCH,
    ENTER_PLAN_MODE,
    EXIT_PLAN_MODE,
    AGENT,
    TASK_OUTPUT,
    TASK_STOP,
]


def toolbox_for(
    ctx: AgentContext,
    definition: AgentDefinition,
    policy: PermissionPolicy,
    extra: list[Tool[Any]] | None = None,
) -> ToolBox:
    """The tools ``definition`` allows, plus ``extra`` (the lead's own), checked by ``policy``."""
    names = set(allowed_tools(definition))
    return ToolBox(ctx, [*(t for t in ALL_TOOLS if t.name in names), *(extra or [])], policy)


__all__ = [
    "ALL_TOOLS",
    "Decision",
    "PermissionPolicy",
    "Tool",
    "ToolBox",
    "ToolFailure",
    "ToolResult",
    "toolbox_for",
]
