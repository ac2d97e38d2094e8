"""The system prompts a language model gets, one per role, after Claude Code's: what it is,
who it talks to and how, and how its work ends."""

from __future__ import annotations

from pathlib import Path

from ipc.agents import AgentDefinition
from ipc.claude_md import claude_md_context
from ipc.config import TeamConfigStore
from ipc.definition_context import memory_context, skills_context
from ipc.errors import AgentTeamsError
from ipc.launch import LaunchSpec


def _teammate(spec: LaunchSpec) -> list[str]:
    parts = [
        f"You are {spec.agent_name}, a teammate in the agent team '{spec.team_name}' (agent id {spec.agent_id}). "
        "The lead is 'team-lead'. You share a task list with your teammates and talk to them only with the "
        "SendMessage tool; your plain text output is not seen by anyone.",
        "Your duties: claim and work through open tasks (TaskList, TaskUpdate with owner and status); mark a task "
        "completed only when it is really done; report results to team-lead with SendMessage (type 'message', with a "
        "short summary); answer teammates' messages; when you receive a shutdown_request, answer it with SendMessage "
        "type 'shutdown_response', its request_id and approve=true unless you are in the middle of something that "
        "must finish.",
        f"Messages from teammates arrive wrapped in <teammate-message> tags. Your working directory is {spec.cwd}.",
    ]
    if spec.plan_mode_required:
        parts.append(
            "You start in plan mode: read-only. Write a plan and submit it with ExitPlanMode; act only after it is approved."
        )
    return parts


def _subagent(spec: LaunchSpec) -> list[str]:
    return [
        f"You are a subagent ({spec.agent_name}) started by {spec.parent} of the agent team '{spec.team_name}' "
        "for one task: the user message. Do it with your tools, then end your turn with your final answer: that "
        f"final message is all {spec.parent} receives, so make it complete and self-contained.",
        f"You cannot spawn teammates or subagents. Your working directory is {spec.cwd}.",
    ]


def _lead(spec: LaunchSpec) -> list[str]:
    return [
        f"You are team-lead, the lead of the agent team '{spec.team_name}'. The team exists and its supervisor "
        "runs; you are handed a goal by the user. You do the work through teammates: plan it, split it into tasks "
        "and lead the team to the end.",
        "How: create tasks with TaskCreate (one per unit of work; put a shell command a teammate should run in "
        "metadata.command when there is one) and order them with TaskUpdate addBlockedBy; spawn teammates with the "
        "Agent tool, giving a 'name' (and 'prompt' with their instructions, optional 'subagent_type', 'model', "
        "'mode'). Teammates claim open tasks themselves; assign one with TaskUpdate owner when it matters who does "
        "it. Talk to teammates only with SendMessage; they cannot see your plain text. For a quick job of your own, "
        "use the Agent tool without 'name': a subagent whose final answer is the tool result.",
        "Teammates' messages arrive as your turns, wrapped in <teammate-message> tags, and so do events: a "
        "teammate going idle, a plan approval request (answer with SendMessage type 'plan_approval_response', its "
        "recipient and request_id, approve true, or false with your feedback in 'content'), a permission request "
        "(answer with SendMessage type 'permission_response', recipient, request_id, approve, and always=true to "
        "let calls like it run from then on), a teammate that "
        "has terminated. Check TaskList as reports arrive.",
        "When all tasks are completed (or cannot be), send each teammate a SendMessage of type 'shutdown_request', "
        "wait until each has shut down, call TeamDelete, and end with your final answer to the user: what was "
        "done, and anything that failed.",
        f"Your working directory is {spec.cwd}.",
    ]


def team_context(spec: LaunchSpec) -> str:
    """The team as a teammate is told of it: its name, its members when the agent started,
    and where the config and task list are (for the current roster and tasks)."""
    paths = spec.team_paths()
    try:
        config = TeamConfigStore(spec.root, spec.team_name).read()
        members = ", ".join(
            f"{m.name} ({m.agent_type})" if isinstance(m.agent_type, str) else m.name for m in config.members
        )
    except AgentTeamsError:
        members = "(the config could not be read)"
    return (
        f"# Team context\nTeam: {spec.team_name}. Members when you started: {members}.\n"
        f"Current members: {paths.config}. Tasks: {paths.tasks_dir}."
    )


def system_prompt(spec: LaunchSpec, definition: AgentDefinition) -> str:
    """The role's prompt, the agent definition's, the team context (a subagent is not a
    member), the definition's memory and skills, and the CLAUDE.md files of the working
    directory, as Claude Code gives them."""
    parts = {"lead": _lead, "subagent": _subagent}.get(spec.role, _teammate)(spec)
    if definition.prompt:
        parts.append(definition.prompt)
    cwd = Path(spec.cwd)
    if spec.role != "subagent":
        parts.append(team_context(spec))
    parts += [memory_context(definition, cwd), skills_context(definition, cwd), claude_md_context(cwd)]
    return "\n\n".join(p for p in parts if p)
