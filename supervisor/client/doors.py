"""Where an operation of the table is not offered at a door, and why: the one list of them.

Every operation of :data:`supervisor.client.operations.TABLE` is offered at every door (the
command line, the Python ``Team``, the MCP lead side, HTTP) unless it is named here with the
reason. A test walks the table: an operation added without its doors, or named here while a
door offers it, fails it.
"""

from __future__ import annotations

DOORS = ("cli", "python", "mcp", "http")

_TASKS = (
    "Team.tasks is the task list itself (ipc.TaskList: create, get, list, claim, update, delete), "
    "with the same rules, and the same wake for a task that becomes claimable"
)

NOT_OFFERED: dict[str, dict[str, str]] = {
    "wait_for_messages": {
        "http": "the events stream (GET .../events) is the web's wait; a request held open for "
        "minutes is what the MCP endpoint at /mcp serves",
    },
    "read_inbox": {"python": "Team.inbox(name) is the mailbox itself: read(), unread(), mark_all_read()"},
    "task_create": {"python": _TASKS},
    "task_list": {"python": _TASKS},
    "task_get": {"python": _TASKS},
    "task_claim": {"python": _TASKS},
    "task_update": {"python": _TASKS},
    "task_delete": {"python": _TASKS},
    "ps": {
        "cli": "'agentteams ps' shows every team under the root, or one, and Claude Code's own "
        "sessions; a team's rows there are this operation's tree (ps.team_tree, ps.elsewhere)",
    },
}
